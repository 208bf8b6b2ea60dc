// hg-fuse-rotary: x * cos + rotate_half(x) * sin -> hg.rotary, where
// rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]) (GPT-NeoX / Llama),
// also when only the first rotary_dim features rotate.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/OperandMatchers.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSEROTARY
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

/// For a slice of the last dim (static size `dim`) of a rank-4 tensor, the
/// sliced tensor, first index and length.
struct LastDimSlice {
  Value input;
  int64_t start, length;
};

std::optional<LastDimSlice> matchLastDimSlice(Value v) {
  auto slice = v.getDefiningOp<SliceOp>();
  if (!slice || slice.getAxes().size() != 1 || slice.getSteps()[0] != 1)
    return std::nullopt;
  auto type = slice.getInput().getType();
  int64_t rank = type.getRank(), axis = slice.getAxes()[0];
  if (axis < 0)
    axis += rank;
  int64_t dim = type.getDimSize(rank - 1);
  if (axis != rank - 1 || ShapedType::isDynamic(dim))
    return std::nullopt;
  SliceBounds b =
      resolveSliceBounds(dim, slice.getStarts()[0], slice.getEnds()[0], 1);
  return LastDimSlice{slice.getInput(), b.start, b.length};
}

/// concat(-x[..., h:2h], x[..., :h]) over the last dim: x and 2h.
std::optional<std::pair<Value, int64_t>> matchRotateHalf(Value v) {
  auto concat = v.getDefiningOp<ConcatOp>();
  if (!concat || concat.getInputs().size() != 2)
    return std::nullopt;
  int64_t rank = concat.getType().getRank();
  if (concat.getAxis() != rank - 1 && concat.getAxis() != -1)
    return std::nullopt;
  auto neg = concat.getInputs()[0].getDefiningOp<NegOp>();
  if (!neg)
    return std::nullopt;
  std::optional<LastDimSlice> second = matchLastDimSlice(neg.getInput());
  std::optional<LastDimSlice> first = matchLastDimSlice(concat.getInputs()[1]);
  if (!first || !second || !isSameValue(first->input, second->input))
    return std::nullopt;
  int64_t h = first->length;
  if (h <= 0 || first->start != 0 || second->start != h || second->length != h)
    return std::nullopt;
  return std::make_pair(first->input, 2 * h);
}

/// cos / sin broadcast against x [B, H, T, D] from [B or 1, 1, T, rd],
/// [1, T, rd] or [T, rd] (rd = `rd`): the [B or 1, T, rd] table as an
/// existing value or the shape to reshape it to.
std::optional<std::pair<Value, SymShape>>
matchTable(Value table, const SymShape &x, int64_t rd, ValueShapes &shapes) {
  std::optional<SymShape> s = shapes.get(table);
  if (!s || s->size() < 2 || s->size() > 4)
    return std::nullopt;
  const SymShape &t = *s;
  size_t r = t.size();
  if (t[r - 1] != SymExpr(rd) || t[r - 2] != x[2])
    return std::nullopt;
  SymExpr batch(1);
  if (r == 4) {
    if (t[1] != SymExpr(1) || (t[0] != SymExpr(1) && t[0] != x[0]))
      return std::nullopt;
    batch = t[0];
  } else if (r == 3 && t[0] != SymExpr(1)) {
    return std::nullopt; // that dim lines up with the heads
  }
  SymShape want = {batch, x[2], SymExpr(rd)};
  for (Value cur = table;;) {
    if (shapes.get(cur) == want)
      return std::make_pair(cur, want);
    auto reshape = cur.getDefiningOp<ReshapeOp>();
    if (!reshape)
      break;
    cur = reshape.getInput();
  }
  return std::make_pair(Value(), want);
}

/// A cos or sin table for hg.rotary: an existing [B or 1, T, rd] value, or
/// `original` to reshape to `shape`.
struct Table {
  Value existing, original;
  SymShape shape;

  Value materialize(PatternRewriter &rewriter, Location loc,
                    ValueShapes &shapes) const {
    if (existing)
      return existing;
    return rewriter
        .create<ReshapeOp>(loc, original,
                           shapes.shapeAttr(rewriter.getContext(), shape))
        .getResult();
  }

  RankedTensorType type() const {
    if (existing)
      return cast<RankedTensorType>(existing.getType());
    SmallVector<int64_t> dims;
    for (const SymExpr &d : shape)
      dims.push_back(d.constant().value_or(ShapedType::kDynamic));
    return RankedTensorType::get(
        dims, cast<RankedTensorType>(original.getType()).getElementType());
  }
};

