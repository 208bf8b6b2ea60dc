// hg-fuse-attention: matmul(softmax(q k^T * scale + mask), v) -> hg.attention,
// recognising the key transposes, grouped-query KV repeats and causal masks
// that exported graphs spell out op by op, and BLOOM's form: heads folded
// into the batch, ALiBi added before the mask.
#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/MaskAnalysis.h"
#include "dialects/hg/Transforms/OperandMatchers.h"
#include "dialects/hg/Transforms/Passes.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc::hg {

#define GEN_PASS_DEF_FUSEATTENTION
#include "dialects/hg/Transforms/Passes.h.inc"

namespace {

//===----------------------------------------------------------------------===//
// Scalar scales through layout ops
//===----------------------------------------------------------------------===//

/// A value seen through multiplications by scalar constants: `value` is
/// `base` times `scale`, with the reshapes / transposes of `layout`
/// (top-down) applied on the way. Nothing is rewritten until rebuild().
struct ScaledValue {
  Value value;
  Value base;
  double scale = 1.0;
  SmallVector<Operation *> layout;
  bool hasScale = false;

  /// `value` without the scalar factors (re-creating the layout ops above
  /// them on the unscaled input).
  Value rebuild(PatternRewriter &rewriter) const {
    if (!hasScale)
      return value;
    Value v = base;
    for (Operation *op : llvm::reverse(layout)) {
      IRMapping map;
      map.map(op->getOperand(0), v);
      v = rewriter.clone(*op, map)->getResult(0);
    }
    return v;
  }
};

/// Walks down from `v` through single-use reshapes, transposes and
/// multiplications / divisions by scalar constants.
ScaledValue peelScale(Value v) {
  ScaledValue s{v, v};
  SmallVector<Operation *> layout;
  Value cur = v;
  while (true) {
    Operation *op = cur.getDefiningOp();
    if (!op || (cur != v && !cur.hasOneUse()))
      break;
    if (isa<ReshapeOp, TransposeOp>(op)) {
      layout.push_back(op);
      cur = op->getOperand(0);
      continue;
    }
    std::optional<double> c;
    Value rest;
    if (auto mul = dyn_cast<MulOp>(op)) {
      for (int side = 0; side < 2 && !c; ++side)
        if (isShapePreservingScalar(mul->getOperand(side), mul)) {
          c = getScalarConstant(mul->getOperand(side));
          rest = mul->getOperand(1 - side);
        }
    } else if (auto div = dyn_cast<DivOp>(op)) {
      if (isShapePreservingScalar(div.getRhs(), div))
        if (std::optional<double> d = getScalarConstant(div.getRhs());
            d && *d != 0) {
          c = 1.0 / *d;
          rest = div.getLhs();
        }
    }
    if (!c || !hasFloatElements(op->getResult(0)))
      break;
    s.scale *= *c;
    s.hasScale = true;
    s.base = rest;
    s.layout = layout; // the layout ops above this factor get rebuilt
    cur = rest;
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Keys and values as [B, H, S, D]
//===----------------------------------------------------------------------===//

/// A [B, H, S, D] tensor that either exists (`value`) or is `source`
/// transposed by `perm` (when set) or else reshaped to `shape`.
struct HeadsTensor {
  Value value;
  Value source;
  SymShape shape;
  SmallVector<int64_t> perm;

  Value materialize(PatternRewriter &rewriter, Location loc,
                    ValueShapes &shapes) const {
    if (value)
      return value;
    if (!perm.empty())
      return rewriter
          .create<TransposeOp>(loc, source, rewriter.getDenseI64ArrayAttr(perm))
          .getResult();
    return rewriter
        .create<ReshapeOp>(loc, source,
                           shapes.shapeAttr(rewriter.getContext(), shape))
        .getResult();
  }

  /// The tensor type the value has or its reshape will have.
  RankedTensorType type() const {
    if (value)
      return cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> dims;
    for (const SymExpr &d : shape)
      dims.push_back(d.constant().value_or(ShapedType::kDynamic));
    return RankedTensorType::get(
        dims, cast<RankedTensorType>(source.getType()).getElementType());
  }
};

/// `x` seen as `shape`, preferring an existing value of that shape among
/// the inputs of the reshapes that produce `x`.
HeadsTensor asShape(Value x, const SymShape &shape, ValueShapes &shapes) {
  for (Value cur = x;;) {
    if (shapes.get(cur) == shape)
      return {cur, Value(), shape};
    auto reshape = cur.getDefiningOp<ReshapeOp>();
    if (!reshape)
      break;
    cur = reshape.getInput();
  }
  return {Value(), x, shape};
}

/// The first value below `x` that is not produced by a reshape (reshapes
/// compose, so `x` is a reshape of it).
Value throughReshapes(Value x) {
  while (auto reshape = x.getDefiningOp<ReshapeOp>())
    x = reshape.getInput();
  return x;
}

/// Grouped-query attention repeats each KV head `n` times:
/// reshape(broadcast_to(kv[B, Hkv, 1, S, D], [B, Hkv, n, S, D]),
///         [B, Hkv * n, S, D]).
/// For a [B, H, S, D] tensor built that way, the unrepeated kv.
std::optional<HeadsTensor> unrepeatKv(const HeadsTensor &heads,
                                      ValueShapes &shapes) {
  // The repeat is recognised on [B, H, S, D]; a pending transpose would
  // reorder the broadcast dims.
  if (!heads.perm.empty())
    return std::nullopt;
  Value x = heads.value ? heads.value : heads.source;
  auto bcast = throughReshapes(x).getDefiningOp<BroadcastToOp>();
  if (!bcast)
    return std::nullopt;
  std::optional<SymShape> out = shapes.get(bcast.getResult());
  std::optional<SymShape> in = shapes.get(bcast.getInput());
  const SymShape &h = heads.shape;
  if (!out || !in || out->size() != 5 || in->size() != 5)
    return std::nullopt;
  const SymShape &o = *out;
  if ((*in)[0] != o[0] || (*in)[1] != o[1] || (*in)[2] != SymExpr(1) ||
      (*in)[3] != o[3] || (*in)[4] != o[4])
    return std::nullopt;
  if (o[0] != h[0] || o[1] * o[2] != h[1] || o[3] != h[2] || o[4] != h[3])
    return std::nullopt;
  return asShape(bcast.getInput(), {o[0], o[1], o[3], o[4]}, shapes);
}

/// For k^T [B, H, D, S], the keys [B, H, S, D]: an hg.transpose whose
/// permutation ends by swapping the last two dims, or
/// reshape(transpose(x[B*H, S, D], [0, 2, 1]), [B, H, D, S]).
std::optional<HeadsTensor> keysOfTransposed(Value kT, ValueShapes &shapes) {
  std::optional<SymShape> kTShape = shapes.get(kT);
  if (!kTShape || kTShape->size() != 4)
    return std::nullopt;
  const SymShape &t = *kTShape;
  SymShape keys = {t[0], t[1], t[3], t[2]};
  if (auto transpose = kT.getDefiningOp<TransposeOp>()) {
    // transpose(x, p) == transpose(transpose(x, p'), [0, 1, 3, 2]) with
    // p' = p with its last two entries swapped: the canonicalizer folds
    // eager attention's k.transpose(1, 2).transpose(2, 3) into one
    // transpose [0, 2, 3, 1], whose keys are transpose(x, [0, 2, 1, 3]).
    ArrayRef<int64_t> p = transpose.getPerm();
    SmallVector<int64_t> keysPerm = {p[0], p[1], p[3], p[2]};
    if (llvm::equal(keysPerm, llvm::seq<int64_t>(0, 4)))
      return HeadsTensor{transpose.getInput(), Value(), keys};
    return HeadsTensor{Value(), transpose.getInput(), keys, keysPerm};
  }
  auto reshape = kT.getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  auto transpose = reshape.getInput().getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getPerm() != ArrayRef<int64_t>{0, 2, 1})
    return std::nullopt;
  Value x3 = transpose.getInput();
  std::optional<SymShape> s3 = shapes.get(x3);
  if (!s3 || (*s3)[0] != t[0] * t[1] || (*s3)[1] != t[3] || (*s3)[2] != t[2])
    return std::nullopt;
  return asShape(x3, keys, shapes);
}

//===----------------------------------------------------------------------===//
// The pattern
//===----------------------------------------------------------------------===//

struct AttentionMatch {
  ScaledValue query;
  HeadsTensor keys, values;
  Value mask;
  double scale = 1.0;
  bool causal = false;
  int64_t slidingWindow = 0;
};

/// The additive mask of scores [B, H, T, S], when there is one, in
/// hg.attention's terms: a proven causal (or sliding-window) mask becomes
/// the attributes, one that masks nothing goes, any other stays additive.
/// Why it cannot fuse, or null.
const char *resolveMask(AttentionMatch &m, const SymShape &scores,
                        ValueShapes &shapes) {
  if (!m.mask)
    return nullptr;
  std::optional<SymShape> maskShape = shapes.get(m.mask);
  if (!maskShape || maskShape->size() > 4)
    return "mask shape unknown";
  size_t off = 4 - maskShape->size();
  for (size_t i = 0; i < maskShape->size(); ++i)
    if ((*maskShape)[i] != SymExpr(1) && (*maskShape)[i] != scores[i + off])
      return "mask would broadcast the scores";
  MaskProof proof = analyzeAttentionMask(m.mask, scores, shapes);
  switch (proof.meaning) {
  case MaskMeaning::Causal:
    m.causal = true;
    m.slidingWindow = proof.slidingWindow;
    m.mask = Value();
    break;
  case MaskMeaning::None:
    m.mask = Value();
    break;
  case MaskMeaning::Unknown:
    break;
  }
  return nullptr;
}

/// The query of q @ k^T and the scale of both the scores (`scores`) and
/// the query into `m`; returns k^T, a factor right on it joined to the
/// scale too (one below the transpose stays in the keys).
Value peelProductScales(MatMulOp qk, const ScaledValue &scores,
                        AttentionMatch &m) {
  m.query = peelScale(qk.getLhs());
  m.scale = scores.scale * m.query.scale;
  Value kT = qk.getRhs();
  if (ScaledValue keysT = peelScale(kT);
      keysT.hasScale && keysT.layout.empty()) {
    kT = keysT.base;
    m.scale *= keysT.scale;
  }
  return kT;
}

struct FuseScaledDotProductAttention : OpRewritePattern<MatMulOp> {
  FuseScaledDotProductAttention(MLIRContext *context, ValueShapes &shapes)
      : OpRewritePattern(context), shapes(shapes) {}
  ValueShapes &shapes;

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    AttentionMatch m;
    if (failed(match(op, shapes, m, rewriter)))
      return failure();
    Location loc = op.getLoc();
    Value q = m.query.rebuild(rewriter);
    Value k = m.keys.materialize(rewriter, loc, shapes);
    Value v = m.values.materialize(rewriter, loc, shapes);
    rewriter.replaceOpWithNewOp<AttentionOp>(
        op, q, k, v, m.mask, /*alibi_slopes=*/Value(), /*key_length=*/Value(),
        /*key_mask=*/Value(), rewriter.getF64FloatAttr(m.scale),
        rewriter.getBoolAttr(m.causal),
        rewriter.getI64IntegerAttr(m.slidingWindow));
    return success();
  }

  LogicalResult match(MatMulOp op, ValueShapes &shapes, AttentionMatch &m,
                      PatternRewriter &rewriter) const {
    auto fail = [&](const char *why) {
      return rewriter.notifyMatchFailure(op, why);
    };
    // p @ v, with p possibly cleaned of NaNs: select(is_nan(p), 0, p).
    Value p = op.getLhs();
    if (auto select = p.getDefiningOp<SelectOp>()) {
      auto isNan = select.getCond().getDefiningOp<IsNanOp>();
      std::optional<double> zero = getScalarConstant(select.getLhs());
      if (isNan && zero && *zero == 0 &&
          isSameValue(isNan.getInput(), select.getRhs()))
        p = select.getRhs();
    }
    auto softmax = p.getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return fail("lhs is not a softmax");
    if (softmax.getAxis() != 3 && softmax.getAxis() != -1)
      return fail("softmax is not over the last dim");

    // scores [+ mask], scores = (q * s1) @ (k^T * s2) * s3.
    Value x = softmax.getInput();
    ScaledValue scores = peelScale(x);
    auto qk = scores.base.getDefiningOp<MatMulOp>();
    if (auto add = x.getDefiningOp<AddOp>(); !qk && add) {
      for (int side = 0; side < 2 && !qk; ++side) {
        scores = peelScale(add->getOperand(side));
        qk = scores.base.getDefiningOp<MatMulOp>();
        if (qk)
          m.mask = add->getOperand(1 - side);
      }
    }
    if (!qk)
      return fail("softmax input is not q @ k^T [+ mask]");
    if (!scores.layout.empty())
      return fail("the scores are reshaped between matmul and softmax");

    Value kT = peelProductScales(qk, scores, m);
    std::optional<HeadsTensor> keys = keysOfTransposed(kT, shapes);
    if (!keys)
      return fail("rhs of q @ k^T is not a recognised key transpose");
    m.keys = *keys;

    std::optional<SymShape> qShape = shapes.get(qk.getLhs());
    std::optional<SymShape> vShape = shapes.get(op.getRhs());
    std::optional<SymShape> sShape = shapes.get(qk.getResult());
    if (!qShape || !vShape || !sShape || qShape->size() != 4 ||
        vShape->size() != 4 || sShape->size() != 4)
      return fail("q, k, v are not rank 4 with known shapes");
    const SymShape &qs = *qShape, &ks = m.keys.shape, &vs = *vShape;
    if (qs[0] != ks[0] || ks[0] != vs[0] || ks[1] != vs[1] || ks[2] != vs[2] ||
        qs[3] != ks[3] || qs[1] != ks[1])
      return fail("q, k, v shapes do not line up");
    m.values = HeadsTensor{op.getRhs(), Value(), vs};

    // Grouped-query attention: read K/V before their repeat.
    std::optional<HeadsTensor> k0 = unrepeatKv(m.keys, shapes);
    std::optional<HeadsTensor> v0 = unrepeatKv(m.values, shapes);
    if (k0 && v0 && k0->shape == v0->shape) {
      m.keys = *k0;
      m.values = *v0;
    }

    // hg.attention's result is [B, Hq, T, Dv]; it must be the matmul's.
    RankedTensorType qType = cast<RankedTensorType>(qk.getLhs().getType());
    RankedTensorType vType = m.values.type();
    SmallVector<int64_t> resultDims(qType.getShape());
    resultDims[3] = vType.getDimSize(3);
    if (ShapedType::isDynamic(resultDims[0]))
      resultDims[0] = vType.getDimSize(0);
    if (RankedTensorType::get(resultDims, qType.getElementType()) !=
        op.getType())
      return fail("the fused result type would differ");

    if (const char *why = resolveMask(m, *sShape, shapes))
      return fail(why);
    return success();
  }
};

/// ALiBi's bias as exported: reshape(slopes * positions, [B*H, 1, S]), the
/// product [B, H, S] (or [B, H, 1, S]) of a constant holding one slope per
/// head (shaped [H, 1], say) and positions [B, 1, S] that are the key index
/// up to a constant per row (isKeyIndexPerRow). The slopes, or nothing.
std::optional<SmallVector<double>> alibiSlopesOf(Value bias, const SymExpr &B,
                                                 const SymExpr &H,
                                                 const SymExpr &S,
                                                 ValueShapes &shapes) {
  auto reshape = bias.getDefiningOp<ReshapeOp>();
  std::optional<SymShape> biasShape = shapes.get(bias);
  if (!reshape || !biasShape || *biasShape != SymShape{B * H, SymExpr(1), S})
    return std::nullopt;
  Value product = reshape.getInput();
  std::optional<SymShape> shape = shapes.get(product);
  if (!shape ||
      (*shape != SymShape{B, H, S} && *shape != SymShape{B, H, SymExpr(1), S}))
    return std::nullopt;
  auto mul = product.getDefiningOp<MulOp>();
  if (!mul)
    return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    auto constant = mul->getOperand(side).getDefiningOp<ConstantOp>();
    auto values =
        constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue()) : nullptr;
    if (!values)
      continue;
    // One slope per head: every dim 1 but the one aligned with H.
    ArrayRef<int64_t> dims = values.getType().getShape();
    if (dims.size() > shape->size() ||
        H != SymExpr(static_cast<int64_t>(values.getNumElements())))
      continue;
    const size_t lead = shape->size() - dims.size();
    bool perHead = true;
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] != 1 && d + lead != 1)
        perHead = false;
    if (!perHead ||
        !isKeyIndexPerRow(mul->getOperand(1 - side), *shape, shapes))
      continue;
    SmallVector<double> slopes;
    for (const APFloat &v : values.getValues<APFloat>())
      slopes.push_back(v.convertToDouble());
    return slopes;
  }
  return std::nullopt;
}

