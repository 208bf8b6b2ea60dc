// hg-adamw: the optimizer executables over @forward_loss_grad, with
// torch.optim.AdamW's update of every parameter in place (decoupled weight
// decay; bias-corrected moments) and the moments and step count as
// engine-owned state:
//   t += 1;  p *= 1 - lr wd
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
//  * @train_step: the loss and gradients of one batch, then the update;
//  * @forward_backward: the loss of one micro-batch, its gradients added
//    to accumulators (state `opt.grad.<name>`);
//  * @step: the accumulated gradients times `grad_scale` (1 / the number
//    of micro-batches), clipped to a global L2 norm `max_grad_norm` (0:
//    off), then the update. The caller zeroes the accumulators after it
//    (releasing them: the next @forward_backward takes them zero-filled;
//    a constant of zeros the size of every parameter would bloat the
//    bundle).
// Hyperparameters are inputs (f32 [1], torch's defaults but lr), so a
// schedule changes them without recompiling. Moments and accumulators are
// f32 whatever the parameter's dtype (master precision).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_ADAMW
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// Builds one function's new arguments, ops before its return and
/// write-back results.
class StepBuilder {
public:
  StepBuilder(func::FuncOp f)
      : f_(f), body_(f.getBody().front()),
        ret_(cast<func::ReturnOp>(body_.getTerminator())), b_(ret_),
        attrs_(f.getContext()), loc_(ret_.getLoc()) {
    for (unsigned i = 0; i < f.getNumResults(); ++i) {
      results_.push_back(ret_.getOperand(i));
      resultAttrs_.push_back(f.getResultAttrDict(i));
    }
  }

  OpBuilder &b() { return b_; }
  Location loc() const { return loc_; }
  Type f32() { return attrs_.getF32Type(); }
  RankedTensorType scalarType() { return RankedTensorType::get({1}, f32()); }

  /// An f32 [1] input `name` with default `dflt`.
  Value input(StringRef name, double dflt) {
    return argument(
        scalarType(),
        {attrs_.getNamedAttr("hg.name", attrs_.getStringAttr(name)),
         attrs_.getNamedAttr("hg.default", attrs_.getF64FloatAttr(dflt))});
  }
  /// State `name` of `type` (zeros before its first write).
  Value state(StringRef name, Type type) {
    return argument(
        type, {attrs_.getNamedAttr("hg.state", attrs_.getStringAttr(name))});
  }
  Value constant(double v) {
    return b_.create<ConstantOp>(
        loc_, DenseElementsAttr::get(scalarType(), attrs_.getF32FloatAttr(v)));
  }
  /// A result that writes `v` back (kind "hg.state" or "hg.param") or an
  /// output ("hg.name").
  void result(Value v, StringRef kind, StringRef name) {
    results_.push_back(v);
    resultAttrs_.push_back(attrs_.getDictionaryAttr(
        {attrs_.getNamedAttr(kind, attrs_.getStringAttr(name))}));
  }
  /// Keeps only the results `keep` says yes to (before new ones).
  void keepResults(llvm::function_ref<bool(unsigned)> keep) {
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
  /// `v` as f32 (a copy of its type with f32 elements).
  Value toF32(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getElementType() == f32()
               ? v
               : b_.create<CastOp>(loc_, t.clone(f32()), v).getResult();
  }

  /// Replaces the return by one of the collected results.
  void finish() {
    b_.create<func::ReturnOp>(loc_, results_);
    ret_.erase();
    SmallVector<Type> types;
    for (Value r : results_)
      types.push_back(r.getType());
    f_.setFunctionType(
        FunctionType::get(f_.getContext(), f_.getArgumentTypes(), types));
    f_.setAllResultAttrs(resultAttrs_);
  }

private:
  Value argument(Type type, ArrayRef<NamedAttribute> attrs) {
    unsigned i = body_.getNumArguments();
    f_.insertArgument(i, type, attrs_.getDictionaryAttr(attrs), loc_);
    return body_.getArgument(i);
  }

  func::FuncOp f_;
  Block &body_;
  func::ReturnOp ret_;
  OpBuilder b_;
  Builder attrs_;
  Location loc_;
  SmallVector<Value> results_;
  SmallVector<DictionaryAttr> resultAttrs_;
};

/// AdamW over parameters given with their f32 gradients.
class AdamW {
public:
  explicit AdamW(StepBuilder &s) : s_(s) {
    lr_ = s.input("lr", 1e-3);
    beta1_ = s.input("beta1", 0.9);
    beta2_ = s.input("beta2", 0.999);
    eps_ = s.input("eps", 1e-8);
    Value decay = s.input("weight_decay", 0.01);
    step_ = s.state("opt.step", s.scalarType());
    OpBuilder &b = s.b();
    Location loc = s.loc();
    Value unit = s.constant(1.0);
    t_ = b.create<AddOp>(loc, step_, unit);
    Value bc1 = b.create<SubOp>(loc, unit, b.create<PowOp>(loc, beta1_, t_));
    Value bc2 = b.create<SubOp>(loc, unit, b.create<PowOp>(loc, beta2_, t_));
    stepSize_ = b.create<DivOp>(loc, lr_, bc1);
    rootBc2_ = b.create<SqrtOp>(loc, bc2);
    keep_ = b.create<SubOp>(loc, unit, b.create<MulOp>(loc, lr_, decay));
    oneMinusB1_ = b.create<SubOp>(loc, unit, beta1_);
    oneMinusB2_ = b.create<SubOp>(loc, unit, beta2_);
  }

