// hg -> hrt: layer and RMS normalisation, and the layer norm's gradient.
#include "compiler/Conversion/HgToHrt/ExecutableLowering.h"
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc {

void populateNormPatterns(HgToHrtPatterns &patterns) {
  patterns.add<hg::LayerNormOp>([](hg::LayerNormOp op,
                                   ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput()),
          w = lowering.buffer(op.getWeight()),
          bias = lowering.buffer(op.getBias());
    return lowering.command<hrt::LayerNormOp>(
        op, x, w, bias, op.getEpsilon(), static_cast<int64_t>(op.getAxis()));
  });
  patterns.add<hg::RmsNormOp>([](hg::RmsNormOp op,
                                 ExecutableLowering &lowering) {
    Value x = lowering.buffer(op.getInput()),
          w = lowering.buffer(op.getWeight());
    return lowering.command<hrt::RmsNormOp>(op, x, w, op.getEpsilon(),
                                            static_cast<int64_t>(op.getAxis()));
  });
  patterns.add<hg::LayerNormGradOp>(
      [](hg::LayerNormGradOp grad, ExecutableLowering &lowering) {
        lowering.builder().create<hrt::LayerNormGradOp>(
            grad.getLoc(), lowering.resultBuffer(grad.getGradInput()),
            lowering.resultBuffer(grad.getGradWeight()),
            lowering.resultBuffer(grad.getGradBias()),
            lowering.buffer(grad.getInput()), lowering.buffer(grad.getWeight()),
            lowering.buffer(grad.getGradOut()), grad.getEpsilon(),
            static_cast<int64_t>(grad.getAxis()));
        return success();
      });
}

} // namespace hybridc
