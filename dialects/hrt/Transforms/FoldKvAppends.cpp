// hrt-fold-kv-appends: a step's two KV cache writes folded into the
// attention that reads the caches (see Passes.td).
#include "dialects/hrt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace hybridc::hrt {

#define GEN_PASS_DEF_FOLDKVAPPENDS
#include "dialects/hrt/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// The cache write into `cache` (the very buffer, not a view) along axis 2
/// of a rank-4 cache that `attention` can take over: the closest one before
/// it, with nothing in between touching the cache or writing what the
/// write reads. Commands between may be `skip` (the other write).
CacheWriteOp foldableWrite(AttentionOp attention, Value cache,
                           Operation *skip) {
  auto type = cast<BufferType>(cache.getType());
  if (type.getRank() != 4)
    return nullptr;
  for (Operation *op = attention->getPrevNode(); op; op = op->getPrevNode()) {
    auto cmd = dyn_cast<CommandOp>(op);
    if (!cmd || op == skip)
      continue;
    auto write = dyn_cast<CacheWriteOp>(op);
    if (write && write.getOut() == cache) {
      auto update = cast<BufferType>(write.getUpdate().getType());
      if (write.getAxis() != 2 || update.getRank() != 4 ||
          update.getElementType() != type.getElementType() ||
          llvm::any_of(std::initializer_list<int>{0, 1, 3}, [&](int d) {
            return update.getShape()[d] != type.getShape()[d];
          }))
        return nullptr;
      // What the write reads must still hold the same when the attention
      // runs.
      for (Operation *between = op->getNextNode(); between != attention;
           between = between->getNextNode()) {
        auto later = dyn_cast<CommandOp>(between);
        if (later && between != skip &&
            (writesRoot(later, getRootBuffer(write.getUpdate())) ||
             writesRoot(later, getRootBuffer(write.getOffset()))))
          return nullptr;
      }
      return write;
    }
    if (touchesRoot(cmd, getRootBuffer(cache)))
      return nullptr;
  }
  return nullptr;
}

struct FoldKvAppendsPass : impl::FoldKvAppendsBase<FoldKvAppendsPass> {
  void runOnOperation() override {
    SmallVector<AttentionOp> attentions;
    getOperation().walk([&](AttentionOp op) {
      if (!op.getAppendKey() && op.getKey() != op.getValue())
        attentions.push_back(op);
    });
    for (AttentionOp attention : attentions) {
      CacheWriteOp keys = foldableWrite(attention, attention.getKey(), nullptr);
      if (!keys)
        continue;
      CacheWriteOp values =
          foldableWrite(attention, attention.getValue(), keys);
      if (!values || values.getOffset() != keys.getOffset() ||
          values.getStream() != attention.getStream() ||
          keys.getStream() != attention.getStream())
        continue;
      // The key write is between the value write and the attention, or the
      // other way round: each was checked with the other skipped, and
      // neither touches the other's cache or (being a cache write) writes
      // an update or offset, unless they alias, which the check of the
      // second against the first's cache excluded.
      attention.getAppendKeyMutable().assign(keys.getUpdate());
      attention.getAppendValueMutable().assign(values.getUpdate());
      attention.getAppendAtMutable().assign(keys.getOffset());
      keys->erase();
      values->erase();
    }
  }
};

} // namespace

} // namespace hybridc::hrt