  /// Updates parameter `p` (checkpoint name `name`) with f32 gradient `g`:
  /// its moments and its new value become write-back results.
  void update(Value p, Value g, StringRef name) {
    OpBuilder &b = s_.b();
    Location loc = s_.loc();
    auto pType = cast<RankedTensorType>(p.getType());
    Type master = pType.clone(s_.f32());
    std::string n = name.str();
    Value m = s_.state("opt.exp_avg." + n, master);
    Value v = s_.state("opt.exp_avg_sq." + n, master);
    Value m2 = b.create<AddOp>(loc, b.create<MulOp>(loc, beta1_, m),
                               b.create<MulOp>(loc, oneMinusB1_, g));
    Value v2 = b.create<AddOp>(
        loc, b.create<MulOp>(loc, beta2_, v),
        b.create<MulOp>(loc, oneMinusB2_, b.create<MulOp>(loc, g, g)));
    Value denom = b.create<AddOp>(
        loc, b.create<DivOp>(loc, b.create<SqrtOp>(loc, v2), rootBc2_), eps_);
    Value decayed = b.create<MulOp>(loc, s_.toF32(p), keep_);
    Value p2 = b.create<SubOp>(
        loc, decayed,
        b.create<MulOp>(loc, stepSize_, b.create<DivOp>(loc, m2, denom)));
    if (pType.getElementType() != s_.f32())
      p2 = b.create<CastOp>(loc, pType, p2);
    s_.result(m2, "hg.state", "opt.exp_avg." + n);
    s_.result(v2, "hg.state", "opt.exp_avg_sq." + n);
    s_.result(p2, "hg.param", n);
  }

  /// The step count's write-back (after every update).
  void finish() { s_.result(t_, "hg.state", "opt.step"); }

private:
  StepBuilder &s_;
  Value lr_, beta1_, beta2_, eps_, step_, t_, stepSize_, rootBc2_, keep_,
      oneMinusB1_, oneMinusB2_;
};

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

func::FuncOp cloneAs(func::FuncOp source, StringRef name) {
  OpBuilder top(source.getContext());
  top.setInsertionPointAfter(source);
  auto f = cast<func::FuncOp>(top.clone(*source));
  f.setSymName(name);
  return f;
}

/// @train_step: @forward_loss_grad's outputs, then the update.
void buildTrainStep(func::FuncOp source) {
  func::FuncOp f = cloneAs(source, "train_step");
  StepBuilder s(f);
  AdamW adam(s);
  Block &body = f.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (const Trainable &t : trainables(source))
    adam.update(body.getArgument(t.arg), s.toF32(ret.getOperand(t.result)),
                t.name);
  adam.finish();
  s.finish();
}

/// @forward_backward: the loss; the gradients go into the accumulators.
void buildForwardBackward(func::FuncOp source) {
  func::FuncOp f = cloneAs(source, "forward_backward");
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
    std::string name = "opt.grad." + t.name;
    Value acc = s.state(name, g.getType());
    s.result(s.b().create<AddOp>(s.loc(), acc, g), "hg.state", name);
  }
  s.finish();
}

