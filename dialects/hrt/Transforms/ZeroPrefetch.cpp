// hrt-zero-prefetch: all_gathers of sharded parameters issued ahead of
// their use on a second stream, within a bucket of elements (see
// Passes.td).
#include "dialects/hrt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace hybridc::hrt {

#define GEN_PASS_DEF_ZEROPREFETCH
#include "dialects/hrt/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// The stream prefetched gathers run on.
constexpr int32_t kPrefetchStream = 1;

/// An all_gather of a parameter shard, by command index.
struct ParamGather {
  CollectiveOp op;
  int position; ///< where partitioning put it (right before its use)
  int use;      ///< the first command that reads what it gathered
  int earliest; ///< the first index after the last write of the shard
  int64_t elements;
  int issue = 0; ///< where it goes
};

/// An all_gather of a sharded parameter.
bool isParamGather(Operation *op) {
  auto gather = dyn_cast<CollectiveOp>(op);
  if (!gather || gather.getKind() != CollectiveKind::AllGather)
    return false;
  auto param = getRootBuffer(gather.getInput()).getDefiningOp<ParamOp>();
  return param && param.getShard();
}

/// The parameter gathers of `commands` that are on stream 0, with their
/// first use.
SmallVector<ParamGather> findParamGathers(ArrayRef<Operation *> commands) {
  SmallVector<ParamGather> gathers;
  for (auto [i, op] : llvm::enumerate(commands)) {
    if (!isParamGather(op) || cast<CollectiveOp>(op).getStream() != 0)
      continue;
    auto gather = cast<CollectiveOp>(op);
    auto param = getRootBuffer(gather.getInput()).getDefiningOp<ParamOp>();
    ParamGather g{gather, static_cast<int>(i), -1, 0,
                  param.getShard()->getNumElements()};
    Value out = getRootBuffer(gather.getOut());
    for (size_t j = i + 1; j < commands.size() && g.use < 0; ++j)
      if (readsRoot(cast<CommandOp>(commands[j]), out))
        g.use = static_cast<int>(j);
    for (size_t j = 0; j < i; ++j)
      if (writesRoot(cast<CommandOp>(commands[j]), param.getResult()))
        g.earliest = static_cast<int>(j) + 1;
    if (g.use >= 0)
      gathers.push_back(g);
  }
  return gathers;
}

/// Issue points, in order of the gathers: each as early as the gathers
/// issued before it and not yet used, plus itself, fit in `bucket`
/// elements.
void scheduleIssues(MutableArrayRef<ParamGather> gathers, int64_t bucket) {
  int previous = 0;
  for (size_t k = 0; k < gathers.size(); ++k) {
    ParamGather &g = gathers[k];
    auto inFlight = [&](int at) {
      int64_t n = 0;
      for (size_t j = 0; j < k; ++j)
        if (gathers[j].issue <= at && gathers[j].use >= at)
          n += gathers[j].elements;
      return n;
    };
    // In-flight elements only drop right after a use.
    SmallVector<int> points = {std::max(previous, g.earliest)};
    for (size_t j = 0; j < k; ++j)
      if (gathers[j].use + 1 > points.front())
        points.push_back(gathers[j].use + 1);
    llvm::sort(points);
    g.issue = g.position;
    for (int at : points)
      if (at < g.position && inFlight(at) + g.elements <= bucket) {
        g.issue = at;
        break;
      }
    // The next one goes after this one, wherever this one is.
    previous = g.issue < g.position ? g.issue : g.position + 1;
  }
}

class ZeroPrefetchPass : public impl::ZeroPrefetchBase<ZeroPrefetchPass> {
public:
  using ZeroPrefetchBase::ZeroPrefetchBase;

  void runOnOperation() override {
    ExecutableOp exe = getOperation();
    if (bucketSize < 0) {
      exe.emitError() << "hrt-zero-prefetch: bucket-size must be >= 0, got "
                      << static_cast<int64_t>(bucketSize);
      return signalPassFailure();
    }
    SmallVector<Operation *> commands;
    int32_t firstEvent = 0;
    for (Operation &op : exe.getBlock()) {
      if (!isa<CommandOp>(op))
        continue;
      commands.push_back(&op);
      if (auto r = dyn_cast<RecordEventOp>(op))
        firstEvent =
            std::max(firstEvent, static_cast<int32_t>(r.getEvent()) + 1);
      if (auto w = dyn_cast<WaitEventOp>(op))
        firstEvent =
            std::max(firstEvent, static_cast<int32_t>(w.getEvent()) + 1);
    }
    SmallVector<ParamGather> gathers = findParamGathers(commands);
    scheduleIssues(gathers, bucketSize);

    OpBuilder b(exe.getContext());
    SmallVector<std::pair<RecordEventOp, WaitEventOp>> events;
    auto signal = [&](Operation *before, int32_t from, Operation *waiter,
                      int32_t to) {
      b.setInsertionPoint(before);
      auto record = b.create<RecordEventOp>(before->getLoc(), 0, from);
      b.setInsertionPoint(waiter);
      auto wait = b.create<WaitEventOp>(waiter->getLoc(), 0, to);
      events.push_back({record, wait});
    };
    llvm::SmallPtrSet<Operation *, 8> moved;
    for (ParamGather &g : gathers) {
      if (g.issue >= g.position)
        continue;
      // Before command `issue`, or the first one after it still in place.
      int anchor = g.issue;
      while (moved.count(commands[anchor]))
        ++anchor;
      Operation *at = commands[anchor];
      if (auto alloc = g.op.getOut().getDefiningOp<AllocOp>();
          alloc && !alloc->isBeforeInBlock(at))
        alloc->moveBefore(at);
      g.op->moveBefore(at);
      g.op.setStream(kPrefetchStream);
      moved.insert(g.op);
      // Stream 1 starts after what stream 0 did before this point: the
      // gathered buffer may reuse the workspace of a buffer used there.
      // The fork of the executable's streams orders it after the caller's
      // work, and gathers before it hold buffers that are still live.
      bool afterCommands =
          llvm::any_of(ArrayRef<Operation *>(commands).take_front(g.issue),
                       [&](Operation *op) { return !isParamGather(op); });
      if (afterCommands)
        signal(g.op, 0, g.op, kPrefetchStream);
      signal(g.op->getNextNode(), kPrefetchStream, commands[g.use], 0);
    }
    numberEvents(exe, events, firstEvent);
  }

private:
  /// Event ids in program order: an id is free again once its wait is
  /// enqueued (a wait waits for the latest record before it).
  static void
  numberEvents(ExecutableOp exe,
               ArrayRef<std::pair<RecordEventOp, WaitEventOp>> events,
               int32_t firstEvent) {
    llvm::DenseMap<Operation *, size_t> recordOf, waitOf;
    for (auto [i, e] : llvm::enumerate(events)) {
      recordOf[e.first] = i;
      waitOf[e.second] = i;
    }
    SmallVector<int32_t> ids(events.size()), free;
    int32_t next = firstEvent;
    for (Operation &op : exe.getBlock()) {
      if (auto it = recordOf.find(&op); it != recordOf.end()) {
        int32_t id = free.empty() ? next++ : free.pop_back_val();
        ids[it->second] = id;
        cast<RecordEventOp>(op).setEvent(id);
      } else if (auto it = waitOf.find(&op); it != waitOf.end()) {
        cast<WaitEventOp>(op).setEvent(ids[it->second]);
        free.push_back(ids[it->second]);
      }
    }
  }
};

} // namespace
} // namespace hybridc::hrt