/// BLOOM's eager attention as torch.onnx exports it: the heads folded into
/// the batch and ALiBi added with the product (baddbmm),
///   s3 = q3 @ k3^T * scale (+ alibi3)               [B*H, T, S]
///   p  = softmax(reshape(s3, [B, H, T, S]) (+ mask))
///   o3 = reshape(p, [B*H, T, S]) @ v3               [B*H, T, Dv]
/// with q3, k3, v3 the heads [B, H, *, D] reshaped. Becomes
/// reshape(hg.attention(q, k, v, mask, alibi slopes), [B*H, T, Dv]); the
/// slopes come from alibiSlopesOf, the mask as for the 4-D form.
struct FuseFoldedHeadsAttention : OpRewritePattern<MatMulOp> {
  FuseFoldedHeadsAttention(MLIRContext *context, ValueShapes &shapes)
      : OpRewritePattern(context), shapes(shapes) {}
  ValueShapes &shapes;

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    auto fail = [&](const char *why) {
      return rewriter.notifyMatchFailure(op, why);
    };
    auto probs = op.getLhs().getDefiningOp<ReshapeOp>();
    auto softmax =
        probs ? probs.getInput().getDefiningOp<SoftmaxOp>() : SoftmaxOp();
    if (!softmax)
      return fail("lhs is not a reshaped softmax");
    std::optional<SymShape> sShape = shapes.get(softmax.getResult());
    if (!sShape || sShape->size() != 4 ||
        (softmax.getAxis() != 3 && softmax.getAxis() != -1))
      return fail("softmax is not over the last dim of [B, H, T, S]");
    const SymShape &sc = *sShape;
    const SymExpr B = sc[0], H = sc[1], T = sc[2], S = sc[3];
    const SymShape folded = {B * H, T, S};

