// hg-fuse-norms: decomposed RMSNorm and LayerNorm -> hg.rms_norm and
// hg.layer_norm (with their weight and bias when those follow).
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OperandMatchers.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using hybrid::SymShape;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSENORMS
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// For v = 1 / sqrt(x) in any spelling (rsqrt, reciprocal(sqrt), pow -0.5,
/// 1 / sqrt), the x.
Value matchReciprocalSqrt(Value v) {
  if (auto r = v.getDefiningOp<RsqrtOp>())
    return r.getInput();
  if (auto r = v.getDefiningOp<ReciprocalOp>())
    if (auto s = r.getInput().getDefiningOp<SqrtOp>())
      return s.getInput();
  if (auto p = v.getDefiningOp<PowOp>())
    if (isScalarNear(p.getRhs(), -0.5) &&
        isShapePreservingScalar(p.getRhs(), p.getLhs()))
      return p.getLhs();
  if (auto d = v.getDefiningOp<DivOp>())
    if (isScalarNear(d.getLhs(), 1.0) &&
        isShapePreservingScalar(d.getLhs(), d.getRhs()))
      if (auto s = d.getRhs().getDefiningOp<SqrtOp>())
        return s.getInput();
  return Value();
}

/// For v = y * y or y ^ 2, the y.
Value matchSquare(Value v) {
  if (auto p = v.getDefiningOp<PowOp>())
    if (isScalarNear(p.getRhs(), 2.0) &&
        isShapePreservingScalar(p.getRhs(), p.getLhs()))
      return p.getLhs();
  if (auto m = v.getDefiningOp<MulOp>())
    if (isSameValue(m.getLhs(), m.getRhs()))
      return m.getLhs();
  return Value();
}

/// x * r (r = 1/sqrt(var)) or x / sqrt(var): the x and var.
std::optional<std::pair<Value, Value>> matchNormalize(Operation *op) {
  if (auto mul = dyn_cast<MulOp>(op)) {
    for (int side = 0; side < 2; ++side)
      if (Value var = matchReciprocalSqrt(mul->getOperand(side)))
        return std::make_pair(mul->getOperand(1 - side), var);
    return std::nullopt;
  }
  if (auto div = dyn_cast<DivOp>(op))
    if (auto s = div.getRhs().getDefiningOp<SqrtOp>())
      return std::make_pair(div.getLhs(), s.getInput());
  return std::nullopt;
}

/// mean(y^2 over axes [k, rank)) + eps: the y, eps and k.
struct MeanSquare {
  Value y;
  double eps = 0;
  int64_t axis = -1;
};

/// The first of a reduce's axes if they are exactly the trailing ones.
std::optional<int64_t> trailingAxes(ReduceMeanOp mean) {
  int64_t rank = mean.getInput().getType().getRank();
  SmallVector<int64_t> axes;
  for (int64_t a : mean.getAxes())
    axes.push_back(a < 0 ? a + rank : a);
  llvm::sort(axes);
  if (axes.empty() || !mean.getKeepdims())
    return std::nullopt;
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size() - i))
      return std::nullopt;
  return axes.front();
}

std::optional<MeanSquare> matchMeanSquare(Value var) {
  MeanSquare ms;
  Value mean = var;
  if (auto add = var.getDefiningOp<AddOp>()) {
    for (int side = 0; side < 2; ++side) {
      std::optional<double> eps = getScalarConstant(add->getOperand(side));
      if (eps && *eps >= 0 &&
          isShapePreservingScalar(add->getOperand(side),
                                  add->getOperand(1 - side))) {
        ms.eps = *eps;
        mean = add->getOperand(1 - side);
        break;
      }
    }
  }
  auto reduce = mean.getDefiningOp<ReduceMeanOp>();
  if (!reduce)
    return std::nullopt;
  std::optional<int64_t> axis = trailingAxes(reduce);
  ms.y = matchSquare(reduce.getInput());
  if (!axis || !ms.y)
    return std::nullopt;
  ms.axis = *axis;
  return ms;
}

