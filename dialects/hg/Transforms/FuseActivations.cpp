// hg-fuse-activations: decomposed GELU (tanh and erf forms) and SiLU ->
// hg.gelu / hg.silu. Products and sums are matched as flattened trees so
// any association and operand order of the exported arithmetic fuses.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OperandMatchers.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSEACTIVATIONS
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654; // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;
constexpr double kInvSqrt2 = 0.7071067811865476;

/// Relative tolerance of constants as exporters round them to f32.
constexpr double kConstantTolerance = 1e-5;

/// Whether `a` is `b` to the relative tolerance `tol`.
bool near(double a, double b, double tol) {
  return std::fabs(a - b) <= tol * std::fabs(b);
}

/// The rounding a scalar constant brings into a product or sum (more for
/// bf16 and f16 constants than for f32 ones).
double roundingOf(Value constant) {
  return roundingTolerance(
      cast<ShapedType>(constant.getType()).getElementType(), 0);
}

/// v as scale * prod(factors): through multiplications (the root, and inner
/// ones used only there) and divisions by scalar constants. Scalars must not
/// broadcast the result; otherwise the product is not flattened. `tol` is
/// the relative tolerance `scale` carries from its constants' rounding.
struct Product {
  double scale = 1.0;
  double tol = kConstantTolerance;
  SmallVector<Value> factors;
};

void collectFactors(Value v, bool root, Value resultLike, Product &p) {
  Operation *op = v.getDefiningOp();
  bool inner = op && (root || v.hasOneUse());
  if (auto mul = dyn_cast_or_null<MulOp>(op); mul && inner) {
    collectFactors(mul.getLhs(), false, resultLike, p);
    collectFactors(mul.getRhs(), false, resultLike, p);
    return;
  }
  if (auto div = dyn_cast_or_null<DivOp>(op); div && inner)
    if (std::optional<double> c = getScalarConstant(div.getRhs());
        c && *c != 0 && isShapePreservingScalar(div.getRhs(), resultLike)) {
      p.scale /= *c;
      p.tol += roundingOf(div.getRhs());
      collectFactors(div.getLhs(), false, resultLike, p);
      return;
    }
  if (std::optional<double> c = getScalarConstant(v);
      c && isShapePreservingScalar(v, resultLike)) {
    p.scale *= *c;
    p.tol += roundingOf(v);
    return;
  }
  p.factors.push_back(v);
}

Product productOf(Value v) {
  Product p;
  collectFactors(v, true, v, p);
  return p;
}

/// v as offset + sum(terms), through additions; `tol` as for Product.
struct Sum {
  double offset = 0.0;
  double tol = kConstantTolerance;
  SmallVector<Value> terms;
};

void collectTerms(Value v, bool root, Value resultLike, Sum &s) {
  Operation *op = v.getDefiningOp();
  if (auto add = dyn_cast_or_null<AddOp>(op); add && (root || v.hasOneUse())) {
    collectTerms(add.getLhs(), false, resultLike, s);
    collectTerms(add.getRhs(), false, resultLike, s);
    return;
  }
  if (std::optional<double> c = getScalarConstant(v);
      c && isShapePreservingScalar(v, resultLike)) {
    s.offset += *c;
    s.tol += roundingOf(v);
    return;
  }
  s.terms.push_back(v);
}

Sum sumOf(Value v) {
  Sum s;
  collectTerms(v, true, v, s);
  return s;
}

/// Whether `v` is x^3: pow(x, 3), or a product of three x.
bool isCube(const Product &p, Value x) {
  if (p.factors.size() == 3)
    return llvm::all_of(p.factors, [&](Value f) { return isSameValue(f, x); });
  if (p.factors.size() != 1)
    return false;
  auto pow = p.factors[0].getDefiningOp<PowOp>();
  return pow && isSameValue(pow.getLhs(), x) && isScalarNear(pow.getRhs(), 3.0);
}