    // reshape(s3) [+ mask]
    AttentionMatch m;
    ReshapeOp unfold;
    Value x = softmax.getInput();
    if (auto add = x.getDefiningOp<AddOp>()) {
      for (int side = 0; side < 2 && !unfold; ++side) {
        auto r = add->getOperand(side).getDefiningOp<ReshapeOp>();
        if (r && shapes.get(r.getInput()) == folded) {
          unfold = r;
          m.mask = add->getOperand(1 - side);
        }
      }
    } else if (auto r = x.getDefiningOp<ReshapeOp>();
               r && shapes.get(r.getInput()) == folded) {
      unfold = r;
    }
    if (!unfold)
      return fail("softmax input is not reshape(q3 @ k3^T ...) [+ mask]");

    // s3 = (q3 @ k3^T) * scale [+ alibi3]
    Value s3 = unfold.getInput();
    ScaledValue scores = peelScale(s3);
    auto qk = scores.base.getDefiningOp<MatMulOp>();
    std::optional<SmallVector<double>> slopes;
    if (auto add = s3.getDefiningOp<AddOp>(); !qk && add) {
      for (int side = 0; side < 2 && !qk; ++side) {
        scores = peelScale(add->getOperand(side));
        qk = scores.base.getDefiningOp<MatMulOp>();
        if (qk) {
          slopes = alibiSlopesOf(add->getOperand(1 - side), B, H, S, shapes);
          if (!slopes)
            return fail("the bias added to q3 @ k3^T is not ALiBi");
        }
      }
    }
    if (!qk || !scores.layout.empty())
      return fail("the scores are not (q3 @ k3^T) * scale [+ alibi]");
    Value kT = peelProductScales(qk, scores, m);
    auto keysT = kT.getDefiningOp<TransposeOp>();
    if (!keysT || keysT.getPerm() != ArrayRef<int64_t>{0, 2, 1})
      return fail("rhs of q3 @ k3^T is not k3 transposed");
    Value k3 = keysT.getInput(), v3 = op.getRhs();
    std::optional<SymShape> qs = shapes.get(qk.getLhs()), ks = shapes.get(k3),
                            vs = shapes.get(v3);
    if (!qs || !ks || !vs || qs->size() != 3 || ks->size() != 3 ||
        vs->size() != 3 || (*qs)[0] != B * H || (*qs)[1] != T ||
        (*ks)[0] != B * H || (*ks)[1] != S || (*ks)[2] != (*qs)[2] ||
        (*vs)[0] != B * H || (*vs)[1] != S)
      return fail("q3, k3, v3 are not the heads folded into the batch");
    const SymExpr D = (*qs)[2], Dv = (*vs)[2];
    m.keys = asShape(k3, {B, H, S, D}, shapes);
    m.values = asShape(v3, {B, H, S, Dv}, shapes);

