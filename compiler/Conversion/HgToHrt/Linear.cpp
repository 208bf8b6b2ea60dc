// hg -> hrt: matrix products (matmul; linear with its bias, residual,
// activation and norm prologue) and the activation's gradient.
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {

void populateLinearPatterns(HgToHrtPatterns &patterns) {
  patterns.add<hg::MatMulOp>([](hg::MatMulOp op, ExecutableLowering &lowering) {
    Value l = lowering.buffer(op.getLhs()), r = lowering.buffer(op.getRhs());
    return lowering.command<hrt::MatMulOp>(op, l, r);
  });
  patterns.add<hg::LinearOp>([](hg::LinearOp op, ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput()),
          w = lowering.buffer(op.getWeight()),
          bias = lowering.buffer(op.getBias()),
          residual = lowering.buffer(op.getResidual()),
          normWeight = lowering.buffer(op.getNormWeight()),
          normBias = lowering.buffer(op.getNormBias());
    std::optional<hrt::Activation> act =
        hrt::symbolizeActivation(op.getActivation());
    if (!act)
      return LogicalResult(op.emitError() << "unknown activation '"
                                          << op.getActivation() << "'");
    std::optional<hrt::NormKind> norm = hrt::symbolizeNormKind(op.getNorm());
    if (!norm)
      return LogicalResult(op.emitError()
                           << "unknown norm '" << op.getNorm() << "'");
    return lowering.command<hrt::LinearOp>(op, x, w, bias, residual, normWeight,
                                           normBias, op.getTransposeWeight(),
                                           *act, *norm, op.getNormEpsilon());
  });
  patterns.add<hg::ActivationGradOp>(
      [](hg::ActivationGradOp op, ExecutableLowering &lowering) {
        // The hg verifier admits only the activations that have one.
        std::optional<hrt::Activation> act =
            hrt::symbolizeActivation(op.getActivation());
        if (!act || *act == hrt::Activation::None)
          return LogicalResult(op.emitError() << "unknown activation '"
                                              << op.getActivation() << "'");
        return lowering.command<hrt::ActivationGradOp>(
            op, lowering.buffer(op.getInput()),
            lowering.buffer(op.getGradOut()), *act);
      });
}

} // namespace hybridc