/// @step: the accumulated gradients, scaled and clipped, then the update.
/// Its arguments are the parameters, the inputs and the states.
void buildStep(func::FuncOp source) {
  OpBuilder top(source.getContext());
  top.setInsertionPointAfter(source);
  SmallVector<Trainable> params = trainables(source);
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> argAttrs;
  for (const Trainable &t : params) {
    types.push_back(source.getArgument(t.arg).getType());
    argAttrs.push_back(source.getArgAttrDict(t.arg));
  }
  auto f = top.create<func::FuncOp>(source.getLoc(), "step",
                                    top.getFunctionType(types, {}));
  f.setAllArgAttrs(argAttrs);
  Block *body = f.addEntryBlock();
  OpBuilder::atBlockEnd(body).create<func::ReturnOp>(source.getLoc());
  StepBuilder s(f);
  OpBuilder &b = s.b();
  Location loc = s.loc();
  Value scale = s.input("grad_scale", 1.0);
  Value maxNorm = s.input("max_grad_norm", 0.0);
  SmallVector<Value> grads;
  Value total = s.constant(0.0);
  for (const Trainable &t : params) {
    Type type =
        cast<RankedTensorType>(body->getArgument(grads.size()).getType())
            .clone(s.f32());
    std::string name = "opt.grad." + t.name;
    Value g = b.create<MulOp>(loc, s.state(name, type), scale);
    grads.push_back(g);
    Value squares = b.create<ReduceSumOp>(loc, b.create<MulOp>(loc, g, g),
                                          ArrayRef<int64_t>{}, false);
    total = b.create<AddOp>(
        loc, total,
        b.create<ReshapeOp>(loc, squares,
                            b.getArrayAttr({b.getI64IntegerAttr(1)})));
  }
  // Global-norm clipping (torch.nn.utils.clip_grad_norm_): the gradients
  // times min(1, max / (norm + 1e-6)) when max > 0.
  Value norm = b.create<SqrtOp>(loc, total);
  Value zero = s.constant(0.0), unit = s.constant(1.0);
  Value ratio = b.create<DivOp>(loc, maxNorm,
                                b.create<AddOp>(loc, norm, s.constant(1e-6)));
  Value clip = b.create<SelectOp>(loc, b.create<GreaterOp>(loc, maxNorm, zero),
                                  b.create<MinOp>(loc, ratio, unit), unit);
  AdamW adam(s);
  for (auto [i, t] : llvm::enumerate(params))
    adam.update(body->getArgument(i), b.create<MulOp>(loc, grads[i], clip),
                t.name);
  adam.finish();
  s.result(norm, "hg.name", "grad_norm");
  s.finish();
}

struct AdamWPass : impl::AdamWBase<AdamWPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto source = module.lookupSymbol<func::FuncOp>("forward_loss_grad");
    if (!source) {
      module.emitError() << "hg-adamw: no @forward_loss_grad (run "
                            "hg-causal-lm-loss and hg-autodiff first)";
      return signalPassFailure();
    }
    for (StringRef name : {"train_step", "forward_backward", "step"})
      if (module.lookupSymbol(name)) {
        module.emitError() << "hg-adamw: @" << name << " exists already";
        return signalPassFailure();
      }
    buildStep(source);
    buildForwardBackward(source);
    buildTrainStep(source);
  }
};

} // namespace
} // namespace hybridc::hg
