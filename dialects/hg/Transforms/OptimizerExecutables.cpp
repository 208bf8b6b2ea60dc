// The optimizer executables over @forward_loss_grad (or, for a model with
// no loss of its own, @forward_vjp: @step, @init_optimizer and @backward
// only) that hg-adamw and hg-sgd build, each with its own update rule:
//  * @train_step: one batch's loss and gradients, then the update;
//  * @forward_backward: a micro-batch's loss; its gradients added to f32
//    accumulators (state `opt.grad.<name>`);
//  * @step: the accumulators times `grad_scale`, clipped to a global L2
//    norm (computed from the accumulators, so each is multiplied once,
//    right before its update), then the update;
//  * @init_optimizer: the optimizer state that does not start at zero;
//  * @backward, when the module has @forward_vjp (hg-autodiff
//    cotangent=logits): the gradients of a loss computed elsewhere, from
//    its cotangent `grad_logits`, added to the same accumulators;
//  * for each other loss of the same parameters (a function marked
//    `hg.loss`, hg-ppo-losses), the accumulation its `hg.accumulate` names,
//    built from its gradient (@<loss>_grad) as @forward_backward is.
// Precision plan. A parameter stored in bf16 or f16 (the working weights,
// the one copy every executable reads) is updated through an f32 master
// copy, state `opt.master.<name>`: the rule reads and writes the master and
// the parameter is written back as its cast, so updates smaller than the
// working precision's spacing accumulate instead of vanishing. The masters
// are copied from the working weights by @init_optimizer, which the engine
// runs after it binds weights: a step then costs no extra pass over the
// weights. f32 parameters are updated in place and need no master.
// When @forward_loss_grad reads state `opt.loss_scale` (fp16: its
// gradients are those of loss x scale, where small gradients stay above
// half's underflow), the update unscales them and takes an inf or NaN in
// their global norm (one reduction, on the device) as an overflow: the
// step is skipped, every write-back keeping its old value through a
// select, so the graph stays one static executable, and the scale follows
// DeepSpeed's dynamic loss scaling (DynamicLossScale below).
#include "dialects/hg/Transforms/OptimizerExecutables.h"

#include "dialects/hg/IR/HgOps.h"

#include "llvm/ADT/StringMap.h"

#include <optional>

using namespace mlir;

namespace hybridc::hg {

//===----------------------------------------------------------------------===//
// StepBuilder
//===----------------------------------------------------------------------===//

StepBuilder::StepBuilder(func::FuncOp f)
    : f_(f), body_(f.getBody().front()),
      ret_(cast<func::ReturnOp>(body_.getTerminator())), b_(ret_),
      attrs_(f.getContext()), loc_(ret_.getLoc()) {
  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    results_.push_back(ret_.getOperand(i));
    resultAttrs_.push_back(f.getResultAttrDict(i));
  }
}

Value StepBuilder::input(StringRef name, double dflt) {
  return argument(
      scalarType(),
      {attrs_.getNamedAttr("hg.name", attrs_.getStringAttr(name)),
       attrs_.getNamedAttr("hg.default", attrs_.getF64FloatAttr(dflt))});
}

Value StepBuilder::state(StringRef name, Type type) {
  if (Value existing = argumentTagged("hg.state", name))
    return existing;
  return argument(
      type, {attrs_.getNamedAttr("hg.state", attrs_.getStringAttr(name))});
}

Value StepBuilder::constant(double v) {
  return b_.create<ConstantOp>(
      loc_, DenseElementsAttr::get(scalarType(), attrs_.getF32FloatAttr(v)));
}

Value StepBuilder::toF32(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getElementType() == f32()
             ? v
             : b_.create<CastOp>(loc_, t.clone(f32()), v).getResult();
}

Value StepBuilder::stepCount() {
  if (!stepCount_)
    stepCount_ =
        b_.create<AddOp>(loc_, state("opt.step", scalarType()), constant(1.0));
  return stepCount_;
}

void StepBuilder::writeBack(StringRef kind, StringRef name, Value v) {
  if (skip_) {
    Value old = argumentTagged(kind, name);
    assert(old && "a write-back without the argument it replaces");
    v = b_.create<SelectOp>(loc_, skip_, old, v);
  }
  result(v, kind, name);
}