struct RotaryMatch {
  Value x;
  Table cos, sin;
};

/// a + b with a = x * cos and b = rotate_half(x) * sin (any order).
std::optional<RotaryMatch> matchRotary(AddOp add, ValueShapes &shapes) {
  for (int side = 0; side < 2; ++side) {
    auto cosMul = add->getOperand(side).getDefiningOp<MulOp>();
    auto sinMul = add->getOperand(1 - side).getDefiningOp<MulOp>();
    if (!cosMul || !sinMul)
      continue;
    for (int s = 0; s < 2; ++s) {
      std::optional<std::pair<Value, int64_t>> rot =
          matchRotateHalf(sinMul->getOperand(s));
      if (!rot)
        continue;
      Value x = rot->first, sin = sinMul->getOperand(1 - s), cos;
      for (int c = 0; c < 2 && !cos; ++c)
        if (isSameValue(cosMul->getOperand(c), x))
          cos = cosMul->getOperand(1 - c);
      if (!cos)
        continue;
      auto xType = cast<RankedTensorType>(x.getType());
      std::optional<SymShape> xs = shapes.get(x);
      if (xType.getRank() != 4 || !xs || add.getType() != xType ||
          xType.getDimSize(3) != rot->second)
        continue;
      auto cosTable = matchTable(cos, *xs, rot->second, shapes);
      auto sinTable = matchTable(sin, *xs, rot->second, shapes);
      if (!cosTable || !sinTable || cosTable->second != sinTable->second)
        continue;
      return RotaryMatch{x, Table{cosTable->first, cos, cosTable->second},
                         Table{sinTable->first, sin, sinTable->second}};
    }
  }
  return std::nullopt;
}

struct FuseRotaryHalf : OpRewritePattern<AddOp> {
  FuseRotaryHalf(MLIRContext *context, ValueShapes &shapes)
      : OpRewritePattern(context), shapes(shapes) {}
  ValueShapes &shapes;
  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    std::optional<RotaryMatch> m = matchRotary(op, shapes);
    if (!m)
      return rewriter.notifyMatchFailure(op,
                                         "not x * cos + rotate_half(x) * sin");
    if (m->cos.type() != m->sin.type())
      return rewriter.notifyMatchFailure(op, "cos and sin types differ");
    Location loc = op.getLoc();
    Value cos = m->cos.materialize(rewriter, loc, shapes);
    Value sin = m->sin.materialize(rewriter, loc, shapes);
    rewriter.replaceOpWithNewOp<RotaryOp>(op, m->x, cos, sin,
                                          rewriter.getBoolAttr(false));
    return success();
  }
};

/// Partial rotary: concat(rotary(x[..., :rd]), x[..., rd:]) -> rotary(x),
/// hg.rotary passing features past rotary_dim through.
struct ExtendPartialRotary : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2 || op.getType().getRank() != 4 ||
        (op.getAxis() != 3 && op.getAxis() != -1))
      return failure();
    auto rotary = op.getInputs()[0].getDefiningOp<RotaryOp>();
    if (!rotary || rotary.getInterleaved() || !rotary->hasOneUse())
      return failure();
    std::optional<LastDimSlice> head = matchLastDimSlice(rotary.getInput());
    std::optional<LastDimSlice> tail = matchLastDimSlice(op.getInputs()[1]);
    if (!head || !tail || !isSameValue(head->input, tail->input) ||
        head->start != 0 || tail->start != head->length ||
        head->input.getType() != op.getType() ||
        tail->start + tail->length !=
            cast<RankedTensorType>(op.getType()).getDimSize(3))
      return failure();
    rewriter.replaceOpWithNewOp<RotaryOp>(op, head->input, rotary.getCos(),
                                          rotary.getSin(),
                                          rewriter.getBoolAttr(false));
    return success();
  }
};

struct FuseRotaryPass : impl::FuseRotaryBase<FuseRotaryPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    ValueShapes shapes(getOperation());
    ValueShapesListener listener(shapes);
    patterns.add<FuseRotaryHalf>(&getContext(), shapes);
    patterns.add<ExtendPartialRotary>(&getContext());
    GreedyRewriteConfig config;
    config.listener = &listener;
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                       config);
  }
};

} // namespace
} // namespace hybridc::hg
