// hg-autodiff: reverse-mode differentiation of a function's scalar loss
// with respect to its parameters. @F's copy @F_grad returns the loss and,
// for every parameter argument, its gradient (hg.name "grad.<checkpoint
// name>", the parameter's type), and after the loss the results marked
// `hg.metric` (values that ride along, not differentiated: a reward
// model's scores and accuracy). Gradients flow from the loss back through
// each op's vector-Jacobian rule (VjpInterface.td), in reverse program
// order; a value used several times gets the sum of its uses' gradients.
// Only values that depend on a parameter carry gradients (integers,
// booleans, position tables and masks do not); an op on that path without
// a rule is an error naming it. With `loss-scale`, the gradients are those
// of loss x a state (fp16 loss scaling): the backward pass starts from the
// scale instead of 1, as torch's (loss * scale).backward() does.
// With `cotangent`, the backward pass starts from an input instead of a
// loss: @F_vjp takes `grad_<result>` (f32, the result's shape) and returns
// the gradients of sum(result * grad_<result>), a vector-Jacobian product
// (the loss is computed outside: PPO, custom objectives).
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/VjpInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_AUTODIFF
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

bool isFloat(Value v) {
  auto t = dyn_cast<ShapedType>(v.getType());
  return t && isa<FloatType>(t.getElementType());
}

/// Whether `type` holds one element (a scalar loss).
bool isScalar(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && t.hasStaticShape() && t.getNumElements() == 1;
}

