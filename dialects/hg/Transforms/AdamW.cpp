// hg-adamw: the optimizer executables (OptimizerExecutables.h) with
// torch.optim.AdamW's update of every parameter in place (decoupled weight
// decay; bias-corrected moments), the moments and step count as
// engine-owned state:
//   t += 1;  p *= 1 - lr wd
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Hyperparameters are inputs (f32 [1], torch's defaults but lr), so a
// schedule changes them without recompiling. Moments are f32 whatever the
// parameter's dtype.
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
    lr_ = s.input("lr", 1e-3);
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
    stepSize_ = b.create<DivOp>(loc, lr_, bc1);
    rootBc2_ = b.create<SqrtOp>(loc, bc2);
    keep_ = b.create<SubOp>(loc, unit, b.create<MulOp>(loc, lr_, decay));
    oneMinusB1_ = b.create<SubOp>(loc, unit, beta1_);
    oneMinusB2_ = b.create<SubOp>(loc, unit, beta2_);
  }

  Value update(StepBuilder &s, Value p, Value g, StringRef name) override {
    OpBuilder &b = s.b();
    Location loc = s.loc();
    std::string n = name.str();
    Value m = s.state("opt.exp_avg." + n, p.getType());
    Value v = s.state("opt.exp_avg_sq." + n, p.getType());
    Value m2 = b.create<AddOp>(loc, b.create<MulOp>(loc, beta1_, m),
                               b.create<MulOp>(loc, oneMinusB1_, g));
    Value v2 = b.create<AddOp>(
        loc, b.create<MulOp>(loc, beta2_, v),
        b.create<MulOp>(loc, oneMinusB2_, b.create<MulOp>(loc, g, g)));
    Value denom = b.create<AddOp>(
        loc, b.create<DivOp>(loc, b.create<SqrtOp>(loc, v2), rootBc2_), eps_);
    s.writeBack("hg.state", "opt.exp_avg." + n, m2);
    s.writeBack("hg.state", "opt.exp_avg_sq." + n, v2);
    Value decayed = b.create<MulOp>(loc, p, keep_);
    return b.create<SubOp>(
        loc, decayed,
        b.create<MulOp>(loc, stepSize_, b.create<DivOp>(loc, m2, denom)));
  }

private:
  Value lr_, beta1_, beta2_, eps_, stepSize_, rootBc2_, keep_, oneMinusB1_,
      oneMinusB2_;
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