void StepBuilder::result(Value v, StringRef kind, StringRef name) {
  results_.push_back(v);
  resultAttrs_.push_back(attrs_.getDictionaryAttr(
      {attrs_.getNamedAttr(kind, attrs_.getStringAttr(name))}));
}

void StepBuilder::keepResults(llvm::function_ref<bool(unsigned)> keep) {
  SmallVector<Value> values;
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0; i < results_.size(); ++i)
    if (keep(i)) {
      values.push_back(results_[i]);
      attrs.push_back(resultAttrs_[i]);
    }
  results_ = std::move(values);
  resultAttrs_ = std::move(attrs);
}

void StepBuilder::writeStepCount() {
  if (stepCount_)
    writeBack("hg.state", "opt.step", stepCount_);
}

void StepBuilder::finish() {
  b_.create<func::ReturnOp>(loc_, results_);
  ret_.erase();
  SmallVector<Type> types;
  for (Value r : results_)
    types.push_back(r.getType());
  f_.setFunctionType(
      FunctionType::get(f_.getContext(), f_.getArgumentTypes(), types));
  f_.setAllResultAttrs(resultAttrs_);
}

Value StepBuilder::argument(Type type, ArrayRef<NamedAttribute> attrs) {
  unsigned i = body_.getNumArguments();
  f_.insertArgument(i, type, attrs_.getDictionaryAttr(attrs), loc_);
  return body_.getArgument(i);
}

Value StepBuilder::argumentTagged(StringRef kind, StringRef name) {
  for (BlockArgument arg : body_.getArguments())
    if (auto tag = f_.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kind);
        tag && tag.getValue() == name)
      return arg;
  return {};
}

std::pair<Value, Value> UpdateRule::updateThroughMaster(StepBuilder &s,
                                                        Value master, Value g,
                                                        Type working,
                                                        StringRef name) {
  Value next = update(s, master, s.toF32(g), name);
  return {next, s.b().create<CastOp>(s.loc(), working, next)};
}

namespace {

//===----------------------------------------------------------------------===//
// The precision plan
//===----------------------------------------------------------------------===//

bool needsMaster(Value param) {
  return !cast<RankedTensorType>(param.getType()).getElementType().isF32();
}

std::string masterName(StringRef param) { return "opt.master." + param.str(); }

constexpr llvm::StringLiteral kHysteresisState = "opt.loss_scale_hysteresis";
constexpr llvm::StringLiteral kGoodStepsState = "opt.loss_scale_good_steps";

/// fp16 dynamic loss scaling as DeepSpeed's DynamicLossScaler does it
/// (consecutive_hysteresis off), in the executable `s` builds. On an
/// overflow the step is skipped and the hysteresis left drops by one,
/// or, once it is down to 1 (or `hysteresis` is 1), the scale halves, not
/// below `min_loss_scale`. A good step that follows `loss_scale_window`
/// good steps doubles the scale and refills the hysteresis.
/// `dynamic_loss_scale` = 0 keeps the scale (DeepSpeed's static
/// `loss_scale`); overflowing steps are skipped either way. States:
/// `opt.loss_scale`, `opt.loss_scale_hysteresis` (left) and
/// `opt.loss_scale_good_steps` (good steps since the last overflow, counted
/// 1, 2, ..., window, 1, ...: bounded, so exact in f32 however long the
/// run).
class DynamicLossScale {
public:
  explicit DynamicLossScale(StepBuilder &s)
      : s_(s), scale_(s.state(kLossScaleState, s.scalarType())) {}

  /// The scale the gradients carry.
  Value scale() const { return scale_; }

  /// Whether gradients of global norm `norm` overflowed: i1 [1].
  Value overflow(Value norm) {
    OpBuilder &b = s_.b();
    Location loc = s_.loc();
    Value inf = b.create<IsInfOp>(loc, norm);
    Value nan = b.create<IsNanOp>(loc, norm);
    return b.create<OrOp>(loc, inf, nan);
  }

