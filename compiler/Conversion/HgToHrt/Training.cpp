// hg -> hrt: the training step's own ops (the loss's label log-probs and
// their gradient, the fused AdamW update).
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {
namespace {

/// One command; the moments (and a master) are usually the state buffers
/// themselves (written in place), the working parameter a buffer of its
/// own, as a cast's result would be.
LogicalResult lowerAdamWUpdate(hg::AdamWUpdateOp op,
                               ExecutableLowering &lowering) {
  Value param = lowering.resultBuffer(op.getNextParam());
  Value expAvg = lowering.resultBuffer(op.getNextExpAvg());
  Value expAvgSq = lowering.resultBuffer(op.getNextExpAvgSq());
  Value working;
  if (Value next = op.getNextWorkingParam())
    working = lowering.resultBuffer(next);
  auto in = [&](Value v) { return lowering.buffer(v); };
  lowering.builder().create<hrt::AdamWUpdateOp>(
      op.getLoc(), param, expAvg, expAvgSq, working, in(op.getParam()),
      in(op.getGrad()), in(op.getExpAvg()), in(op.getExpAvgSq()),
      in(op.getBeta1()), in(op.getBeta2()), in(op.getEps()),
      in(op.getStepSize()), in(op.getBiasCorrection2Sqrt()),
      in(op.getDecayFactor()));
  return success();
}

/// The kernel reads each element's old value before it writes the new: a
/// result may take the buffer of the operand holding its old value, when
/// that value is no other operand.
bool adamWUpdateWritesOver(hg::AdamWUpdateOp op, Value input, Value result) {
  std::pair<Value, OpOperand *> olds[] = {
      {op.getNextParam(), &op.getParamMutable()},
      {op.getNextExpAvg(), &op.getExpAvgMutable()},
      {op.getNextExpAvgSq(), &op.getExpAvgSqMutable()}};
  return writesOverOldValue(op, input, result, olds);
}

} // namespace

void populateTrainingPatterns(HgToHrtPatterns &patterns) {
  patterns.add<hg::LabelLogProbsOp>(
      [](hg::LabelLogProbsOp op, ExecutableLowering &lowering) {
        Value logits = lowering.buffer(op.getLogits()),
              labels = lowering.buffer(op.getLabels());
        return lowering.command<hrt::LabelLogProbsOp>(op, logits, labels);
      });
  patterns.add<hg::LabelLogProbsGradOp>([](hg::LabelLogProbsGradOp op,
                                           ExecutableLowering &lowering) {
    Value logits = lowering.buffer(op.getLogits()),
          labels = lowering.buffer(op.getLabels()),
          g = lowering.buffer(op.getGrad());
    return lowering.command<hrt::LabelLogProbsGradOp>(op, logits, labels, g);
  });
  patterns.add<hg::AdamWUpdateOp>(lowerAdamWUpdate, adamWUpdateWritesOver);
}

} // namespace hybridc