    // The fused result, reshaped back, must be the matmul's type.
    SmallVector<int64_t> dims;
    for (const SymExpr &d : SymShape{B * H, T, Dv})
      dims.push_back(d.constant().value_or(ShapedType::kDynamic));
    if (RankedTensorType::get(dims, op.getType().getElementType()) !=
        op.getType())
      return fail("the fused result type would differ");
    if (const char *why = resolveMask(m, sc, shapes))
      return fail(why);

    Location loc = op.getLoc();
    Value q3 = m.query.rebuild(rewriter);
    Value q =
        asShape(q3, {B, H, T, D}, shapes).materialize(rewriter, loc, shapes);
    Value k = m.keys.materialize(rewriter, loc, shapes);
    Value v = m.values.materialize(rewriter, loc, shapes);
    Value alibi;
    if (slopes) {
      Type element = cast<RankedTensorType>(q.getType()).getElementType();
      auto type = RankedTensorType::get({static_cast<int64_t>(slopes->size())},
                                        element);
      SmallVector<APFloat> values;
      for (double slope : *slopes) {
        APFloat f(slope);
        bool lost;
        f.convert(cast<FloatType>(element).getFloatSemantics(),
                  APFloat::rmNearestTiesToEven, &lost);
        values.push_back(f);
      }
      alibi = rewriter.create<ConstantOp>(
          loc, DenseFPElementsAttr::get(type, values));
    }
    Value attention =
        rewriter
            .create<AttentionOp>(loc, q, k, v, m.mask, alibi,
                                 /*key_length=*/Value(), /*key_mask=*/Value(),
                                 rewriter.getF64FloatAttr(m.scale),
                                 rewriter.getBoolAttr(m.causal),
                                 rewriter.getI64IntegerAttr(m.slidingWindow))
            .getResult();
    rewriter.replaceOpWithNewOp<ReshapeOp>(
        op, attention, shapes.shapeAttr(rewriter.getContext(), {B * H, T, Dv}));
    return success();
  }
};

struct FuseAttentionPass : impl::FuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    ValueShapes shapes(getOperation());
    ValueShapesListener listener(shapes);
    patterns.add<FuseScaledDotProductAttention, FuseFoldedHeadsAttention>(
        &getContext(), shapes);
    GreedyRewriteConfig config;
    config.listener = &listener;
    (void)applyPatternsAndFoldGreedily(getOperation(), std::move(patterns),
                                       config);
    getOperation().walk([](SoftmaxOp op) {
      op.emitWarning() << "softmax '" << describeOp(op)
                       << "' not fused into attention; it runs unfused";
    });
  }
};

} // namespace
} // namespace hybridc::hg