  /// Writes the next scale (whether or not the step is skipped) and
  /// returns `overflow` (0: none; 1: the hysteresis absorbed it; 2: the
  /// scale shifted down, or could not, at the minimum), `loss_scale` (the
  /// one the gradients carried), `next_loss_scale` and `hysteresis_left`.
  void finish(Value overflow) {
    OpBuilder &b = s_.b();
    Location loc = s_.loc();
    Value dynamic = b.create<GreaterOp>(
        loc, s_.input("dynamic_loss_scale", 1.0), s_.constant(0.0));
    Value window = s_.input("loss_scale_window", 1000.0);
    Value hysteresis = s_.input("hysteresis", 2.0);
    Value minScale = s_.input("min_loss_scale", 1.0);
    Value left = s_.state(kHysteresisState, s_.scalarType());
    Value good = s_.state(kGoodStepsState, s_.scalarType());
    Value zero = s_.constant(0.0), unit = s_.constant(1.0),
          two = s_.constant(2.0);
    auto select = [&](Value c, Value x, Value y) {
      return b.create<SelectOp>(loc, c, x, y).getResult();
    };
    // An overflow halves the scale once no hysteresis is left to spend.
    Value spent = b.create<LessEqualOp>(loc, left, unit);
    Value none = b.create<LessEqualOp>(loc, hysteresis, unit);
    Value shift = b.create<OrOp>(loc, spent, none);
    Value halved =
        b.create<MaxOp>(loc, b.create<DivOp>(loc, scale_, two), minScale);
    Value leftAfterOverflow =
        select(shift, left, b.create<SubOp>(loc, left, unit));
    // A good step grows it when the window's good steps came before it.
    Value grow = b.create<GreaterEqualOp>(loc, good, window);
    Value doubled = b.create<MulOp>(loc, scale_, two);
    Value grown = select(grow, doubled, scale_);
    Value shrunk = select(shift, halved, scale_);
    Value next = select(dynamic, select(overflow, shrunk, grown), scale_);
    Value refilled = select(grow, hysteresis, left);
    Value nextLeft = select(overflow, leftAfterOverflow, refilled);
    Value counted = select(grow, unit, b.create<AddOp>(loc, good, unit));
    Value nextGood = select(overflow, zero, counted);
    s_.result(next, "hg.state", kLossScaleState);
    s_.result(nextLeft, "hg.state", kHysteresisState);
    s_.result(nextGood, "hg.state", kGoodStepsState);
    Value shifted = b.create<AndOp>(loc, overflow, shift);
    Value any = b.create<CastOp>(loc, s_.scalarType(), overflow);
    Value lowered = b.create<CastOp>(loc, s_.scalarType(), shifted);
    Value code = b.create<AddOp>(loc, any, lowered);
    s_.result(code, "hg.name", "overflow");
    s_.result(scale_, "hg.name", "loss_scale");
    s_.result(next, "hg.name", "next_loss_scale");
    s_.result(nextLeft, "hg.name", "hysteresis_left");
  }

private:
  StepBuilder &s_;
  Value scale_;
};

//===----------------------------------------------------------------------===//
// The executables
//===----------------------------------------------------------------------===//

/// The parameters of `f` with a gradient result in `source`: (argument
/// index, name, result index).
struct Trainable {
  unsigned arg;
  std::string name;
  unsigned result;
};

SmallVector<Trainable> trainables(func::FuncOp source) {
  llvm::StringMap<unsigned> grads;
  for (unsigned i = 0; i < source.getNumResults(); ++i)
    if (auto n = source.getResultAttrOfType<StringAttr>(i, "hg.name");
        n && n.getValue().starts_with("grad."))
      grads[n.getValue().drop_front(5)] = i;
  SmallVector<Trainable> out;
  for (unsigned i = 0; i < source.getNumArguments(); ++i)
    if (auto name = source.getArgAttrOfType<StringAttr>(i, "hg.param"))
      if (auto it = grads.find(name.getValue()); it != grads.end())
        out.push_back({i, name.getValue().str(), it->second});
  return out;
}

bool isLossScaled(func::FuncOp source) {
  for (unsigned i = 0; i < source.getNumArguments(); ++i)
    if (auto s = source.getArgAttrOfType<StringAttr>(i, "hg.state");
        s && s.getValue() == kLossScaleState)
      return true;
  return false;
}

func::FuncOp cloneAs(func::FuncOp source, StringRef name) {
  OpBuilder top(source.getContext());
  top.setInsertionPointAfter(source);
  auto f = cast<func::FuncOp>(top.clone(*source));
  f.setSymName(name);
  return f;
}

/// A new function `name` whose arguments are the trainable parameters of
/// `source` and that returns nothing yet.
func::FuncOp createOverParameters(func::FuncOp source, StringRef name,
                                  ArrayRef<Trainable> params) {
  OpBuilder top(source.getContext());
  top.setInsertionPointAfter(source);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  for (const Trainable &t : params) {
    types.push_back(source.getArgument(t.arg).getType());
    argAttrs.push_back(source.getArgAttrDict(t.arg));
  }
  auto f = top.create<func::FuncOp>(source.getLoc(), name,
                                    top.getFunctionType(types, {}));
  f.setAllArgAttrs(argAttrs);
  Block *body = f.addEntryBlock();
  OpBuilder::atBlockEnd(body).create<func::ReturnOp>(source.getLoc());
  return f;
}

/// The sum of g^2 over every element of `g`: f32 [1].
Value sumOfSquares(StepBuilder &s, Value g) {
  OpBuilder &b = s.b();
  Location loc = s.loc();
  Value squares = b.create<ReduceSumOp>(loc, b.create<MulOp>(loc, g, g),
                                        ArrayRef<int64_t>{}, false);
  return b.create<ReshapeOp>(loc, squares,
                             b.getArrayAttr({b.getI64IntegerAttr(1)}));
}

/// `rule` over every parameter (`params[i]`, an argument of the function
/// `s` builds, with gradient `grads[i]`, times `clip` when given): through
/// its master when it has one, written back in place. A half-precision
/// gradient goes to the rule as it is, for an update that reads it as f32
/// itself (UpdateRule::updateThroughMaster).
void updateParameters(StepBuilder &s, UpdateRule &rule, ArrayRef<Value> params,
                      ArrayRef<Value> grads, ArrayRef<Trainable> names,
                      Value clip = {}) {
  rule.begin(s);
  for (auto [p, grad, t] : llvm::zip(params, grads, names)) {
    Value g = clip ? s.b().create<MulOp>(s.loc(), s.toF32(grad), clip) : grad;
    if (!needsMaster(p)) {
      s.writeBack("hg.param", t.name, rule.update(s, p, s.toF32(g), t.name));
      continue;
    }
    Value master = s.state(masterName(t.name),
                           cast<RankedTensorType>(p.getType()).clone(s.f32()));
    auto [next, working] =
        rule.updateThroughMaster(s, master, g, p.getType(), t.name);
    s.writeBack("hg.state", masterName(t.name), next);
    s.writeBack("hg.param", t.name, working);
  }
  s.writeStepCount();
}

/// @train_step: @forward_loss_grad's outputs (the gradients unscaled when
/// they carry a loss scale), then the update.
void buildTrainStep(func::FuncOp source, UpdateRule &rule) {
  func::FuncOp f = cloneAs(source, "train_step");
  StepBuilder s(f);
  OpBuilder &b = s.b();
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Trainable> trainable = trainables(source);
  SmallVector<Value> params, grads;
  // The gradients in their own type: the update reads a half-precision
  // one as f32 (a cast to f32 is exact).
  for (const Trainable &t : trainable) {
    params.push_back(body.getArgument(t.arg));
    grads.push_back(ret.getOperand(t.result));
  }
  std::optional<DynamicLossScale> lossScale;
  Value overflow;
  if (isLossScaled(source)) {
    lossScale.emplace(s);
    Value inverse =
        b.create<DivOp>(s.loc(), s.constant(1.0), lossScale->scale());
    Value total = s.constant(0.0);
    for (auto [t, g] : llvm::zip(trainable, grads)) {
      g = b.create<MulOp>(s.loc(), s.toF32(g), inverse);
      s.replaceResult(t.result, g);
      total = b.create<AddOp>(s.loc(), total, sumOfSquares(s, g));
    }
    overflow = lossScale->overflow(b.create<SqrtOp>(s.loc(), total));
    s.skipWritesOn(overflow);
  }
  updateParameters(s, rule, params, grads, trainable);
  if (lossScale)
    lossScale->finish(overflow);
  s.finish();
}

/// @forward_backward (from @forward_loss_grad: the loss), @backward (from
/// @forward_vjp: nothing else) or another loss's accumulation: the
/// gradients go into the accumulators.
void buildAccumulation(func::FuncOp source, StringRef name) {
  func::FuncOp f = cloneAs(source, name);
  StepBuilder s(f);
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Trainable> params = trainables(source);
  s.keepResults([&](unsigned i) {
    auto n = source.getResultAttrOfType<StringAttr>(i, "hg.name");
    return !n || !n.getValue().starts_with("grad.");
  });
  for (const Trainable &t : params) {
    Value g = s.toF32(ret.getOperand(t.result));
    std::string state = "opt.grad." + t.name;
    Value acc = s.state(state, g.getType());
    s.result(s.b().create<AddOp>(s.loc(), acc, g), "hg.state", state);
  }
  s.finish();
}

/// The parameters' names, in order: what @step's accumulators are.
SmallVector<std::string> trainableNames(func::FuncOp f) {
  SmallVector<std::string> out;
  for (const Trainable &t : trainables(f))
    out.push_back(t.name);
  return out;
}

/// @step: the accumulated gradients, scaled (and unscaled) and clipped,
/// then the update. Its arguments are the parameters, the inputs and the
/// states.
void buildStep(func::FuncOp source, UpdateRule &rule) {
  SmallVector<Trainable> trainable = trainables(source);
  func::FuncOp f = createOverParameters(source, "step", trainable);
  Block &body = f.getBody().front();
  StepBuilder s(f);
  OpBuilder &b = s.b();
  Location loc = s.loc();
  Value scale = s.input("grad_scale", 1.0);
  Value maxNorm = s.input("max_grad_norm", 0.0);
  std::optional<DynamicLossScale> lossScale;
  if (isLossScaled(source)) {
    lossScale.emplace(s);
    scale = b.create<DivOp>(loc, scale, lossScale->scale());
  }
  // The norm of the scaled gradients is |scale| times the accumulators'
  // (sum (a s)^2 = s^2 sum a^2), so no scaled copy of a gradient is made
  // before the norm is known: each parameter's update multiplies its
  // accumulator once, by scale x clip, right before it runs (the scaled
  // copies of every gradient alive at once were @step's workspace: 8.1 GB
  // at OPT-1.3B).
  SmallVector<Value> params, grads;
  Value total = s.constant(0.0);
  for (const Trainable &t : trainable) {
    Value p = body.getArgument(params.size());
    params.push_back(p);
    Type type = cast<RankedTensorType>(p.getType()).clone(s.f32());
    Value acc = s.state("opt.grad." + t.name, type);
    grads.push_back(acc);
    total = b.create<AddOp>(loc, total, sumOfSquares(s, acc));
  }
  Value root = b.create<SqrtOp>(loc, total);
  Value norm = b.create<MulOp>(loc, root, b.create<AbsOp>(loc, scale));
  Value overflow;
  if (lossScale) {
    overflow = lossScale->overflow(norm);
    s.skipWritesOn(overflow);
  }
  // Global-norm clipping (torch.nn.utils.clip_grad_norm_): the gradients
  // times min(1, max / (norm + 1e-6)) when max > 0.
  Value zero = s.constant(0.0), unit = s.constant(1.0);
  Value ratio = b.create<DivOp>(loc, maxNorm,
                                b.create<AddOp>(loc, norm, s.constant(1e-6)));
  Value clip = b.create<SelectOp>(loc, b.create<GreaterOp>(loc, maxNorm, zero),
                                  b.create<MinOp>(loc, ratio, unit), unit);
  updateParameters(s, rule, params, grads, trainable,
                   b.create<MulOp>(loc, scale, clip));
  if (lossScale)
    lossScale->finish(overflow);
  s.result(norm, "hg.name", "grad_norm");
  s.finish();
}

/// @init_optimizer: the masters copied from the working weights, and the
/// loss scale's starting state.
void buildInitOptimizer(func::FuncOp source) {
  SmallVector<Trainable> trainable = trainables(source);
  func::FuncOp f = createOverParameters(source, "init_optimizer", trainable);
  Block &body = f.getBody().front();
  StepBuilder s(f);
  for (auto [i, t] : llvm::enumerate(trainable)) {
    Value p = body.getArgument(i);
    if (!needsMaster(p))
      continue;
    Value master = s.toF32(p);
    s.state(masterName(t.name), master.getType());
    s.result(master, "hg.state", masterName(t.name));
  }
  if (isLossScaled(source)) {
    for (StringRef name : {kLossScaleState, kHysteresisState, kGoodStepsState})
      s.state(name, s.scalarType());
    s.result(s.input("initial_loss_scale", 65536.0), "hg.state",
             kLossScaleState);
    s.result(s.input("hysteresis", 2.0), "hg.state", kHysteresisState);
    s.result(s.constant(0.0), "hg.state", kGoodStepsState);
  }
  s.finish();
}

} // namespace

