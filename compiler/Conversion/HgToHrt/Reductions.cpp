// hg -> hrt: ops that combine elements along axes (the reductions by kind,
// the cumulative sum, softmax and log-softmax).
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;
using hybridc::hrt::ReduceKind;

namespace hybridc {
namespace {

/// hrt.reduce of `kind`; the hg reductions share their attributes.
auto reduce(ReduceKind kind) {
  return [kind](Operation *op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op->getOperand(0));
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes");
    bool keepdims = true; // hg's ODS default
    if (auto k = op->getAttrOfType<BoolAttr>("keepdims"))
      keepdims = k.getValue();
    return lowering.command<hrt::ReduceOp>(op, x, kind, axes.asArrayRef(),
                                           keepdims);
  };
}

/// hrt.softmax over the op's axis, of the logarithm when `log`.
template <typename SoftmaxOp> auto softmax(bool log) {
  return [log](SoftmaxOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput());
    return lowering.command<hrt::SoftmaxOp>(
        op, x, static_cast<int64_t>(op.getAxis()), log);
  };
}

} // namespace

void populateReductionPatterns(HgToHrtPatterns &patterns) {
  patterns.add<hg::ReduceSumOp>(reduce(ReduceKind::Sum));
  patterns.add<hg::ReduceMeanOp>(reduce(ReduceKind::Mean));
  patterns.add<hg::ReduceMaxOp>(reduce(ReduceKind::Max));
  patterns.add<hg::ReduceMinOp>(reduce(ReduceKind::Min));
  patterns.add<hg::ReduceProdOp>(reduce(ReduceKind::Prod));
  patterns.add<hg::CumSumOp>([](hg::CumSumOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput());
    return lowering.command<hrt::CumSumOp>(op, x,
                                           static_cast<int64_t>(op.getAxis()),
                                           op.getExclusive(), op.getReverse());
  });
  patterns.add<hg::SoftmaxOp>(softmax<hg::SoftmaxOp>(/*log=*/false));
  patterns.add<hg::LogSoftmaxOp>(softmax<hg::LogSoftmaxOp>(/*log=*/true));
}

} // namespace hybridc
