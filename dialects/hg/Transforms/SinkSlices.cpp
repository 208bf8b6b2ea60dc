// hg-sink-slices: a slice that keeps some rows (positions, batch entries) of
// a row-wise op's result is taken from the op's input instead, so the op
// computes only the rows that are used. @prefill keeps the last position's
// logits: this moves that slice above the LM head and the final norm, which
// then run on one position per row instead of the whole prompt.
//   slice(linear(x, W, b, residual r)) -> linear(slice(x), W, b, slice(r))
//   slice(layer_norm / rms_norm(x))    -> norm(slice(x))
//   slice(cast(x))                     -> cast(slice(x))
// A slice qualifies when it slices only axes the op treats as rows (not
// linear's last axis, not the normalised axes) and the op's result has no
// other use.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace hybridc::hg {

#define GEN_PASS_DEF_SINKSLICES
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// Whether `slice` cuts only axes below `firstOwnAxis` (the op's own axes
/// start there) of an operand the op produced for it alone.
bool slicesRowsOnly(SliceOp slice, int64_t firstOwnAxis) {
  Operation *producer = slice.getInput().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  const int64_t rank = cast<RankedTensorType>(slice.getType()).getRank();
  for (int64_t axis : slice.getAxes())
    if ((axis < 0 ? axis + rank : axis) >= firstOwnAxis)
      return false;
  return true;
}

/// The same slice of `x`, a value shaped like the sliced one in the axes
/// the slice cuts (its own trailing axes may differ).
Value sliceLike(PatternRewriter &rewriter, SliceOp slice, Value x) {
  auto from = cast<RankedTensorType>(x.getType());
  auto sliced = cast<RankedTensorType>(slice.getType());
  SmallVector<int64_t> shape(from.getShape());
  const int64_t rank = from.getRank();
  for (int64_t axis : slice.getAxes()) {
    const int64_t a = axis < 0 ? axis + rank : axis;
    shape[a] = sliced.getDimSize(a);
  }
  return rewriter.create<SliceOp>(slice.getLoc(), from.clone(shape), x,
                                  slice.getAxesAttr(), slice.getStartsAttr(),
                                  slice.getEndsAttr(), slice.getStepsAttr());
}

struct SinkThroughLinear : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto linear = op.getInput().getDefiningOp<LinearOp>();
    if (!linear)
      return failure();
    const int64_t rank = linear.getType().getRank();
    if (rank < 2 || !slicesRowsOnly(op, rank - 1))
      return rewriter.notifyMatchFailure(op, "not rows of a sole linear");
    Value input = sliceLike(rewriter, op, linear.getInput());
    Value residual = linear.getResidual()
                         ? sliceLike(rewriter, op, linear.getResidual())
                         : Value();
    rewriter.replaceOpWithNewOp<LinearOp>(
        op, op.getType(), input, linear.getWeight(), linear.getBias(), residual,
        linear.getNormWeight(), linear.getNormBias(),
        linear.getTransposeWeight(), linear.getActivation(), linear.getNorm(),
        linear.getNormEpsilon());
    // Gone now, so that the slice can sink further into its input.
    rewriter.eraseOp(linear);
    return success();
  }
};

template <typename NormOp> struct SinkThroughNorm : OpRewritePattern<SliceOp> {
  using OpRewritePattern<SliceOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto norm = op.getInput().template getDefiningOp<NormOp>();
    if (!norm)
      return failure();
    const int64_t rank = norm.getType().getRank();
    std::optional<int64_t> axis = normalizeAxis(norm.getAxis(), rank);
    if (!axis || !slicesRowsOnly(op, *axis))
      return rewriter.notifyMatchFailure(op, "not rows of a sole norm");
    Value rows = sliceLike(rewriter, op, norm.getInput());
    Operation *copy = rewriter.clone(*norm);
    copy->setOperand(0, rows);
    copy->getResult(0).setType(op.getType());
    rewriter.replaceOp(op, copy->getResults());
    rewriter.eraseOp(norm);
    return success();
  }
};

/// slice(cast(x)) -> cast(slice(x)): the logits' cast to f32 sits between
/// the slice and the LM head.
struct SinkThroughCast : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    auto cast = op.getInput().getDefiningOp<CastOp>();
    if (!cast || !cast->hasOneUse())
      return failure();
    Value rows = sliceLike(rewriter, op, cast.getInput());
    rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), rows);
    rewriter.eraseOp(cast);
    return success();
  }
};

struct SinkSlicesPass : impl::SinkSlicesBase<SinkSlicesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SinkThroughLinear, SinkThroughNorm<LayerNormOp>,
                 SinkThroughNorm<RmsNormOp>, SinkThroughCast>(&getContext());
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns));
  }
};

} // namespace
} // namespace hybridc::hg
