// The vector-Jacobian rules of hg ops (VjpInterface.td), written with hg
// ops only, so every backend that runs the forward runs the backward too:
// elementwise arithmetic and activations, shape ops (reshape, transpose,
// broadcast), reductions, softmax / log-softmax, matmul and linear; and
// the activations', attention's, layer norm's, embedding's and
// label_log_probs' (the cross-entropy), which are one hg.activation_grad,
// hg.attention_grad, hg.layer_norm_grad, hg.embedding_grad and
// hg.label_log_probs_grad (fused kernels on each backend). A fused RMS norm
// backward replaces its decomposition later; ops without a rule make
// hg-autodiff name them.
#include "dialects/hg/Transforms/VjpInterface.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>
#include <numeric>

using namespace mlir;

namespace hybridc::hg {

#include "dialects/hg/Transforms/VjpInterface.cpp.inc"

//===----------------------------------------------------------------------===//
// VjpContext
//===----------------------------------------------------------------------===//

Value VjpContext::scalar(double value, Type elementType) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(builder_.getFloatAttr(elementType, value))
                          : Attribute(builder_.getIntegerAttr(
                                elementType, static_cast<int64_t>(value)));
  return make<ConstantOp>(DenseElementsAttr::get(type, element));
}

ArrayAttr VjpContext::shapeOf(Value value) {
  std::optional<hybrid::SymShape> shape = shapes_.get(value);
  if (!shape) {
    emitError(loc_) << "hg-autodiff: the shape of " << value.getType()
                    << " is not known symbolically";
    return {};
  }
  return shapes_.shapeAttr(builder_.getContext(), *shape);
}

Value VjpContext::unbroadcast(Value grad, Value like) {
  std::optional<hybrid::SymShape> g = shapes_.get(grad), l = shapes_.get(like);
  if (!g || !l) {
    emitError(loc_) << "hg-autodiff: cannot undo the broadcast of "
                    << like.getType() << " (shapes not known symbolically)";
    return {};
  }
  if (*g == *l && grad.getType() == like.getType())
    return grad;
  const size_t lead = g->size() - l->size();
  SmallVector<int64_t> axes;
  for (size_t i = 0; i < g->size(); ++i)
    if (i < lead ||
        ((*l)[i - lead] == hybrid::SymExpr(1) && (*g)[i] != hybrid::SymExpr(1)))
      axes.push_back(static_cast<int64_t>(i));
  Value summed = axes.empty() ? grad : make<ReduceSumOp>(grad, axes, true);
  if (summed.getType() == like.getType())
    return summed;
  return make<ReshapeOp>(summed, shapes_.shapeAttr(builder_.getContext(), *l));
}

ArrayAttr VjpContext::rowsOf(Value value) {
  std::optional<hybrid::SymShape> shape = shapes_.get(value);
  if (!shape || shape->empty()) {
    emitError(loc_) << "hg-autodiff: the shape of " << value.getType()
                    << " is not known symbolically";
    return {};
  }
  hybrid::SymExpr rows(1);
  for (size_t i = 0; i + 1 < shape->size(); ++i)
    rows = rows * (*shape)[i];
  return shapes_.shapeAttr(builder_.getContext(), {rows, shape->back()});
}

std::optional<hybrid::SymShape> VjpContext::symShape(Value value) {
  std::optional<hybrid::SymShape> shape = shapes_.get(value);
  if (!shape)
    emitError(loc_) << "hg-autodiff: the shape of " << value.getType()
                    << " is not known symbolically";
  return shape;
}

ArrayAttr VjpContext::attr(const hybrid::SymShape &shape) {
  return shapes_.shapeAttr(builder_.getContext(), shape);
}

Value VjpContext::zeros(Type elementType, const hybrid::SymShape &shape) {
  return make<BroadcastToOp>(scalar(0.0, elementType), attr(shape));
}

