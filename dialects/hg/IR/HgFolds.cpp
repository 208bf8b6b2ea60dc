// Folders and canonicalisation patterns of the hg ops: the rewrites that
// remove no-op data movement the frontends emit (ONNX exports are full of
// identity reshapes and transpose pairs).
#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace hybridc::hg;

namespace {

/// A splat constant re-typed to `type`, which must be static.
OpFoldResult resplat(Attribute constant, RankedTensorType type) {
  auto splat = dyn_cast_or_null<SplatElementsAttr>(constant);
  if (!splat || !type.hasStaticShape())
    return {};
  return SplatElementsAttr::get(type, splat.getSplatValue<Attribute>());
}

} // namespace

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// reshape
//===----------------------------------------------------------------------===//

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  RankedTensorType in = getInput().getType(), out = getType();
  // Equal element counts pin a single dynamic dim, so equal types with at
  // most one `?` are the same shape.
  if (in == out && llvm::count_if(in.getShape(), ShapedType::isDynamic) <= 1)
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (out.hasStaticShape() && in.hasStaticShape())
      return dense.reshape(out);
  return {};
}

namespace {

/// reshape(reshape(x)) -> reshape(x): only the last shape matters.
struct FoldReshapeOfReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput(),
                                           op.getShapeAttr());
    return success();
  }
};

} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<FoldReshapeOfReshape>(context);
}

//===----------------------------------------------------------------------===//
// transpose
//===----------------------------------------------------------------------===//

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() &&
      llvm::equal(getPerm(), llvm::seq<int64_t>(0, getPerm().size())))
    return getInput();
  return resplat(adaptor.getInput(), getType());
}

namespace {

/// transpose(transpose(x, p), q) -> transpose(x, p o q); the identity that
/// may result is removed by the folder.
struct FoldTransposeOfTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    ArrayRef<int64_t> innerPerm = inner.getPerm();
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPerm())
      perm.push_back(innerPerm[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(
        op, op.getType(), inner.getInput(),
        rewriter.getDenseI64ArrayAttr(perm));
    return success();
  }
};

} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<FoldTransposeOfTranspose>(context);
}

//===----------------------------------------------------------------------===//
// broadcast_to, slice, concat
//===----------------------------------------------------------------------===//

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  // A dynamic input dim may be 1 and expand, so only static types are known
  // to be a no-op.
  if (getInput().getType() == getType() && getType().hasStaticShape())
    return getInput();
  return resplat(adaptor.getInput(), getType());
}

OpFoldResult SliceOp::fold(FoldAdaptor adaptor) {
  RankedTensorType in = getInput().getType();
  if (in != getType())
    return resplat(adaptor.getInput(), getType());
  for (auto [axis, start, end, step] :
       llvm::zip(getAxes(), getStarts(), getEnds(), getSteps())) {
    if (step != 1)
      return {};
    int64_t dim = in.getDimSize(axis < 0 ? axis + in.getRank() : axis);
    if (ShapedType::isDynamic(dim)) {
      // Without the size only [0, end-of-dim) is known to take everything.
      if (start != 0 || end != std::numeric_limits<int64_t>::max())
        return {};
      continue;
    }
    SliceBounds b = resolveSliceBounds(dim, start, end, step);
    if (b.start != 0 || b.length != dim)
      return {};
  }
  return getInput();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

//===----------------------------------------------------------------------===//
// cumsum
//===----------------------------------------------------------------------===//

namespace {

/// cumsum(broadcast_to(c), axis) -> broadcast_to(iota(c, c) along axis):
/// the running sum of a splat is an arithmetic sequence. Exports compute
/// position ids this way (cumsum of an all-ones mask); as an iota they are
/// positions a decode step can offset. Only integer-valued c, where both
/// forms are exact in every element type iota takes.
struct CumSumOfSplatIsIota : OpRewritePattern<CumSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CumSumOp op,
                                PatternRewriter &rewriter) const override {
    auto broadcast = op.getInput().getDefiningOp<BroadcastToOp>();
    if (!broadcast || op.getReverse())
      return failure();
    SplatElementsAttr splat;
    if (!matchPattern(broadcast.getInput(), m_Constant(&splat)))
      return failure();
    RankedTensorType type = op.getType();
    Type element = type.getElementType();
    if (!isa<Float32Type, BFloat16Type, Float16Type>(element) &&
        !element.isInteger(64) && !element.isInteger(32))
      return failure();
    double c =
        isa<FloatType>(element)
            ? splat.getSplatValue<APFloat>().convertToDouble()
            : static_cast<double>(splat.getSplatValue<APInt>().getSExtValue());
    if (c != std::floor(c) || std::fabs(c) > 1024)
      return failure();
    int64_t rank = type.getRank();
    std::optional<int64_t> normalized = normalizeAxis(op.getAxis(), rank);
    if (!normalized)
      return failure();
    const int64_t axis = *normalized;
    ArrayAttr shape = broadcast.getShape();
    Attribute length = shape[axis];
    Location loc = op.getLoc();
    Value iota = rewriter.create<IotaOp>(
        loc, RankedTensorType::get({type.getDimSize(axis)}, element),
        rewriter.getArrayAttr({length}),
        rewriter.getF64FloatAttr(op.getExclusive() ? 0.0 : c),
        rewriter.getF64FloatAttr(c));
    SmallVector<int64_t> lineShape(rank, 1);
    SmallVector<Attribute> lineDims(rank, rewriter.getI64IntegerAttr(1));
    lineShape[axis] = type.getDimSize(axis);
    lineDims[axis] = length;
    Value line = rewriter.create<ReshapeOp>(
        loc, RankedTensorType::get(lineShape, element), iota,
        rewriter.getArrayAttr(lineDims));
    rewriter.replaceOpWithNewOp<BroadcastToOp>(op, type, line, shape);
    return success();
  }
};

} // namespace

void CumSumOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                           MLIRContext *context) {
  results.add<CumSumOfSplatIsIota>(context);
}
