// hg-adamw: @train_step, one optimizer step: @forward_loss_grad's loss and
// gradients, then torch.optim.AdamW's update of every parameter in place
// (decoupled weight decay; bias-corrected moments), with the moments and
// the step count as engine-owned state:
//   t += 1;  p *= 1 - lr wd
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// lr, betas, eps and weight decay are inputs (f32 [1], with torch's
// defaults but lr), so a schedule changes them without recompiling.
// Moments are f32 whatever the parameter's dtype (master precision).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_ADAMW
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

struct AdamWPass : impl::AdamWBase<AdamWPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto source = module.lookupSymbol<func::FuncOp>("forward_loss_grad");
    if (!source) {
      module.emitError() << "hg-adamw: no @forward_loss_grad (run "
                            "hg-causal-lm-loss and hg-autodiff first)";
      return signalPassFailure();
    }
    if (module.lookupSymbol("train_step")) {
      module.emitError() << "hg-adamw: @train_step exists already";
      return signalPassFailure();
    }
    OpBuilder top(module.getContext());
    top.setInsertionPointAfter(source);
    auto f = cast<func::FuncOp>(top.clone(*source));
    f.setSymName("train_step");
    Block &body = f.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *ctx = module.getContext();
    Builder attrs(ctx);
    Type f32 = attrs.getF32Type();
    auto one = RankedTensorType::get({1}, f32);
    Location loc = ret.getLoc();

    // Hyperparameters (inputs with defaults) and the step count (state).
    auto addArgument = [&](Type type, NamedAttribute a, NamedAttribute b) {
      unsigned i = body.getNumArguments();
      f.insertArgument(i, type, attrs.getDictionaryAttr({a, b}), loc);
      return body.getArgument(i);
    };
    auto input = [&](StringRef name, double dflt) {
      return addArgument(one, attrs.getNamedAttr("hg.name",
                                                 attrs.getStringAttr(name)),
                         attrs.getNamedAttr("hg.default",
                                            attrs.getF64FloatAttr(dflt)));
    };
    Value lr = input("lr", 1e-3), beta1 = input("beta1", 0.9),
          beta2 = input("beta2", 0.999), eps = input("eps", 1e-8),
          decay = input("weight_decay", 0.01);
    auto state = [&](StringRef name, Type type) {
      unsigned i = body.getNumArguments();
      f.insertArgument(i, type,
                       attrs.getDictionaryAttr({attrs.getNamedAttr(
                           "hg.state", attrs.getStringAttr(name))}),
                       loc);
      return body.getArgument(i);
    };
    Value step = state("opt.step", one);

    OpBuilder b(ret);
    auto constant = [&](double v) {
      return b.create<ConstantOp>(
          loc, DenseElementsAttr::get(one, attrs.getF32FloatAttr(v)));
    };
    Value unit = constant(1.0);
    Value t = b.create<AddOp>(loc, step, unit);
    Value bc1 = b.create<SubOp>(loc, unit, b.create<PowOp>(loc, beta1, t));
    Value bc2 = b.create<SubOp>(loc, unit, b.create<PowOp>(loc, beta2, t));
    Value stepSize = b.create<DivOp>(loc, lr, bc1);
    Value rootBc2 = b.create<SqrtOp>(loc, bc2);
    Value keep = b.create<SubOp>(loc, unit, b.create<MulOp>(loc, lr, decay));
    Value oneMinusB1 = b.create<SubOp>(loc, unit, beta1);
    Value oneMinusB2 = b.create<SubOp>(loc, unit, beta2);

    SmallVector<Value> results(ret.getOperands());
    SmallVector<DictionaryAttr> resultAttrs;
    for (unsigned i = 0; i < f.getNumResults(); ++i)
      resultAttrs.push_back(f.getResultAttrDict(i));
    auto writeBack = [&](Value v, StringRef kind, StringRef name) {
      results.push_back(v);
      resultAttrs.push_back(attrs.getDictionaryAttr(
          {attrs.getNamedAttr(kind, attrs.getStringAttr(name))}));
    };
    // The gradient results, by parameter name.
    llvm::StringMap<Value> grads;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      if (auto n = f.getResultAttrOfType<StringAttr>(i, "hg.name");
          n && n.getValue().starts_with("grad."))
        grads[n.getValue().drop_front(5)] = ret.getOperand(i);
    for (unsigned i = 0; i < source.getNumArguments(); ++i) {
      auto name = f.getArgAttrOfType<StringAttr>(i, "hg.param");
      Value g = name ? grads.lookup(name.getValue()) : Value();
      if (!g)
        continue;
      Value p = body.getArgument(i);
      auto pType = cast<RankedTensorType>(p.getType());
      auto master = pType.clone(f32);
      std::string n = name.getValue().str();
      Value m = state("opt.exp_avg." + n, master);
      Value v = state("opt.exp_avg_sq." + n, master);
      Value g32 = pType.getElementType() == f32
                      ? g
                      : b.create<CastOp>(loc, master, g).getResult();
      Value p32 = pType.getElementType() == f32
                      ? p
                      : b.create<CastOp>(loc, master, p).getResult();
      Value m2 = b.create<AddOp>(loc, b.create<MulOp>(loc, beta1, m),
                                 b.create<MulOp>(loc, oneMinusB1, g32));
      Value v2 = b.create<AddOp>(
          loc, b.create<MulOp>(loc, beta2, v),
          b.create<MulOp>(loc, oneMinusB2, b.create<MulOp>(loc, g32, g32)));
      Value denom = b.create<AddOp>(
          loc, b.create<DivOp>(loc, b.create<SqrtOp>(loc, v2), rootBc2), eps);
      Value decayed = b.create<MulOp>(loc, p32, keep);
      Value p2 = b.create<SubOp>(
          loc, decayed,
          b.create<MulOp>(loc, stepSize, b.create<DivOp>(loc, m2, denom)));
      if (pType.getElementType() != f32)
        p2 = b.create<CastOp>(loc, pType, p2);
      writeBack(m2, "hg.state", "opt.exp_avg." + n);
      writeBack(v2, "hg.state", "opt.exp_avg_sq." + n);
      writeBack(p2, "hg.param", n);
    }
    writeBack(t, "hg.state", "opt.step");
    b.create<func::ReturnOp>(loc, results);
    ret.erase();
    SmallVector<Type> types;
    for (Value r : results)
      types.push_back(r.getType());
    f.setFunctionType(FunctionType::get(ctx, f.getArgumentTypes(), types));
    f.setAllResultAttrs(resultAttrs);
  }
};

} // namespace
} // namespace hybridc::hg