Value VjpContext::broadcastBack(Value grad, Value like, ArrayRef<int64_t> axes,
                                bool keepdims) {
  std::optional<hybrid::SymShape> l = shapes_.get(like);
  if (!l) {
    emitError(loc_) << "hg-autodiff: the shape of " << like.getType()
                    << " is not known symbolically";
    return {};
  }
  if (!keepdims) {
    hybrid::SymShape kept = *l;
    const int64_t rank = static_cast<int64_t>(kept.size());
    for (int64_t i = 0; i < rank; ++i)
      if (axes.empty() || llvm::is_contained(axes, i) ||
          llvm::is_contained(axes, i - rank))
        kept[i] = hybrid::SymExpr(1);
    grad =
        make<ReshapeOp>(grad, shapes_.shapeAttr(builder_.getContext(), kept));
  }
  return make<BroadcastToOp>(grad,
                             shapes_.shapeAttr(builder_.getContext(), *l));
}

namespace {

bool isFloat(Value v) {
  return isa<FloatType>(cast<ShapedType>(v.getType()).getElementType());
}

Type elementOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}

/// A null value fails the rule (the context has reported why).
LogicalResult ok(std::initializer_list<Value> values) {
  for (Value v : values)
    if (!v)
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

using Grads = SmallVectorImpl<Value>;

LogicalResult vjp(AddOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  if (isFloat(op.getLhs()))
    out[0] = c.unbroadcast(g[0], op.getLhs());
  if (isFloat(op.getRhs()))
    out[1] = c.unbroadcast(g[0], op.getRhs());
  return ok({out[0], out[1]});
}

LogicalResult vjp(SubOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = c.unbroadcast(g[0], op.getLhs());
  out[1] = c.unbroadcast(c.make<NegOp>(g[0]), op.getRhs());
  return ok({out[0], out[1]});
}

LogicalResult vjp(MulOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = c.unbroadcast(c.make<MulOp>(g[0], op.getRhs()), op.getLhs());
  out[1] = c.unbroadcast(c.make<MulOp>(g[0], op.getLhs()), op.getRhs());
  return ok({out[0], out[1]});
}

LogicalResult vjp(DivOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // d(a / b) = da / b - y db / b with y = a / b.
  Value gOverB = c.make<DivOp>(g[0], op.getRhs());
  out[0] = c.unbroadcast(gOverB, op.getLhs());
  out[1] = c.unbroadcast(c.make<NegOp>(c.make<MulOp>(gOverB, op.getResult())),
                         op.getRhs());
  return ok({out[0], out[1]});
}

LogicalResult vjp(NegOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = c.make<NegOp>(g[0]);
  (void)op;
  return success();
}

LogicalResult vjp(ExpOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = c.make<MulOp>(g[0], op.getResult());
  return success();
}

LogicalResult vjp(LogOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = c.make<DivOp>(g[0], op.getInput());
  return success();
}

LogicalResult vjp(SqrtOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // d sqrt(x) = dx / (2 y)
  Value half = c.scalar(0.5, elementOf(op.getResult()));
  out[0] = c.make<MulOp>(c.make<DivOp>(g[0], op.getResult()), half);
  return success();
}

LogicalResult vjp(RsqrtOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // y = x^-1/2: dy = -y^3 / 2 dx
  Value y = op.getResult();
  Value cube = c.make<MulOp>(c.make<MulOp>(y, y), y);
  Value minusHalf = c.scalar(-0.5, elementOf(y));
  out[0] = c.make<MulOp>(c.make<MulOp>(g[0], cube), minusHalf);
  return success();
}

LogicalResult vjp(ReciprocalOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  Value y = op.getResult();
  out[0] = c.make<NegOp>(c.make<MulOp>(g[0], c.make<MulOp>(y, y)));
  return success();
}

LogicalResult vjp(TanhOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  Value y = op.getResult();
  Value one = c.scalar(1.0, elementOf(y));
  out[0] = c.make<MulOp>(g[0], c.make<SubOp>(one, c.make<MulOp>(y, y)));
  return success();
}

LogicalResult vjp(SigmoidOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  Value y = op.getResult();
  Value one = c.scalar(1.0, elementOf(y));
  out[0] = c.make<MulOp>(g[0], c.make<MulOp>(y, c.make<SubOp>(one, y)));
  return success();
}

// The activations' backward is one hg.activation_grad each (a fused
// kernel on each backend, the derivative in f32 rounded once), with act'
// as follows:
//   relu: 1 where x > 0, else 0;
//   silu: y = x s(x): dy = s (1 + x (1 - s)) dx;
//   gelu: y = x Phi(x): dy = Phi(x) + x phi(x);
//   gelu_tanh: y = x/2 (1 + tanh u), u = k (x + a x^3), k = sqrt(2/pi),
//     a = 0.044715: dy = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) k (1 + 3 a x^2).
Value activationGrad(VjpContext &c, Value x, Value g, StringRef activation) {
  return c.builder().create<ActivationGradOp>(c.loc(), x.getType(), x, g,
                                              activation);
}

LogicalResult vjp(ReluOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  if (!isFloat(op.getInput()))
    return success(); // no gradient into integers
  out[0] = activationGrad(c, op.getInput(), g[0], "relu");
  return success();
}

LogicalResult vjp(SiluOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = activationGrad(c, op.getInput(), g[0], "silu");
  return success();
}

LogicalResult vjp(GeluOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  out[0] = activationGrad(c, op.getInput(), g[0],
                          op.getApproximate() == "tanh" ? "gelu_tanh" : "gelu");
  return success();
}

LogicalResult vjp(CastOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  if (!isFloat(op.getInput()))
    return success(); // no gradient into integers
  out[0] = c.builder().create<CastOp>(c.loc(), op.getInput().getType(), g[0]);
  return success();
}

LogicalResult vjp(SelectOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  Value zero = c.scalar(0.0, elementOf(op.getResult()));
  out[1] =
      c.unbroadcast(c.make<SelectOp>(op.getCond(), g[0], zero), op.getLhs());
  out[2] =
      c.unbroadcast(c.make<SelectOp>(op.getCond(), zero, g[0]), op.getRhs());
  return ok({out[1], out[2]});
}

LogicalResult vjp(ReshapeOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  ArrayAttr shape = c.shapeOf(op.getInput());
  if (!shape)
    return failure();
  out[0] = c.make<ReshapeOp>(g[0], shape);
  return success();
}

LogicalResult vjp(TransposeOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = static_cast<int64_t>(i);
  out[0] = c.make<TransposeOp>(g[0], inverse);
  return success();
}

LogicalResult vjp(BroadcastToOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  out[0] = c.unbroadcast(g[0], op.getInput());
  return ok({out[0]});
}

LogicalResult vjp(ReduceSumOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  out[0] = c.broadcastBack(g[0], op.getInput(), op.getAxes(), op.getKeepdims());
  return ok({out[0]});
}

LogicalResult vjp(ReduceMeanOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  Value spread =
      c.broadcastBack(g[0], op.getInput(), op.getAxes(), op.getKeepdims());
  if (!spread)
    return failure();
  // Divided by the count of reduced elements: a sum of ones over the same
  // axes (symbolic sizes stay symbolic).
  Value input = op.getInput();
  ArrayAttr shape = c.shapeOf(input);
  if (!shape)
    return failure();
  Value ones = c.make<BroadcastToOp>(c.scalar(1.0, elementOf(input)), shape);
  Value count = c.make<ReduceSumOp>(ones, op.getAxes(), true);
  out[0] = c.make<DivOp>(spread, count);
  return success();
}

LogicalResult vjp(SoftmaxOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // dx = y (g - sum(g y))
  Value y = op.getResult();
  const int64_t axis = static_cast<int64_t>(op.getAxis());
  Value dot = c.make<ReduceSumOp>(c.make<MulOp>(g[0], y),
                                  ArrayRef<int64_t>{axis}, true);
  out[0] = c.make<MulOp>(y, c.make<SubOp>(g[0], dot));
  return success();
}

LogicalResult vjp(LogSoftmaxOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // dx = g - exp(y) sum(g)
  const int64_t axis = static_cast<int64_t>(op.getAxis());
  Value total = c.make<ReduceSumOp>(g[0], ArrayRef<int64_t>{axis}, true);
  out[0] =
      c.make<SubOp>(g[0], c.make<MulOp>(c.make<ExpOp>(op.getResult()), total));
  return success();
}

/// The last two dims swapped.
Value swapLast(VjpContext &c, Value v) {
  const int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
  SmallVector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return c.make<TransposeOp>(v, perm);
}

LogicalResult vjp(MatMulOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  Value a = op.getLhs(), b = op.getRhs();
  if (cast<RankedTensorType>(a.getType()).getRank() < 2 ||
      cast<RankedTensorType>(b.getType()).getRank() < 2)
    return emitError(c.loc())
           << "hg-autodiff: no gradient rule yet for a matmul of a 1-D operand";
  out[0] = c.unbroadcast(c.make<MatMulOp>(g[0], swapLast(c, b)), a);
  out[1] = c.unbroadcast(c.make<MatMulOp>(swapLast(c, a), g[0]), b);
  return ok({out[0], out[1]});
}

LogicalResult vjp(LinearOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  if (op.getResidual() || op.getActivation() != "none")
    return emitError(c.loc())
           << "hg-autodiff: a linear with a fused epilogue has no gradient "
              "rule (differentiate before hg-fuse-epilogues)";
  if (op.getNorm() != "none")
    return emitError(c.loc())
           << "hg-autodiff: a linear with a fused norm prologue has no "
              "gradient rule (differentiate before hg-fuse-norm-prologues)";
  Value x = op.getInput(), w = op.getWeight();
  const bool transposed = op.getTransposeWeight();
  // dx = g W ([N, K] weights) or g W^T ([K, N]): a linear with the
  // weight's other reading.
  out[0] = c.make<LinearOp>(g[0], w, Value(), !transposed);
  // dW from the rows of x and g, leading dims flattened to [M, K] and
  // [M, N].
  auto xType = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> leading(xType.getRank() - 1);
  std::iota(leading.begin(), leading.end(), 0);
  Value x2 = x, g2 = g[0];
  if (xType.getRank() != 2) {
    ArrayAttr xRows = c.rowsOf(x), gRows = c.rowsOf(g[0]);
    if (!xRows || !gRows)
      return failure();
    x2 = c.make<ReshapeOp>(x, xRows);
    g2 = c.make<ReshapeOp>(g[0], gRows);
  }
  out[1] = transposed ? c.make<MatMulOp>(swapLast(c, g2), x2)
                      : c.make<MatMulOp>(swapLast(c, x2), g2);
  if (op.getBias())
    out[2] = leading.empty() ? g[0] : c.make<ReduceSumOp>(g[0], leading, false);
  return success();
}

/// Means over `axes` (keepdims) of `x`.
Value meanOver(VjpContext &c, Value x, ArrayRef<int64_t> axes) {
  return c.make<ReduceMeanOp>(x, axes, true);
}

/// The normalised axes [axis, rank) of a norm over `x`.
SmallVector<int64_t> normAxes(Value x, int64_t axis) {
  const int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  SmallVector<int64_t> axes;
  for (int64_t a = normalizeAxis(axis, rank).value_or(rank); a < rank; ++a)
    axes.push_back(a);
  return axes;
}

LogicalResult vjp(LayerNormOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // One hg.layer_norm_grad (a fused kernel on each backend): x^ = (x -
  // mean) rstd, y = x^ w + b gives dx = rstd (dx^ - mean(dx^) - x^ mean(dx^
  // x^)), dx^ = g w, dw = sum of g x^ and db = sum of g over the rows.
  auto grad = c.builder().create<LayerNormGradOp>(
      c.loc(), op.getInput(), op.getWeight(), g[0], op.getEpsilonAttr(),
      op.getAxisAttr());
  out[0] = grad.getGradInput();
  if (op.getWeight())
    out[1] = grad.getGradWeight();
  if (op.getBias())
    out[op.getWeight() ? 2 : 1] = grad.getGradBias();
  return success();
}

LogicalResult vjp(RmsNormOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // x^ = x r, r = rsqrt(mean(x^2) + eps), y = x^ w:
  // dx = r (dx^ - x^ mean(dx^ x^)), dx^ = g w.
  Value x = op.getInput();
  Type t = elementOf(x);
  SmallVector<int64_t> axes = normAxes(x, static_cast<int64_t>(op.getAxis()));
  Value r = c.make<RsqrtOp>(
      c.make<AddOp>(meanOver(c, c.make<MulOp>(x, x), axes),
                    c.scalar(op.getEpsilon().convertToDouble(), t)));
  Value xhat = c.make<MulOp>(x, r);
  Value gxhat = op.getWeight() ? c.make<MulOp>(g[0], op.getWeight()) : g[0];
  out[0] = c.make<MulOp>(
      r, c.make<SubOp>(
             gxhat, c.make<MulOp>(
                        xhat, meanOver(c, c.make<MulOp>(gxhat, xhat), axes))));
  if (op.getWeight())
    out[1] = c.unbroadcast(c.make<MulOp>(g[0], xhat), op.getWeight());
  return success();
}

LogicalResult vjp(EmbeddingOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // d table = grad_out's rows summed per id: one hg.embedding_grad (a
  // deterministic kernel on each backend) instead of the one-hot product
  // onehot(ids)^T g, [V, M] x [M, D].
  const int64_t rows =
      cast<RankedTensorType>(op.getTable().getType()).getDimSize(0);
  if (ShapedType::isDynamic(rows))
    return emitError(c.loc())
           << "hg-autodiff: an embedding table needs a static row count";
  // torch's padding_idx: that id's positions add nothing (ids outside the
  // table add nothing to embedding_grad).
  Value ids = op.getIds();
  if (std::optional<int64_t> pad = op.getPaddingIdx()) {
    Type idType = op.getIds().getType().getElementType();
    Value padding = c.make<EqualOp>(ids, c.scalar(*pad, idType));
    ids = c.make<SelectOp>(padding, c.scalar(-1, idType), ids);
  }
  out[0] = c.builder().create<EmbeddingGradOp>(
      c.loc(), ids, g[0], c.builder().getI64IntegerAttr(rows));
  return success();
}

LogicalResult vjp(LabelLogProbsOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // g (onehot(label) - softmax(logits)) per row, one fused kernel; the
  // labels are integers and get no gradient.
  out[0] = c.builder().create<LabelLogProbsGradOp>(c.loc(), op.getLogits(),
                                                   op.getLabels(), g[0]);
  return success();
}

LogicalResult vjp(ClippedSurrogateOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // Only the policy's log-probabilities train: the old log-probabilities,
  // advantages and mask are experience, constants of the step.
  out[0] = c.builder().create<ClippedSurrogateGradOp>(
      c.loc(), op.getLogprobs(), op.getOldLogprobs(), op.getAdvantages(),
      op.getMask(), g[0], op.getClipLowAttr(), op.getClipHighAttr());
  return success();
}

LogicalResult vjp(ClippedValueLossOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // Only the critic's values train: old values, returns and mask are
  // experience, constants of the step.
  out[0] = c.builder().create<ClippedValueLossGradOp>(
      c.loc(), op.getValues(), op.getOldValues(), op.getReturns(), op.getMask(),
      g[0], op.getClipAttr());
  return success();
}

LogicalResult vjp(KlK3Op op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // The reference model is frozen: only the policy's log-probabilities.
  out[0] = c.builder().create<KlK3GradOp>(c.loc(), op.getLogprobs(),
                                          op.getRefLogprobs(), g[0]);
  return success();
}

LogicalResult vjp(MaskedMeanOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // The mask is data: the input's gradient only.
  out[0] = c.builder().create<MaskedMeanGradOp>(c.loc(), op.getMask(), g[0],
                                                op.getPerSequenceAttr());
  return success();
}

LogicalResult vjp(PairwiseRankingLossOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // The values train, through the loss and the end scores; input_ids and
  // the mask are data, and the accuracy, a count of comparisons, is flat.
  out[0] = c.builder().create<PairwiseRankingLossGradOp>(
      c.loc(), op.getValues(), op.getInputIds(), op.getAttentionMask(), g[0],
      g[1]);
  return success();
}

LogicalResult vjp(RotaryOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // Over the first R = rotary_dim features, y = x cos + rot(x) sin with
  // rot(x) = [-x2, x1] (halves of those R): dx = g cos + rot^T(g sin),
  // rot^T(z) = [z2, -z1]; features past R pass through (dx = g).
  if (op.getInterleaved())
    return emitError(c.loc())
           << "hg-autodiff: no gradient rule yet for interleaved rotary";
  Value x = op.getInput();
  std::optional<hybrid::SymShape> xs = c.symShape(x),
                                  cs = c.symShape(op.getCos());
  if (!xs || !cs)
    return failure();
  // cos / sin [B or 1, T, D] read as [B or 1, 1, T, D].
  hybrid::SymShape tableShape = {(*cs)[0], hybrid::SymExpr(1), (*cs)[1],
                                 (*cs)[2]};
  Value cosine = c.make<ReshapeOp>(op.getCos(), c.attr(tableShape));
  Value sine = c.make<ReshapeOp>(op.getSin(), c.attr(tableShape));
  const int64_t head = cast<RankedTensorType>(x.getType()).getDimSize(3);
  const int64_t d =
      cast<RankedTensorType>(op.getCos().getType()).getShape().back();
  if (ShapedType::isDynamic(head) || ShapedType::isDynamic(d) || d % 2 ||
      d > head)
    return emitError(c.loc()) << "hg-autodiff: rotary needs static head and "
                                 "rotary sizes, the rotary one even";
  // Features [start, end) of the last dim of v.
  auto features = [&](Value v, int64_t start, int64_t end) -> Value {
    auto vt = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(vt.getShape());
    shape[3] = end - start;
    return c.builder().create<SliceOp>(
        c.loc(), vt.clone(shape), v, ArrayRef<int64_t>{3},
        ArrayRef<int64_t>{start}, ArrayRef<int64_t>{end}, ArrayRef<int64_t>{1});
  };
  Value gr = d == head ? g[0] : features(g[0], 0, d);
  Value z = c.make<MulOp>(gr, sine);
  Value z1 = features(z, 0, d / 2), z2 = features(z, d / 2, d);
  Value rotT = c.make<ConcatOp>(ValueRange{z2, c.make<NegOp>(z1)},
                                c.builder().getI64IntegerAttr(3));
  Value dx = c.make<AddOp>(c.make<MulOp>(gr, cosine), rotT);
  out[0] = d == head ? dx
                     : c.make<ConcatOp>(ValueRange{dx, features(g[0], d, head)},
                                        c.builder().getI64IntegerAttr(3));
  return success();
}

LogicalResult vjp(SliceOp op, VjpContext &c, ArrayRef<Value> g, Grads &out) {
  // The gradient of the kept part, with zeros where the slice cut.
  Value x = op.getInput();
  std::optional<hybrid::SymShape> xs = c.symShape(x);
  if (!xs)
    return failure();
  const int64_t rank = static_cast<int64_t>(xs->size());
  Value grad = g[0];
  for (auto [axis0, start, end, step] :
       llvm::zip(op.getAxes(), op.getStarts(), op.getEnds(), op.getSteps())) {
    const int64_t axis = axis0 < 0 ? axis0 + rank : axis0;
    const hybrid::SymExpr dim = (*xs)[axis];
    std::optional<int64_t> known = dim.constant();
    if (step != 1)
      return emitError(c.loc())
             << "hg-autodiff: no gradient rule yet for a strided slice";
    // The cut before and after the kept range, as (symbolic) sizes.
    hybrid::SymExpr before(0), after(0);
    if (known) {
      auto clampTo = [&](int64_t v) {
        if (v < 0)
          v += *known;
        return std::clamp<int64_t>(v, 0, *known);
      };
      const int64_t s = clampTo(start);
      const int64_t e = end == INT64_MAX ? *known : std::max(s, clampTo(end));
      before = hybrid::SymExpr(s);
      after = hybrid::SymExpr(*known - e);
    } else if (start >= 0 && (end == INT64_MAX || end < 0)) {
      before = hybrid::SymExpr(start);
      after = hybrid::SymExpr(end == INT64_MAX ? 0 : -end);
    } else {
      return emitError(c.loc()) << "hg-autodiff: no gradient rule yet for "
                                   "this slice of a symbolic dim";
    }
    std::optional<hybrid::SymShape> gs = c.symShape(grad);
    if (!gs)
      return failure();
    SmallVector<Value> parts;
    auto pad = [&](const hybrid::SymExpr &n) {
      if (n == hybrid::SymExpr(0))
        return;
      hybrid::SymShape shape = *gs;
      shape[axis] = n;
      parts.push_back(c.zeros(elementOf(grad), shape));
    };
    pad(before);
    parts.push_back(grad);
    pad(after);
    if (parts.size() > 1)
      grad = c.make<ConcatOp>(ValueRange(parts),
                              c.builder().getI64IntegerAttr(axis));
  }
  if (grad.getType() != x.getType())
    grad = c.make<ReshapeOp>(grad, c.attr(*xs));
  out[0] = grad;
  return success();
}

LogicalResult vjp(AttentionOp op, VjpContext &c, ArrayRef<Value> g,
                  Grads &out) {
  // One hg.attention_grad, which recomputes the probabilities (a fused
  // kernel on each backend) instead of materialising them in the graph.
  if (op.getKeyLength())
    return emitError(c.loc()) << "hg-autodiff: attention over a KV cache "
                                 "(key_length) has no gradient rule";
  Value mask = op.getMask();
  if (mask && c.varies(mask))
    return emitError(c.loc()) << "hg-autodiff: no gradient rule yet for an "
                                 "attention mask that depends on a parameter";
  // ALiBi slopes are constants of the architecture (BLOOM's); the bias they
  // add enters the recomputed probabilities only.
  Value slopes = op.getAlibiSlopes();
  if (slopes && c.varies(slopes))
    return emitError(c.loc()) << "hg-autodiff: no gradient rule yet for ALiBi "
                                 "slopes that depend on a parameter";
  auto grad = c.builder().create<AttentionGradOp>(
      c.loc(), op.getQuery(), op.getKey(), op.getValue(), g[0], mask, slopes,
      op.getKeyMask(), op.getScaleAttr(), op.getCausalAttr(),
      op.getSlidingWindowAttr());
  out[0] = grad.getGradQuery();
  out[1] = grad.getGradKey();
  out[2] = grad.getGradValue();
  return success();
}

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

template <typename OpT>
struct Rule : VjpOpInterface::ExternalModel<Rule<OpT>, OpT> {
  LogicalResult buildVjp(Operation *op, VjpContext &context,
                         ArrayRef<Value> resultGrads,
                         SmallVectorImpl<Value> &operandGrads) const {
    return vjp(cast<OpT>(op), context, resultGrads, operandGrads);
  }
};

template <typename... Ops> void attach(MLIRContext *context) {
  (Ops::template attachInterface<Rule<Ops>>(*context), ...);
}

} // namespace

void registerVjpRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, HgDialect *) {
    attach<AddOp, SubOp, MulOp, DivOp, NegOp, ExpOp, LogOp, SqrtOp, RsqrtOp,
           ReciprocalOp, TanhOp, SigmoidOp, ReluOp, SiluOp, GeluOp, CastOp,
           SelectOp, ReshapeOp, TransposeOp, BroadcastToOp, ReduceSumOp,
           ReduceMeanOp, SoftmaxOp, LogSoftmaxOp, MatMulOp, LinearOp,
           LayerNormOp, RmsNormOp, EmbeddingOp, RotaryOp, SliceOp, AttentionOp,
           LabelLogProbsOp, ClippedSurrogateOp>(context);
    attach<ClippedValueLossOp, KlK3Op, MaskedMeanOp, PairwiseRankingLossOp>(
        context);
  });
}

} // namespace hybridc::hg
