// hg-sgd: the optimizer executables (OptimizerExecutables.h) with
// torch.optim.SGD's update of every parameter in place:
//   d = g + wd p
//   b = d on the first step, else momentum b + (1 - dampening) d
//   p -= lr (nesterov ? d + momentum b : b)
// with momentum = 0 meaning plain SGD (p -= lr d), as in torch. The
// momentum buffers (f32) and the step count are engine-owned state; the
// hyperparameters are inputs (f32 [1], torch's defaults; nesterov 0 or 1).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OptimizerExecutables.h"
#include "dialects/hg/Transforms/Passes.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_SGD
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

class SgdRule : public UpdateRule {
public:
  void begin(StepBuilder &s) override {
    lr_ = s.input("lr", 1e-3);
    momentum_ = s.input("momentum", 0.0);
    Value dampening = s.input("dampening", 0.0);
    decay_ = s.input("weight_decay", 0.0);
    Value nesterov = s.input("nesterov", 0.0);
    OpBuilder &b = s.b();
    Location loc = s.loc();
    Value zero = s.constant(0.0), unit = s.constant(1.0);
    // torch starts the buffer as the first step's direction, and keeps
    // none without momentum (the direction is then d itself).
    Value first = b.create<EqualOp>(loc, s.stepCount(), unit);
    Value plain = b.create<EqualOp>(loc, momentum_, zero);
    restart_ = b.create<OrOp>(loc, first, plain);
    undamped_ = b.create<SubOp>(loc, unit, dampening);
    nesterov_ = b.create<GreaterOp>(loc, nesterov, zero);
  }

  Value update(StepBuilder &s, Value p, Value g, StringRef name) override {
    OpBuilder &b = s.b();
    Location loc = s.loc();
    std::string state = "opt.momentum_buffer." + name.str();
    Value buffer = s.state(state, p.getType());
    Value d = b.create<AddOp>(loc, g, b.create<MulOp>(loc, decay_, p));
    Value kept = b.create<MulOp>(loc, momentum_, buffer);
    Value added = b.create<MulOp>(loc, undamped_, d);
    Value next =
        b.create<SelectOp>(loc, restart_, d, b.create<AddOp>(loc, kept, added));
    s.writeBack("hg.state", state, next);
    Value ahead =
        b.create<AddOp>(loc, d, b.create<MulOp>(loc, momentum_, next));
    Value direction = b.create<SelectOp>(loc, nesterov_, ahead, next);
    return b.create<SubOp>(loc, p, b.create<MulOp>(loc, lr_, direction));
  }

private:
  Value lr_, momentum_, decay_, restart_, undamped_, nesterov_;
};

struct SgdPass : impl::SgdBase<SgdPass> {
  void runOnOperation() override {
    SgdRule rule;
    if (failed(buildOptimizerExecutables(getOperation(), "hg-sgd", rule)))
      signalPassFailure();
  }
};

} // namespace
} // namespace hybridc::hg
