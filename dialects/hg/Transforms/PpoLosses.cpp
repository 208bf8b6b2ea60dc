// hg-ppo-losses: the PPO losses of DeepSpeed-Chat's step 3 as functions of
// the model, beside @forward_loss, each marked `hg.loss` with the name of
// the accumulation executable the optimizer pass builds from its gradient
// (`hg.accumulate`):
//   @ppo_actor_loss (a language model, from @logprobs): the clipped
//   surrogate of the policy's per-token log-probabilities against the
//   experience's old ones, masked mean over the actions
//   -> @ppo_actor_forward_backward;
//   @critic_loss (a value model, @forward returning `values`): the clipped
//   value loss of values[:, :-1], times 0.5, masked mean
//   -> @critic_forward_backward;
//   @grpo_loss (a language model, with grpo): GRPO's per-token clipped
//   surrogate plus kl-beta x k3 KL to the reference, averaged per sequence
//   or per token -> @grpo_forward_backward, and @grpo_advantages;
// and, beside a value model's, @ppo_experience: compute_rewards (the KL
// penalty, the clipped score at each answer's end) and GAE, DeepSpeed-Chat's
// experience maths, from the four models' outputs.
// The losses' experience tensors are inputs of the per-token shape [batch,
// seq - 1] (position t scores token t + 1), the prompt's positions masked
// out (advantages and returns zero there), so the losses compile in no
// prompt length; the experience maths' GAE starts at the prompt's end.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/FunctionPorts.h"
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

  /// hg.masked_mean as [1]: DeepSpeed-Chat's sum(perToken mask) /
  /// sum(mask), or per sequence (GRPO) the mean of each row's.
  Value maskedMean(Value perToken, Value mask, bool perSequence = false) {
    Value mean = b_.create<MaskedMeanOp>(
        loc(), TypeRange{RankedTensorType::get({}, b_.getF32Type())},
        ValueRange{perToken, mask},
        ArrayRef<NamedAttribute>{
            b_.getNamedAttr("per_sequence", b_.getBoolAttr(perSequence))});
    return b_.create<ReshapeOp>(loc(), mean,
                                b_.getArrayAttr({b_.getI64IntegerAttr(1)}));
  }

  /// Makes `loss` the function's one result, named "loss".
  void finish(Value loss) {
    b_.create<func::ReturnOp>(loc(), loss);
    ret_.erase();
    f_.setFunctionType(FunctionType::get(f_.getContext(), f_.getArgumentTypes(),
                                         {loss.getType()}));
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
    if (clipLow < 0 || clipLow >= 1 || clipHigh < 0 || cliprangeValue < 0) {
      module.emitError() << "hg-ppo-losses: the clip range must be in [0, 1) "
                            "below and non-negative above, the value clip "
                            "non-negative; got "
                         << clipLow.getValue() << ", " << clipHigh.getValue()
                         << " and " << cliprangeValue.getValue();
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    auto logprobs = module.lookupSymbol<func::FuncOp>("logprobs");
    std::optional<unsigned> values =
        forward ? namedResult(forward, "values") : std::nullopt;
    for (StringRef name : {"ppo_actor_loss", "critic_loss", "ppo_experience",
                           "grpo_loss", "grpo_advantages"})
      if (module.lookupSymbol(name)) {
        module.emitError() << "hg-ppo-losses: @" << name << " exists already";
        return signalPassFailure();
      }
    if (logprobs) {
      if (failed(addActorLoss(logprobs)) ||
          (grpo && failed(addGrpo(module, logprobs))))
        return signalPassFailure();
    } else if (values) {
      if (failed(addCriticLoss(forward, *values)) ||
          failed(addExperience(module)))
        return signalPassFailure();
    } else {
      module.emitError() << "hg-ppo-losses: neither a language model's "
                            "@logprobs (run hg-causal-lm-loss first) nor a "
                            "value model's @forward returning values";
      return signalPassFailure();
    }
  }

  LogicalResult addActorLoss(func::FuncOp logprobs) {
    // loss = masked mean of max(-A r, -A clamp(r, 1 - low, 1 + high)),
    // r = exp((logprobs - old_logprobs) mask).
    LossFunction actor(logprobs, "ppo_actor_loss",
                       "ppo_actor_forward_backward");
    Value lp = actor.result(0);
    FailureOr<Value> old = actor.inputLike(lp, "old_logprobs");
    FailureOr<Value> advantages = actor.inputLike(lp, "advantages");
    FailureOr<Value> mask = actor.inputLike(lp, "action_mask");
    if (failed(old) || failed(advantages) || failed(mask))
      return failure();
    OpBuilder &b = actor.b();
    Value perToken = b.create<ClippedSurrogateOp>(
        actor.loc(), lp.getType(), lp, *old, *advantages, *mask,
        b.getF64FloatAttr(clipLow), b.getF64FloatAttr(clipHigh));
    actor.finish(actor.maskedMean(perToken, *mask));
    return success();
  }

  /// @grpo_loss: per token, the clipped surrogate (asymmetric clip) plus
  /// kl-beta x the k3 estimate of KL to the reference, averaged per
  /// sequence (GRPO) or per token (DAPO); and @grpo_advantages, the
  /// group-relative advantages of the sequences' scores.
  LogicalResult addGrpo(ModuleOp module, func::FuncOp logprobs) {
    if (groupSize < 1) {
      module.emitError() << "hg-ppo-losses: GRPO needs group-size >= 1";
      return failure();
    }
    LossFunction grpoLoss(logprobs, "grpo_loss", "grpo_forward_backward");
    OpBuilder &b = grpoLoss.b();
    Location loc = grpoLoss.loc();
    Value lp = grpoLoss.result(0);
    FailureOr<Value> old = grpoLoss.inputLike(lp, "old_logprobs");
    FailureOr<Value> ref = grpoLoss.inputLike(lp, "ref_logprobs");
    FailureOr<Value> advantages = grpoLoss.inputLike(lp, "advantages");
    FailureOr<Value> mask = grpoLoss.inputLike(lp, "action_mask");
    if (failed(old) || failed(ref) || failed(advantages) || failed(mask))
      return failure();
    Value perToken = b.create<ClippedSurrogateOp>(
        loc, lp.getType(), lp, *old, *advantages, *mask,
        b.getF64FloatAttr(clipLow), b.getF64FloatAttr(clipHigh));
    if (klBeta != 0) {
      Value kl =
          b.create<KlK3Op>(loc, TypeRange{lp.getType()}, ValueRange{lp, *ref},
                           ArrayRef<NamedAttribute>{});
      Value beta = b.create<ConstantOp>(
          loc, DenseElementsAttr::get(
                   RankedTensorType::get({1, 1}, b.getF32Type()),
                   b.getF32FloatAttr(static_cast<float>(klBeta))));
      perToken = b.create<AddOp>(loc, perToken, b.create<MulOp>(loc, beta, kl));
    }
    grpoLoss.finish(grpoLoss.maskedMean(perToken, *mask, perSequence));

    // @grpo_advantages: scores [batch] -> advantages [batch].
    OpBuilder top(module.getContext());
    top.setInsertionPointToEnd(module.getBody());
    auto rows = RankedTensorType::get({ShapedType::kDynamic}, top.getF32Type());
    auto f = top.create<func::FuncOp>(top.getUnknownLoc(), "grpo_advantages",
                                      top.getFunctionType({rows}, {rows}));
    f.setArgAttrs(
        0, top.getDictionaryAttr(
               {top.getNamedAttr("hg.name", top.getStringAttr("scores")),
                top.getNamedAttr("hg.dims", top.getStrArrayAttr({"batch"}))}));
    f.setResultAttr(0, "hg.name", top.getStringAttr("advantages"));
    Block *entry = f.addEntryBlock();
    top.setInsertionPointToEnd(entry);
    Value a = top.create<GroupAdvantagesOp>(
        top.getUnknownLoc(), TypeRange{rows}, ValueRange{entry->getArgument(0)},
        ArrayRef<NamedAttribute>{
            top.getNamedAttr("group_size", top.getI64IntegerAttr(groupSize)),
            top.getNamedAttr("scale", top.getBoolAttr(scaleAdvantages))});
    top.create<func::ReturnOp>(top.getUnknownLoc(), a);
    return success();
  }

  /// 0.5 x the masked mean of the clipped value loss of values[:, :-1]
  /// (DeepSpeed-Chat's critic_loss_fn).
  LogicalResult addCriticLoss(func::FuncOp forward, unsigned valuesIndex) {
    LossFunction critic(forward, "critic_loss", "critic_forward_backward");
    OpBuilder &b = critic.b();
    Location loc = critic.loc();
    Value all = critic.result(valuesIndex);
    auto type = cast<RankedTensorType>(all.getType());
    if (type.getRank() != 2)
      return forward.emitError()
             << "hg-ppo-losses: values must be [batch, seq], got " << type;
    // Position t's value of the sequence so far: t < seq - 1 are actions'.
    Value v = b.create<SliceOp>(
        loc,
        RankedTensorType::get({type.getDimSize(0), ShapedType::kDynamic},
                              b.getF32Type()),
        all, ArrayRef<int64_t>{1}, ArrayRef<int64_t>{0}, ArrayRef<int64_t>{-1},
        ArrayRef<int64_t>{1});
    FailureOr<Value> old = critic.inputLike(v, "old_values");
    FailureOr<Value> returns = critic.inputLike(v, "returns");
    FailureOr<Value> mask = critic.inputLike(v, "action_mask");
    if (failed(old) || failed(returns) || failed(mask))
      return failure();
    Value perToken =
        b.create<ClippedValueLossOp>(loc, v.getType(), v, *old, *returns, *mask,
                                     b.getF64FloatAttr(cliprangeValue));
    Value half = b.create<ConstantOp>(
        loc, DenseElementsAttr::get(RankedTensorType::get({1}, b.getF32Type()),
                                    b.getF32FloatAttr(0.5f)));
    critic.finish(
        b.create<MulOp>(loc, half, critic.maskedMean(perToken, *mask)));
    return success();
  }

  /// @ppo_experience: (logprobs, ref_logprobs, values [batch, actions],
  /// reward_scores [batch], action_mask [batch, actions], kl_ctl [1]) ->
  /// rewards and old_values [batch, actions], advantages and returns
  /// [batch, actions - start], start = prompt-length - 1.
  LogicalResult addExperience(ModuleOp module) {
    if (promptLength < 1) {
      module.emitError() << "hg-ppo-losses: a value model's experience maths "
                            "need the prompt length (prompt-length >= 1)";
      return failure();
    }
    OpBuilder b(module.getContext());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = b.getUnknownLoc();
    Type f32 = b.getF32Type();
    auto dyn = ShapedType::kDynamic;
    auto tokens = RankedTensorType::get({dyn, dyn}, f32);
    auto rows = RankedTensorType::get({dyn}, f32);
    auto scalar = RankedTensorType::get({1}, f32);
    auto named = [&](StringRef name, ArrayRef<StringRef> dims) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr("hg.name", b.getStringAttr(name))};
      if (!dims.empty())
        attrs.push_back(b.getNamedAttr("hg.dims", b.getStrArrayAttr(dims)));
      return b.getDictionaryAttr(attrs);
    };
    SmallVector<Type> inputs = {tokens, tokens, tokens, rows, tokens, scalar};
    SmallVector<DictionaryAttr> inputAttrs = {
        named("logprobs", {"batch", "actions"}),
        named("ref_logprobs", {"batch", "actions"}),
        named("values", {"batch", "actions"}),
        named("reward_scores", {"batch"}),
        named("action_mask", {"batch", "actions"}),
        named("kl_ctl", {})};
    auto f = b.create<func::FuncOp>(loc, "ppo_experience",
                                    b.getFunctionType(inputs, {}));
    f.setAllArgAttrs(inputAttrs);
    Block *entry = f.addEntryBlock();
    b.setInsertionPointToEnd(entry);
    const int64_t start = promptLength - 1;
    auto rewards = b.create<PpoRewardsOp>(
        loc, TypeRange{tokens, tokens},
        ValueRange{entry->getArgument(0), entry->getArgument(1),
                   entry->getArgument(3), entry->getArgument(4),
                   entry->getArgument(2), entry->getArgument(5)},
        ArrayRef<NamedAttribute>{
            b.getNamedAttr("start", b.getI64IntegerAttr(start)),
            b.getNamedAttr("clip_reward_value",
                           b.getF64FloatAttr(clipRewardValue))});
    auto gae = b.create<GaeOp>(
        loc, TypeRange{tokens, tokens},
        ValueRange{rewards->getResult(0), rewards->getResult(1)},
        ArrayRef<NamedAttribute>{
            b.getNamedAttr("start", b.getI64IntegerAttr(start)),
            b.getNamedAttr("gamma", b.getF64FloatAttr(gamma)),
            b.getNamedAttr("lam", b.getF64FloatAttr(lambda))});
    SmallVector<Value> results = {rewards->getResult(0), rewards->getResult(1),
                                  gae->getResult(0), gae->getResult(1)};
    b.create<func::ReturnOp>(loc, results);
    f.setFunctionType(
        b.getFunctionType(inputs, ValueRange(results).getTypes()));
    static constexpr StringLiteral kResults[] = {"rewards", "old_values",
                                                 "advantages", "returns"};
    for (auto [i, name] : llvm::enumerate(kResults))
      f.setResultAttr(i, "hg.name", b.getStringAttr(name));
    return success();
  }
};

} // namespace
} // namespace hybridc::hg