struct AutodiffPass : impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    registerVjpRules(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(function);
    if (!func) {
      module.emitError() << "hg-autodiff: no function @" << function;
      return signalPassFailure();
    }
    // Half's narrow range underflows small gradients: only f16 parameters
    // need the loss scaled.
    std::string scaleState = lossScale;
    if (lossScaleF16Only &&
        llvm::none_of(func.getArguments(), [&](BlockArgument arg) {
          return func.getArgAttr(arg.getArgNumber(), "hg.param") &&
                 getElementTypeOrSelf(arg.getType()).isF16();
        }))
      scaleState.clear();
    // The seed: the scalar loss (d loss / d loss = 1), or, with
    // `cotangent`, the named result's cotangent, taken as an input.
    const bool fromCotangent = !cotangent.empty();
    const std::string seedName = fromCotangent ? cotangent : loss;
    std::optional<unsigned> seedIndex;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto n = func.getResultAttrOfType<StringAttr>(i, "hg.name");
          n && n.getValue() == seedName)
        seedIndex = i;
    if (!seedIndex) {
      func.emitError() << "hg-autodiff: @" << function
                       << " has no result named '" << seedName << "'";
      return signalPassFailure();
    }
    Type seedType = func.getFunctionType().getResult(*seedIndex);
    auto seedTensor = dyn_cast<RankedTensorType>(seedType);
    if (fromCotangent &&
        (!seedTensor || !isa<FloatType>(seedTensor.getElementType()))) {
      func.emitError() << "hg-autodiff: the cotangent's result '" << seedName
                       << "' must be a float tensor, got " << seedType;
      return signalPassFailure();
    }
    if (!fromCotangent &&
        (!isScalar(seedType) || !isa<FloatType>(seedTensor.getElementType()))) {
      func.emitError() << "hg-autodiff: the loss must be one float, got "
                       << seedType;
      return signalPassFailure();
    }
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto s = func.getArgAttrOfType<StringAttr>(i, "hg.state");
          s && !scaleState.empty() && s.getValue() == scaleState) {
        func.emitError() << "hg-autodiff: @" << function
                         << " already reads state '" << scaleState
                         << "' (the loss scale is added here)";
        return signalPassFailure();
      }
    const std::string cotangentInput = "grad_" + cotangent;
    for (unsigned i = 0; fromCotangent && i < func.getNumArguments(); ++i)
      if (auto n = func.getArgAttrOfType<StringAttr>(i, "hg.name");
          n && n.getValue() == cotangentInput) {
        func.emitError() << "hg-autodiff: @" << function
                         << " already has an input named '" << cotangentInput
                         << "'";
        return signalPassFailure();
      }
    const std::string name = function + (fromCotangent ? "_vjp" : "_grad");
    if (module.lookupSymbol(name)) {
      module.emitError() << "hg-autodiff: @" << name << " exists already";
      return signalPassFailure();
    }

    // @F_grad (@F_vjp) starts as a copy of @F.
    OpBuilder top(module.getContext());
    top.setInsertionPointAfter(func);
    auto grad = cast<func::FuncOp>(top.clone(*func));
    grad.setSymName(name);
    // The gradient function is not itself a loss the optimizer trains on.
    grad->removeAttr("hg.loss");
    grad->removeAttr("hg.accumulate");
    Block &body = grad.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    Value seedValue = ret.getOperand(*seedIndex);

    // Gradients by value, built before the return.
    OpBuilder b(ret);
    ValueShapes shapes(grad);
    VjpContext context(b, shapes);
    DenseMap<Value, Value> grads;
    auto accumulate = [&](Value v, Value g) {
      auto [it, fresh] = grads.try_emplace(v, g);
      if (!fresh)
        it->second = b.create<AddOp>(g.getLoc(), it->second, g);
    };
    context.setLoc(seedValue.getLoc());
    Type seedElement = seedTensor.getElementType();
    // The loss scale, f32 [1], when the gradients carry one.
    Value scale;
    if (!scaleState.empty()) {
      auto scaleType = RankedTensorType::get({1}, b.getF32Type());
      unsigned index = grad.getNumArguments();
      grad.insertArgument(index, scaleType,
                          b.getDictionaryAttr(b.getNamedAttr(
                              "hg.state", b.getStringAttr(scaleState))),
                          seedValue.getLoc());
      scale = body.getArgument(index);
    }
    Value seed;
    if (fromCotangent) {
      // The input has the result's symbolic shape (hg.dims), so the runtime
      // binds its sizes with the other inputs' and checks them.
      ArrayAttr dims = context.shapeOf(seedValue);
      if (!dims)
        return signalPassFailure();
      auto inputType = seedTensor.clone(b.getF32Type());
      unsigned index = grad.getNumArguments();
      grad.insertArgument(
          index, inputType,
          b.getDictionaryAttr(
              {b.getNamedAttr("hg.name", b.getStringAttr(cotangentInput)),
               b.getNamedAttr("hg.dims", dims)}),
          seedValue.getLoc());
      seed = body.getArgument(index);
      if (scale)
        seed = b.create<MulOp>(seedValue.getLoc(), seed, scale);
      if (seedElement != inputType.getElementType())
        seed = b.create<CastOp>(seedValue.getLoc(), seedTensor, seed);
    } else {
      ArrayAttr lossShape = b.getArrayAttr(llvm::to_vector(
          llvm::map_range(seedTensor.getShape(), [&](int64_t d) -> Attribute {
            return b.getI64IntegerAttr(d);
          })));
      if (!scale) {
        seed = b.create<BroadcastToOp>(
            seedValue.getLoc(), context.scalar(1.0, seedElement), lossShape);
      } else {
        if (seedElement != getElementTypeOrSelf(scale.getType()))
          scale = b.create<CastOp>(
              seedValue.getLoc(),
              cast<RankedTensorType>(scale.getType()).clone(seedElement),
              scale);
        seed = b.create<ReshapeOp>(seedValue.getLoc(), scale, lossShape);
      }
    }
    accumulate(seedValue, seed);

    // The forward ops, last first (ops built here go after the return's
    // position in this list, so they are not visited). Only values that
    // depend on a parameter need gradients (activity analysis): position
    // tables, masks and index arithmetic are left alone.
    SmallVector<Operation *> forward;
    auto varies = [&](Value v) { return context.varies(v); };
    // A frozen parameter (hg.frozen: LoRA's base weights under
    // only-optimize) is a constant here: no gradient, and nothing is
    // computed for it.
    auto trainable = [&](BlockArgument arg) {
      return isFloat(arg) &&
             grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                               "hg.param") &&
             !grad.getArgAttr(arg.getArgNumber(), "hg.frozen");
    };
    for (BlockArgument arg : body.getArguments())
      if (trainable(arg))
        context.markVaried(arg);
    for (Operation &op : body.without_terminator()) {
      forward.push_back(&op);
      if (llvm::any_of(op.getOperands(), varies))
        for (Value r : op.getResults())
          if (isFloat(r))
            context.markVaried(r);
    }
    for (Operation *op : llvm::reverse(forward)) {
      SmallVector<Value> resultGrads;
      bool any = false;
      for (Value r : op->getResults()) {
        Value g = grads.lookup(r);
        resultGrads.push_back(g);
        any |= static_cast<bool>(g);
      }
      if (!any)
        continue;
      if (llvm::none_of(op->getOperands(), varies))
        continue; // nothing upstream depends on a parameter
      auto rule = dyn_cast<VjpOpInterface>(op);
      if (!rule) {
        op->emitError() << "hg-autodiff: no gradient rule for '"
                        << op->getName() << "'";
        return signalPassFailure();
      }
      // A result without a gradient gets zeros when the rule needs one.
      for (auto [i, r] : llvm::enumerate(op->getResults()))
        if (!resultGrads[i] && isFloat(r)) {
          ArrayAttr shape = context.shapeOf(r);
          if (!shape)
            return signalPassFailure();
          resultGrads[i] = b.create<BroadcastToOp>(
              op->getLoc(),
              context.scalar(0.0,
                             cast<ShapedType>(r.getType()).getElementType()),
              shape);
        }
      context.setLoc(op->getLoc());
      SmallVector<Value> operandGrads(op->getNumOperands());
      // A rule that fails has said why, at the op.
      if (failed(rule.buildVjp(context, resultGrads, operandGrads)))
        return signalPassFailure();
      for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
        if (g && varies(operand))
          accumulate(operand, g);
    }

    // Returns the loss (not with a cotangent) and each parameter's gradient
    // (zeros when the seed does not depend on it).
    SmallVector<Value> results;
    SmallVector<Type> types;
    SmallVector<std::string> names;
    // Results marked `hg.metric` (a reward model's scores and accuracy)
    // are kept beside the loss, in their order, with their names.
    SmallVector<unsigned> metrics;
    if (!fromCotangent) {
      results.push_back(seedValue);
      types.push_back(seedType);
      names.push_back(loss);
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        if (i != *seedIndex && func.getResultAttr(i, "hg.metric")) {
          auto n = func.getResultAttrOfType<StringAttr>(i, "hg.name");
          if (!n) {
            func.emitError() << "hg-autodiff: @" << function << "'s metric "
                             << i << " has no hg.name";
            return signalPassFailure();
          }
          results.push_back(ret.getOperand(i));
          types.push_back(ret.getOperand(i).getType());
          names.push_back(n.getValue().str());
          metrics.push_back(results.size() - 1);
        }
    }
    for (BlockArgument arg : body.getArguments()) {
      auto param =
          grad.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "hg.param");
      if (!trainable(arg))
        continue;
      Value g = grads.lookup(arg);
      if (!g) {
        context.setLoc(arg.getLoc());
        ArrayAttr shape = context.shapeOf(arg);
        if (!shape)
          return signalPassFailure();
        g = b.create<BroadcastToOp>(
            arg.getLoc(),
            context.scalar(0.0,
                           cast<ShapedType>(arg.getType()).getElementType()),
            shape);
      }
      results.push_back(g);
      types.push_back(g.getType());
      names.push_back("grad." + param.getValue().str());
    }
    b.create<func::ReturnOp>(ret.getLoc(), results);
    ret.erase();
    grad.setFunctionType(
        FunctionType::get(module.getContext(), grad.getArgumentTypes(), types));
    SmallVector<Attribute> resultAttrs;
    for (auto [i, n] : llvm::enumerate(names)) {
      SmallVector<NamedAttribute> attrs = {
          b.getNamedAttr("hg.name", b.getStringAttr(n))};
      if (llvm::is_contained(metrics, i))
        attrs.push_back(b.getNamedAttr("hg.metric", b.getUnitAttr()));
      resultAttrs.push_back(b.getDictionaryAttr(attrs));
    }
    grad.setAllResultAttrs(resultAttrs);
  }
};

} // namespace
} // namespace hybridc::hg