/// Whether `u` is sqrt(2/pi) * (x + 0.044715 x^3), also distributed, or
/// factored as BLOOM writes it: sqrt(2/pi) x (1 + 0.044715 x^2).
bool isGeluTanhArgument(Value u, Value x) {
  Product outer = productOf(u);
  auto isCubicTerm = [&](Value t, double coeff) {
    Product p = productOf(t);
    return near(p.scale, coeff, p.tol) && isCube(p, x);
  };
  auto isLinearTerm = [&](Value t, double coeff) {
    Product p = productOf(t);
    return near(p.scale, coeff, p.tol) && p.factors.size() == 1 &&
           isSameValue(p.factors[0], x);
  };
  if (outer.factors.size() == 1 && near(outer.scale, kSqrt2OverPi, outer.tol)) {
    Sum inner = sumOf(outer.factors[0]);
    if (inner.offset == 0 && inner.terms.size() == 2)
      for (int i = 0; i < 2; ++i)
        if (isLinearTerm(inner.terms[i], 1.0) &&
            isCubicTerm(inner.terms[1 - i], kGeluCubic))
          return true;
  }
  if (outer.factors.size() == 2 && near(outer.scale, kSqrt2OverPi, outer.tol))
    for (int i = 0; i < 2; ++i) {
      if (!isSameValue(outer.factors[i], x))
        continue;
      Sum inner = sumOf(outer.factors[1 - i]);
      if (inner.terms.size() != 1 || !near(inner.offset, 1.0, inner.tol))
        continue;
      Product square = productOf(inner.terms[0]);
      if (near(square.scale, kGeluCubic, square.tol) &&
          square.factors.size() == 2 &&
          llvm::all_of(square.factors,
                       [&](Value f) { return isSameValue(f, x); }))
        return true;
    }
  Sum distributed = sumOf(u);
  if (distributed.offset == 0 && distributed.terms.size() == 2)
    for (int i = 0; i < 2; ++i)
      if (isLinearTerm(distributed.terms[i], kSqrt2OverPi) &&
          isCubicTerm(distributed.terms[1 - i], kSqrt2OverPi * kGeluCubic))
        return true;
  return false;
}

/// Roots at a multiplication: 0.5 * x * (1 + tanh(...)) or
/// 0.5 * x * (1 + erf(x / sqrt(2))).
struct FuseGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    Product p = productOf(op.getResult());
    if (p.factors.size() != 2 || !near(p.scale, 0.5, p.tol))
      return failure();
    for (int i = 0; i < 2; ++i) {
      Value x = p.factors[i];
      if (x.getType() != op.getType())
        continue;
      Sum gate = sumOf(p.factors[1 - i]);
      if (gate.terms.size() != 1 || !near(gate.offset, 1.0, gate.tol))
        continue;
      Value t = gate.terms[0];
      if (auto tanh = t.getDefiningOp<TanhOp>();
          tanh && isGeluTanhArgument(tanh.getInput(), x)) {
        rewriter.replaceOpWithNewOp<GeluOp>(op, x,
                                            rewriter.getStringAttr("tanh"));
        return success();
      }
      if (auto erf = t.getDefiningOp<ErfOp>()) {
        Product arg = productOf(erf.getInput());
        if (arg.factors.size() == 1 && isSameValue(arg.factors[0], x) &&
            near(arg.scale, kInvSqrt2, arg.tol)) {
          rewriter.replaceOpWithNewOp<GeluOp>(op, x,
                                              rewriter.getStringAttr("none"));
          return success();
        }
      }
    }
    return failure();
  }
};

/// x * sigmoid(x) -> silu(x).
struct FuseSilu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      Value x = op->getOperand(side);
      auto sigmoid = op->getOperand(1 - side).getDefiningOp<SigmoidOp>();
      if (sigmoid && isSameValue(sigmoid.getInput(), x) &&
          x.getType() == op.getType()) {
        rewriter.replaceOpWithNewOp<SiluOp>(op, x);
        return success();
      }
    }
    return failure();
  }
};

struct FuseActivationsPass : impl::FuseActivationsBase<FuseActivationsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGelu, FuseSilu>(&getContext());
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns));
    // (1 + tanh(..)) and (1 + erf(..)) are the telltale half of a GELU.
    getOperation().walk([](Operation *op) {
      if (!isa<TanhOp, ErfOp>(op))
        return;
      for (Operation *user : op->getUsers()) {
        if (!isa<AddOp>(user))
          continue;
        Sum s = sumOf(user->getResult(0));
        if (near(s.offset, 1.0, s.tol)) {
          op->emitWarning()
              << (isa<TanhOp>(op) ? "tanh" : "erf") << " '" << describeOp(op)
              << "' looks like part of a GELU but was not "
                 "fused; it runs unfused";
          return;
        }
      }
    });
  }
};

} // namespace
} // namespace hybridc::hg
