// hg-ppo-losses: the PPO losses of DeepSpeed-Chat's step 3 as functions of
// the model, beside @forward_loss, each marked `hg.loss` with the name of
// the accumulation executable the optimizer pass builds from its gradient
// (`hg.accumulate`):
//   @ppo_actor_loss (from @logprobs): the clipped surrogate of the policy's
//   per-token log-probabilities against the experience's old ones, masked
//   mean over the actions -> @ppo_actor_forward_backward.
// The experience tensors are inputs of the log-probabilities' shape
// [batch, seq - 1] (position t scores token t + 1), the prompt's positions
// masked out, so no prompt length is compiled in.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_PPOLOSSES
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// A copy of `source` named `name` whose one result is replaced by what
/// `build` makes from it (a scalar loss [1], named "loss").
class LossFunction {
public:
  LossFunction(func::FuncOp source, StringRef name, StringRef accumulate)
      : b_(source.getContext()) {
    b_.setInsertionPointAfter(source);
    f_ = cast<func::FuncOp>(b_.clone(*source));
    f_.setSymName(name);
    f_->setAttr("hg.loss", b_.getUnitAttr());
    f_->setAttr("hg.accumulate", b_.getStringAttr(accumulate));
    ret_ = cast<func::ReturnOp>(f_.getBody().front().getTerminator());
    b_.setInsertionPoint(ret_);
  }

  OpBuilder &b() { return b_; }
  Location loc() { return ret_.getLoc(); }
  Value result(unsigned i) { return ret_.getOperand(i); }

  /// A new f32 input named `name` of `like`'s type and symbolic shape.
  FailureOr<Value> inputLike(Value like, StringRef name) {
    ValueShapes shapes(f_);
    std::optional<hybrid::SymShape> shape = shapes.get(like);
    if (!shape)
      return f_.emitError() << "hg-ppo-losses: the shape of @" << f_.getName()
                            << "'s result is not known symbolically";
    auto type = cast<RankedTensorType>(like.getType()).clone(b_.getF32Type());
    unsigned index = f_.getNumArguments();
    f_.insertArgument(
        index, type,
        b_.getDictionaryAttr(
            {b_.getNamedAttr("hg.name", b_.getStringAttr(name)),
             b_.getNamedAttr("hg.dims",
                             shapes.shapeAttr(f_.getContext(), *shape))}),
        like.getLoc());
    return f_.getArgument(index);
  }

  /// sum(perToken) / sum(mask) as [1]: DeepSpeed-Chat's masked mean.
  Value maskedMean(Value perToken, Value mask) {
    Value total =
        b_.create<ReduceSumOp>(loc(), perToken, ArrayRef<int64_t>{}, false);
    Value count =
        b_.create<ReduceSumOp>(loc(), mask, ArrayRef<int64_t>{}, false);
    Value mean = b_.create<DivOp>(loc(), total, count);
    return b_.create<ReshapeOp>(loc(), mean,
                                b_.getArrayAttr({b_.getI64IntegerAttr(1)}));
  }

  /// Makes `loss` the function's one result, named "loss".
  void finish(Value loss) {
    b_.create<func::ReturnOp>(loc(), loss);
    ret_.erase();
    f_.setFunctionType(FunctionType::get(
        f_.getContext(), f_.getArgumentTypes(), {loss.getType()}));
    f_.setAllResultAttrs(ArrayRef<DictionaryAttr>{b_.getDictionaryAttr(
        b_.getNamedAttr("hg.name", b_.getStringAttr("loss")))});
  }

private:
  OpBuilder b_;
  func::FuncOp f_;
  func::ReturnOp ret_;
};

struct PpoLossesPass : impl::PpoLossesBase<PpoLossesPass> {
  using PpoLossesBase::PpoLossesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto logprobs = module.lookupSymbol<func::FuncOp>("logprobs");
    if (!logprobs) {
      module.emitError() << "hg-ppo-losses: no function @logprobs (run "
                            "hg-causal-lm-loss first)";
      return signalPassFailure();
    }
    if (module.lookupSymbol("ppo_actor_loss")) {
      module.emitError() << "hg-ppo-losses: @ppo_actor_loss exists already";
      return signalPassFailure();
    }
    if (clipLow < 0 || clipLow >= 1 || clipHigh < 0) {
      module.emitError() << "hg-ppo-losses: the clip range must be in [0, 1) "
                            "below and non-negative above, got "
                         << clipLow.getValue() << " and "
                         << clipHigh.getValue();
      return signalPassFailure();
    }
    // loss = masked mean of max(-A r, -A clamp(r, 1 - low, 1 + high)),
    // r = exp((logprobs - old_logprobs) mask).
    LossFunction actor(logprobs, "ppo_actor_loss", "ppo_actor_forward_backward");
    Value lp = actor.result(0);
    FailureOr<Value> old = actor.inputLike(lp, "old_logprobs");
    FailureOr<Value> advantages = actor.inputLike(lp, "advantages");
    FailureOr<Value> mask = actor.inputLike(lp, "action_mask");
    if (failed(old) || failed(advantages) || failed(mask))
      return signalPassFailure();
    OpBuilder &b = actor.b();
    Value perToken = b.create<ClippedSurrogateOp>(
        actor.loc(), lp.getType(), lp, *old, *advantages, *mask,
        b.getF64FloatAttr(clipLow), b.getF64FloatAttr(clipHigh));
    actor.finish(actor.maskedMean(perToken, *mask));
  }
};

} // namespace
} // namespace hybridc::hg
