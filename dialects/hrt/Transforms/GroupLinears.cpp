// hrt-group-linears: linears sharing an input as one hrt.linear_group
// (Passes.td).
#include "dialects/hrt/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

namespace hybridc::hrt {

#define GEN_PASS_DEF_GROUPLINEARS
#include "dialects/hrt/Transforms/Passes.h.inc"

namespace {

using namespace mlir;

/// Commands that may stand between two members of a group: enough for the
/// views and casts between a layer's projections, few enough that a
/// member's result does not live much longer than it did.
constexpr int kMaxCommandsBetween = 4;

/// One member of a group to be: a weight's feature range written to `out`.
struct Member {
  Value weight, bias, out;
  int64_t begin = 0, end = 0;
};

/// The output features of a linear's weight, when static.
std::optional<int64_t> staticFeatures(LinearOp linear) {
  ArrayRef<Attribute> shape =
      linear.getWeight().getType().getShape().getValue();
  if (shape.size() != 2)
    return std::nullopt;
  auto n = dyn_cast<IntegerAttr>(shape[linear.getTransposeWeight() ? 0 : 1]);
  auto k = dyn_cast<IntegerAttr>(shape[linear.getTransposeWeight() ? 1 : 0]);
  if (!n || !k)
    return std::nullopt;
  return n.getInt();
}

/// Whether a group can take `linear`: a static weight (a parameter, not a
/// product of the backward pass), no residual and no norm prologue (those
/// stay per linear).
bool groupable(LinearOp linear) {
  return staticFeatures(linear) && !linear.getResidual() &&
         linear.getNorm() == NormKind::None;
}

/// The output features of a groupable linear's weight.
int64_t featuresOf(LinearOp linear) { return *staticFeatures(linear); }

/// Whether `out` can be written where `at` stands: it is defined before
/// `at`, or by an hrt.alloc that can move up to it.
bool writableAt(Value out, Operation *at) {
  Operation *def = out.getDefiningOp();
  return def && (def->isBeforeInBlock(at) || isa<AllocOp>(def));
}

/// Replaces `first` by a group of `members` (in result order) at its place
/// and moves their results' allocations up to it.
void buildGroup(LinearOp first, ArrayRef<Member> members) {
  SmallVector<Value> outs, weights, biases;
  SmallVector<int64_t> begins, ends;
  for (const Member &m : members) {
    if (Operation *def = m.out.getDefiningOp(); !def->isBeforeInBlock(first))
      def->moveBefore(first);
    outs.push_back(m.out);
    weights.push_back(m.weight);
    if (m.bias)
      biases.push_back(m.bias);
    begins.push_back(m.begin);
    ends.push_back(m.end);
  }
  OpBuilder builder(first);
  builder.create<LinearGroupOp>(
      first.getLoc(), outs, first.getInput(), weights, biases,
      builder.getDenseI64ArrayAttr(begins), builder.getDenseI64ArrayAttr(ends),
      first.getTransposeWeightAttr(), first.getActivationAttr(),
      first.getStreamAttr());
}

/// An hrt.linear whose result only slices along the last axis read: one
/// member per slice, writing the slice's result. Returns whether it did.
bool groupSlices(LinearOp linear) {
  if (!groupable(linear))
    return false;
  Value full = linear.getOut();
  auto alloc = full.getDefiningOp<AllocOp>();
  if (!alloc)
    return false;
  const int64_t rank = linear.getOut().getType().getRank();
  const int64_t n = featuresOf(linear);
  SmallVector<SliceOp> slices;
  for (Operation *user : full.getUsers()) {
    if (user == linear)
      continue;
    auto slice = dyn_cast<SliceOp>(user);
    if (!slice || !linear->isBeforeInBlock(slice) || slice.getInput() != full ||
        slice.getOut() == full || slice.getStream() != linear.getStream() ||
        slice.getAxes().size() != 1 || slice.getStarts().size() != 1 ||
        slice.getEnds().size() != 1 || slice.getSteps().size() > 1 ||
        (slice.getAxes()[0] != rank - 1 && slice.getAxes()[0] != -1) ||
        (!slice.getSteps().empty() && slice.getSteps()[0] != 1) ||
        slice.getStarts()[0] < 0 ||
        slice.getStarts()[0] >= slice.getEnds()[0] || slice.getEnds()[0] > n ||
        !isa_and_nonnull<AllocOp>(slice.getOut().getDefiningOp()))
      return false;
    slices.push_back(slice);
  }
  if (slices.empty())
    return false;
  llvm::sort(slices, [](SliceOp a, SliceOp b) {
    return a.getStarts()[0] < b.getStarts()[0];
  });
  for (size_t i = 1; i < slices.size(); ++i)
    if (slices[i - 1].getEnds()[0] > slices[i].getStarts()[0])
      return false;
  // A slice's result is written at the linear now: nothing between may
  // touch it.
  for (SliceOp slice : slices) {
    Value root = getRootBuffer(slice.getOut());
    for (Operation *op = linear->getNextNode(); op != slice;
         op = op->getNextNode())
      if (auto cmd = dyn_cast<CommandOp>(op); cmd && touchesRoot(cmd, root))
        return false;
  }
  SmallVector<Member> members;
  for (SliceOp slice : slices)
    members.push_back({linear.getWeight(), linear.getBias(), slice.getOut(),
                       slice.getStarts()[0], slice.getEnds()[0]});
  buildGroup(linear, members);
  for (SliceOp slice : slices)
    slice.erase();
  linear.erase();
  alloc.erase();
  return true;
}

/// Whether `candidate` can join a group that `first` starts: the same
/// input, stream and epilogue.
bool sameGroup(LinearOp first, LinearOp candidate) {
  return groupable(candidate) && candidate.getInput() == first.getInput() &&
         candidate.getStream() == first.getStream() &&
         candidate.getTransposeWeight() == first.getTransposeWeight() &&
         candidate.getActivation() == first.getActivation() &&
         !candidate.getBias() == !first.getBias();
}

/// Whether `candidate`'s work can move up to `first`: what it reads is
/// defined there and nothing between changes it; nothing between touches
/// its result, which differs from the members' so far.
bool movable(LinearOp first, LinearOp candidate, ArrayRef<Member> members) {
  Value out = candidate.getOut(), root = getRootBuffer(out);
  for (Value v : {candidate.getWeight(), candidate.getBias()})
    if (v && !v.getDefiningOp()->isBeforeInBlock(first))
      return false;
  if (!writableAt(out, first) || root == getRootBuffer(first.getInput()) ||
      llvm::any_of(members, [&](const Member &m) {
        return getRootBuffer(m.out) == root;
      }))
    return false;
  for (Operation *op = first->getNextNode(); op != candidate;
       op = op->getNextNode()) {
    auto cmd = dyn_cast<CommandOp>(op);
    if (!cmd)
      continue;
    if (touchesRoot(cmd, root))
      return false;
    for (Value v : {candidate.getWeight(), candidate.getBias()})
      if (v && writesRoot(cmd, getRootBuffer(v)))
        return false;
  }
  return true;
}

/// The linears after `first` that join it, with `first` as member 0; stops
/// at a write of the input or after kMaxCommandsBetween other commands.
SmallVector<LinearOp> gatherShared(LinearOp first) {
  SmallVector<LinearOp> group{first};
  SmallVector<Member> members{{first.getWeight(), first.getBias(),
                               first.getOut(), 0, featuresOf(first)}};
  Value input = getRootBuffer(first.getInput());
  int between = 0;
  for (Operation *op = first->getNextNode();
       op && between <= kMaxCommandsBetween; op = op->getNextNode()) {
    auto cmd = dyn_cast<CommandOp>(op);
    if (!cmd)
      continue;
    auto candidate = dyn_cast<LinearOp>(op);
    if (candidate && sameGroup(first, candidate) &&
        movable(first, candidate, members)) {
      group.push_back(candidate);
      members.push_back({candidate.getWeight(), candidate.getBias(),
                         candidate.getOut(), 0, featuresOf(candidate)});
      continue;
    }
    if (writesRoot(cmd, input))
      break;
    ++between;
  }
  return group;
}

class GroupLinearsPass : public impl::GroupLinearsBase<GroupLinearsPass> {
public:
  void runOnOperation() override {
    ExecutableOp exe = getOperation();
    if (exe.getWorkspace())
      return; // planned: moving a write could break slot reuse
    for (LinearOp linear : llvm::to_vector(exe.getBlock().getOps<LinearOp>()))
      groupSlices(linear);
    // Linears absorbed into a group are erased: walk a worklist.
    SmallVector<LinearOp> linears =
        llvm::to_vector(exe.getBlock().getOps<LinearOp>());
    llvm::SmallPtrSet<Operation *, 16> grouped;
    for (LinearOp first : linears) {
      if (grouped.contains(first) || !groupable(first))
        continue;
      SmallVector<LinearOp> group = gatherShared(first);
      if (group.size() < 2)
        continue;
      SmallVector<Member> members;
      for (LinearOp l : group) {
        members.push_back(
            {l.getWeight(), l.getBias(), l.getOut(), 0, featuresOf(l)});
        grouped.insert(l);
      }
      buildGroup(first, members);
      for (LinearOp l : group)
        l.erase();
    }
  }
};

} // namespace
} // namespace hybridc::hrt