/// Whether `v` has the shape of the normalised dims of `x` (dims [axis, rank)).
bool isNormParam(Value v, Value x, int64_t axis, ValueShapes &shapes) {
  std::optional<SymShape> vs = shapes.get(v), xs = shapes.get(x);
  if (!vs || !xs || !hasFloatElements(v))
    return false;
  return *vs == SymShape(xs->begin() + axis, xs->end());
}

/// The op using `v` if it is its only user and of type OpTy, with `v` as one
/// operand; `other` gets the other operand.
template <typename OpTy> OpTy soleUser(Value v, Value &other) {
  if (!v.hasOneUse())
    return OpTy();
  auto user = dyn_cast<OpTy>(*v.getUsers().begin());
  if (!user)
    return OpTy();
  other = user->getOperand(0) == v ? user->getOperand(1) : user->getOperand(0);
  return user;
}

/// Roots at the normalising mul / div: x * rsqrt(mean(x^2) + eps) becomes
/// hg.rms_norm; (x - mean(x)) * rsqrt(mean((x - mean(x))^2) + eps) becomes
/// hg.layer_norm. A following "* w" (and for LayerNorm "+ b") of the
/// normalised shape is absorbed.
template <typename RootOp> struct FuseNorm : OpRewritePattern<RootOp> {
  FuseNorm(MLIRContext *context, ValueShapes &shapes)
      : OpRewritePattern<RootOp>(context), shapes(shapes) {}
  ValueShapes &shapes;

  LogicalResult matchAndRewrite(RootOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<std::pair<Value, Value>> norm = matchNormalize(op);
    if (!norm)
      return failure();
    auto [x, var] = *norm;
    std::optional<MeanSquare> ms = matchMeanSquare(var);
    if (!ms || !isSameValue(ms->y, x))
      return failure();
    // LayerNorm when x is centred: x = z - mean(z) over the same axes.
    Value input = x;
    bool layerNorm = false;
    if (auto sub = x.getDefiningOp<SubOp>())
      if (auto mean = sub.getRhs().getDefiningOp<ReduceMeanOp>())
        if (isSameValue(mean.getInput(), sub.getLhs()) &&
            trailingAxes(mean) == ms->axis) {
          input = sub.getLhs();
          layerNorm = true;
        }
    auto inputType = cast<RankedTensorType>(input.getType());
    if (!hasFloatElements(input) || op->getResult(0).getType() != inputType)
      return failure();

    Operation *last = op;
    Value weight, bias, other;
    Value normalized = op->getResult(0);
    if (auto mul = soleUser<MulOp>(normalized, other);
        mul && isNormParam(other, input, ms->axis, shapes) &&
        mul.getType() == inputType) {
      weight = other;
      last = mul;
      normalized = mul.getResult();
    }
    if (layerNorm)
      if (auto add = soleUser<AddOp>(normalized, other);
          add && isNormParam(other, input, ms->axis, shapes) &&
          add.getType() == inputType) {
        bias = other;
        last = add;
      }

    rewriter.setInsertionPoint(last);
    Value fused;
    if (layerNorm)
      fused =
          rewriter.create<LayerNormOp>(last->getLoc(), input, weight, bias,
                                       rewriter.getF64FloatAttr(ms->eps),
                                       rewriter.getI64IntegerAttr(ms->axis));
    else
      fused = rewriter.create<RmsNormOp>(last->getLoc(), input, weight,
                                         rewriter.getF64FloatAttr(ms->eps),
                                         rewriter.getI64IntegerAttr(ms->axis));
    rewriter.replaceOp(last, fused);
    return success();
  }
};

struct FuseNormsPass : impl::FuseNormsBase<FuseNormsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    ValueShapes shapes(getOperation());
    ValueShapesListener listener(shapes);
    patterns.add<FuseNorm<MulOp>, FuseNorm<DivOp>>(&getContext(), shapes);
    GreedyRewriteConfig config;
    config.listener = &listener;
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                       config);
    getOperation().walk([](Operation *op) {
      if (!isa<RsqrtOp, ReciprocalOp, PowOp, DivOp>(op))
        return;
      if (isa<RsqrtOp>(op) || matchReciprocalSqrt(op->getResult(0)))
        op->emitWarning() << "reciprocal square root '" << describeOp(op)
                          << "' not fused into a norm; it runs unfused";
    });
  }
};

} // namespace
} // namespace hybridc::hg