LogicalResult buildOptimizerExecutables(ModuleOp module, StringRef pass,
                                        UpdateRule &rule) {
  auto loss = module.lookupSymbol<func::FuncOp>("forward_loss_grad");
  auto vjp = module.lookupSymbol<func::FuncOp>("forward_vjp");
  // A model without a loss of its own (a value head, whose losses are
  // computed outside it) trains through @backward alone.
  func::FuncOp source = loss ? loss : vjp;
  if (!source)
    return module.emitError() << pass
                              << ": no @forward_loss_grad or @forward_vjp "
                                 "(run hg-causal-lm-loss and hg-autodiff, or "
                                 "hg-autodiff cotangent=..., first)";
  for (StringRef name :
       {"train_step", "forward_backward", "step", "init_optimizer", "backward"})
    if (module.lookupSymbol(name))
      return module.emitError() << pass << ": @" << name << " exists already";
  if (loss && vjp) {
    // @step reads one accumulator per parameter of @forward_loss_grad:
    // @backward must fill exactly those.
    if (trainableNames(vjp) != trainableNames(source))
      return vjp.emitError()
             << pass
             << ": @forward_vjp's parameters differ from @forward_loss_grad's";
    if (isLossScaled(vjp) != isLossScaled(source))
      return vjp.emitError() << pass
                             << ": @forward_vjp and @forward_loss_grad must "
                                "both carry the loss scale or neither";
  }
  bool masters = llvm::any_of(trainables(source), [&](const Trainable &t) {
    return needsMaster(source.getArgument(t.arg));
  });
  // Other losses of the same parameters (hg-ppo-losses: `hg.loss`, their
  // accumulation named by `hg.accumulate`) fill the same accumulators.
  SmallVector<std::pair<func::FuncOp, StringRef>> losses;
  for (auto f : module.getOps<func::FuncOp>()) {
    auto accumulate = f->getAttrOfType<StringAttr>("hg.accumulate");
    if (!f->hasAttr("hg.loss") || !accumulate)
      continue;
    auto grad =
        module.lookupSymbol<func::FuncOp>((f.getName() + "_grad").str());
    if (!grad)
      return f.emitError() << pass << ": no @" << f.getName()
                           << "_grad (run hg-autodiff on it first)";
    if (module.lookupSymbol(accumulate))
      return f.emitError() << pass << ": @" << accumulate.getValue()
                           << " exists already";
    if (trainableNames(grad) != trainableNames(source))
      return grad.emitError()
             << pass << ": @" << grad.getName() << "'s parameters differ from @"
             << source.getName() << "'s";
    if (isLossScaled(grad) != isLossScaled(source))
      return grad.emitError()
             << pass << ": @" << grad.getName() << " and @" << source.getName()
             << " must both carry the loss scale or neither";
    losses.push_back({grad, accumulate.getValue()});
  }
  if (masters || isLossScaled(source))
    buildInitOptimizer(source);
  buildStep(source, rule);
  if (vjp)
    buildAccumulation(vjp, "backward");
  for (auto [grad, name] : losses)
    buildAccumulation(grad, name);
  if (loss) {
    buildAccumulation(loss, "forward_backward");
    buildTrainStep(loss, rule);
  }
  return success();
}

} // namespace hybridc::hg
