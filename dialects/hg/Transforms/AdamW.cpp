// hg-adamw: the optimizer executables (OptimizerExecutables.h) with
// torch.optim.AdamW's update of every parameter in place (decoupled weight
// decay; bias-corrected moments), the moments and step count as
// engine-owned state:
//   t += 1;  p *= 1 - lr wd
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Hyperparameters are inputs (f32 [1], torch's defaults but lr), so a
// schedule changes them without recompiling; what every parameter shares
// (the bias corrections, the decay factor) is computed once per step on
// [1] tensors, and each parameter is one hg.adamw_update, one pass over its
// gradient, moments and master. Moments are f32 whatever the parameter's
// dtype; with a master, the same op reads the bf16/f16 gradient and writes
// the working parameter (no casts around it).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OptimizerExecutables.h"
#include "dialects/hg/Transforms/Passes.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_ADAMW
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

class AdamWRule : public UpdateRule {
public:
  void begin(StepBuilder &s) override {
    Value lr = s.input("lr", 1e-3);
    beta1_ = s.input("beta1", 0.9);
    beta2_ = s.input("beta2", 0.999);
    eps_ = s.input("eps", 1e-8);
    Value decay = s.input("weight_decay", 0.01);
    OpBuilder &b = s.b();
    Location loc = s.loc();
    Value t = s.stepCount();
    Value unit = s.constant(1.0);
    Value bc1 = b.create<SubOp>(loc, unit, b.create<PowOp>(loc, beta1_, t));
    Value bc2 = b.create<SubOp>(loc, unit, b.create<PowOp>(loc, beta2_, t));
    stepSize_ = b.create<DivOp>(loc, lr, bc1);
    rootBc2_ = b.create<SqrtOp>(loc, bc2);
    decayFactor_ = b.create<SubOp>(loc, unit, b.create<MulOp>(loc, lr, decay));
  }

  /// One hg.adamw_update: the parameter and both moments in one pass.
  Value update(StepBuilder &s, Value p, Value g, StringRef name) override {
    return emit(s, p, g, name, TypeAttr()).getNextParam();
  }

  /// The same op reads a half-precision gradient and writes the working
  /// parameter too: no cast before or after it, each a pass of its own.
  std::pair<Value, Value> updateThroughMaster(StepBuilder &s, Value master,
                                              Value g, Type working,
                                              StringRef name) override {
    AdamWUpdateOp next =
        emit(s, master, g, name,
             TypeAttr::get(cast<RankedTensorType>(working).getElementType()));
    return {next.getNextParam(), next.getNextWorkingParam()};
  }

private:
  /// The update of `p` (f32) from `g`, its moments written back.
  AdamWUpdateOp emit(StepBuilder &s, Value p, Value g, StringRef name,
                     TypeAttr working) {
    std::string n = name.str();
    Value m = s.state("opt.exp_avg." + n, p.getType());
    Value v = s.state("opt.exp_avg_sq." + n, p.getType());
    auto next =
        s.b().create<AdamWUpdateOp>(s.loc(), p, g, m, v, beta1_, beta2_, eps_,
                                    stepSize_, rootBc2_, decayFactor_, working);
    s.writeBack("hg.state", "opt.exp_avg." + n, next.getNextExpAvg());
    s.writeBack("hg.state", "opt.exp_avg_sq." + n, next.getNextExpAvgSq());
    return next;
  }

  Value beta1_, beta2_, eps_, stepSize_, rootBc2_, decayFactor_;
};

struct AdamWPass : impl::AdamWBase<AdamWPass> {
  void runOnOperation() override {
    AdamWRule rule;
    if (failed(buildOptimizerExecutables(getOperation(), "hg-adamw", rule)))
      signalPassFailure();
  }
};

} // namespace
} // namespace hybridc::hg
