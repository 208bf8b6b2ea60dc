// Symbolic shape rules of the hg ops (see HgSymbolicShapes.h).
#include "dialects/hg/IR/HgSymbolicShapes.h"

#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc::hg {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

LogicalResult explain(std::string *why, const llvm::Twine &text) {
  if (why)
    *why = text.str();
  return failure();
}

int64_t normAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

/// A shape attribute (reshape, broadcast_to, iota): integers, or symbolic
/// sizes naming known symbols only.
FailureOr<SymShape> parseShapeAttr(Attribute attr,
                                   const std::vector<std::string> &symbols,
                                   std::string *why) {
  auto arr = dyn_cast_or_null<ArrayAttr>(attr);
  if (!arr)
    return explain(why, "expected a shape array attribute");
  SymShape out;
  for (Attribute a : arr) {
    if (auto i = dyn_cast<IntegerAttr>(a)) {
      out.push_back(SymExpr(i.getInt()));
      continue;
    }
    auto s = dyn_cast<StringAttr>(a);
    if (!s)
      return explain(why, "shape entries must be integers or strings");
    std::string error;
    std::optional<SymExpr> e = SymExpr::parse(s.str(), symbols, &error);
    if (!e)
      return explain(why, error);
    out.push_back(std::move(*e));
  }
  return out;
}

/// NumPy broadcasting; each pair of dims must be provably compatible (one of
/// them 1, or the same polynomial).
FailureOr<SymShape> broadcast(ArrayRef<SymShape> shapes,
                              const std::vector<std::string> &symbols,
                              std::string *why) {
  size_t rank = 0;
  for (const SymShape &s : shapes)
    rank = std::max(rank, s.size());
  SymShape out(rank, SymExpr(1));
  for (const SymShape &s : shapes) {
    size_t off = rank - s.size();
    for (auto [i, d] : llvm::enumerate(s)) {
      SymExpr &o = out[off + i];
      if (d == SymExpr(1) || d == o)
        continue;
      if (o != SymExpr(1))
        return explain(why, "cannot prove dimensions " + o.str(symbols) +
                                " and " + d.str(symbols) +
                                " broadcast-compatible");
      o = d;
    }
  }
  return out;
}

/// A positive-step slice bound as an index into [0, dim]: the ONNX clamping
/// must be the same for every binding, or it is not a polynomial.
std::optional<SymExpr> sliceIndex(int64_t v, const SymExpr &dim) {
  if (v >= (kInt64Max >> 1)) // "to the end"
    return dim;
  if (v <= (kInt64Min >> 1)) // "from the start"
    return SymExpr(0);
  SymExpr idx = v >= 0 ? SymExpr(v) : dim + SymExpr(v);
  if (SymExpr::knownGE(idx, 0) && SymExpr::knownGE(dim, idx))
    return idx;
  return std::nullopt;
}

FailureOr<SymShape> sliceShape(SliceOp op, SymShape s,
                               const std::vector<std::string> &symbols,
                               std::string *why) {
  for (auto [axis, start, end, step] :
       llvm::zip(op.getAxes(), op.getStarts(), op.getEnds(), op.getSteps())) {
    SymExpr &dim = s[normAxis(axis, s.size())];
    if (std::optional<int64_t> c = dim.constant()) {
      dim = SymExpr(resolveSliceBounds(*c, start, end, step).length);
      continue;
    }
    if (step == -1 && (start >= (kInt64Max >> 1) || start == -1) &&
        end <= (kInt64Min >> 1))
      continue; // the whole dim reversed
    if (step <= 0)
      return explain(why, "negative-step slice of symbolic dimension " +
                              dim.str(symbols) +
                              " (only the whole dim reversed)");
    std::optional<SymExpr> b = sliceIndex(start, dim), e = sliceIndex(end, dim);
    if (!b || !e)
      return explain(why, "slice bound on symbolic dimension " +
                              dim.str(symbols) + " is not provably in range");
    SymExpr span = *e - *b;
    if (SymExpr::knownGE(SymExpr(0), span))
      dim = SymExpr(0);
    else if (!SymExpr::knownGE(span, 0))
      return explain(why, "slice [" + b->str(symbols) + ", " + e->str(symbols) +
                              ") may be empty or not, depending on the sizes");
    else if (step == 1)
      dim = span;
    else if (std::optional<int64_t> c = span.constant())
      dim = SymExpr(*c / step + (*c % step != 0)); // no overflow
    else if (std::optional<SymExpr> q = span.divExact(SymExpr(step)))
      dim = *q;
    else
      return explain(why, "strided slice length (" + span.str(symbols) +
                              ") / " + llvm::Twine(step) +
                              " is not a polynomial");
  }
  return s;
}

/// The rule of each op, before the check against the result type.
FailureOr<SymShape> ruleFor(Operation *op, ArrayRef<SymShape> in,
                            const std::vector<std::string> &symbols,
                            std::string *why) {
  return TypeSwitch<Operation *, FailureOr<SymShape>>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, EqualOp,
            LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, AndOp, OrOp, XorOp,
            SelectOp>([&](Operation *) { return broadcast(in, symbols, why); })
      .Case<ConstantOp>([&](ConstantOp c) -> FailureOr<SymShape> {
        auto type = cast<RankedTensorType>(c.getType());
        if (!type.hasStaticShape())
          return explain(why, "constant of dynamic shape");
        return SymShape(type.getShape().begin(), type.getShape().end());
      })
      .Case<ReshapeOp>([&](ReshapeOp o) -> FailureOr<SymShape> {
        FailureOr<SymShape> s = parseShapeAttr(o.getShape(), symbols, why);
        if (failed(s))
          return failure();
        SymExpr a(1), b(1);
        for (const SymExpr &d : in[0])
          a = a * d;
        for (const SymExpr &d : *s)
          b = b * d;
        if (a != b)
          return explain(why, "element count " + a.str(symbols) +
                                  " != " + b.str(symbols));
        return s;
      })
      .Case<BroadcastToOp>([&](BroadcastToOp o) {
        return parseShapeAttr(o.getShape(), symbols, why);
      })
      .Case<IotaOp>(
          [&](IotaOp o) { return parseShapeAttr(o.getLength(), symbols, why); })
      .Case<TransposeOp>([&](TransposeOp o) -> FailureOr<SymShape> {
        SymShape s;
        for (int64_t p : o.getPerm())
          s.push_back(in[0][p]);
        return s;
      })
      .Case<SliceOp>(
          [&](SliceOp o) { return sliceShape(o, in[0], symbols, why); })
      .Case<ConcatOp>([&](ConcatOp o) -> FailureOr<SymShape> {
        SymShape s = in[0];
        int64_t ax = normAxis(o.getAxis(), s.size());
        for (const SymShape &t : in.drop_front())
          s[ax] = s[ax] + t[ax];
        return s;
      })
      .Case<GatherOp>([&](GatherOp o) -> FailureOr<SymShape> {
        const SymShape &d = in[0], &idx = in[1];
        int64_t ax = normAxis(o.getAxis(), d.size());
        SymShape s(d.begin(), d.begin() + ax);
        s.insert(s.end(), idx.begin(), idx.end());
        s.insert(s.end(), d.begin() + ax + 1, d.end());
        return s;
      })
      .Case<GatherNdOp>([&](GatherNdOp o) -> FailureOr<SymShape> {
        const SymShape &d = in[0], &idx = in[1];
        std::optional<int64_t> depth =
            idx.empty() ? std::nullopt : idx.back().constant();
        int64_t b = o.getBatchDims();
        if (!depth || b + *depth > static_cast<int64_t>(d.size()))
          return explain(why, "gather_nd index depth must be static and fit "
                              "the data rank");
        SymShape s(idx.begin(), idx.end() - 1);
        s.insert(s.end(), d.begin() + b + *depth, d.end());
        return s;
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
          [&](Operation *o) -> FailureOr<SymShape> {
            const SymShape &x = in[0];
            auto axes = o->getAttrOfType<DenseI64ArrayAttr>("axes");
            SmallVector<bool> reduced(x.size(), !axes || axes.empty());
            if (axes)
              for (int64_t a : axes.asArrayRef())
                reduced[normAxis(a, x.size())] = true;
            auto keep = o->getAttrOfType<BoolAttr>("keepdims");
            bool keepdims = !keep || keep.getValue();
            SymShape s;
            for (size_t i = 0; i < x.size(); ++i) {
              if (!reduced[i])
                s.push_back(x[i]);
              else if (keepdims)
                s.push_back(SymExpr(1));
            }
            return s;
          })
      .Case<MatMulOp>([&](Operation *) -> FailureOr<SymShape> {
        SymShape a = in[0], b = in[1];
        bool aVec = a.size() == 1, bVec = b.size() == 1;
        if (aVec)
          a.insert(a.begin(), SymExpr(1));
        if (bVec)
          b.push_back(SymExpr(1));
        FailureOr<SymShape> s = broadcast({SymShape(a.begin(), a.end() - 2),
                                           SymShape(b.begin(), b.end() - 2)},
                                          symbols, why);
        if (failed(s))
          return failure();
        if (!aVec)
          s->push_back(a[a.size() - 2]);
        if (!bVec)
          s->push_back(b.back());
        return s;
      })
      .Case<LinearOp>([&](LinearOp l) -> FailureOr<SymShape> {
        SymShape s = in[0];
        s.back() = l.getTransposeWeight() ? in[1][0] : in[1][1];
        return s;
      })
      .Case<EmbeddingOp>([&](Operation *) -> FailureOr<SymShape> {
        SymShape s = in[1];
        s.push_back(in[0][1]);
        return s;
      })
      .Case<LabelLogProbsOp>([&](Operation *) -> FailureOr<SymShape> {
        if (in[0].empty())
          return explain(why, "label_log_probs of a rank-0 tensor");
        return SymShape(in[0].begin(), in[0].end() - 1);
      })
      .Case<EmbeddingGradOp>([&](EmbeddingGradOp e) -> FailureOr<SymShape> {
        if (in[1].empty())
          return explain(why, "embedding_grad of a rank-0 grad_out");
        return SymShape{SymExpr(static_cast<int64_t>(e.getRows())),
                        in[1].back()};
      })
      .Case<AttentionOp>([&](Operation *) -> FailureOr<SymShape> {
        SymShape s = in[0];
        s.back() = in[2].back();
        return s;
      })
      .Case<SampleOp>([&](Operation *) -> FailureOr<SymShape> {
        return SymShape{in[0][0]};
      })
      .Case<MaskedMeanOp>(
          [&](Operation *) -> FailureOr<SymShape> { return SymShape{}; })
      .Default([&](Operation *o) -> FailureOr<SymShape> {
        // Shape-preserving hg ops: unary math, cast, clip, cumsum, trilu,
        // softmax, norms, rotary.
        if (!isa_and_nonnull<HgDialect>(o->getDialect()))
          return explain(why, "not an hg op");
        if (in.empty())
          return explain(why, "no symbolic shape rule for this op");
        return in[0];
      });
}

} // namespace

FailureOr<SymShape>
inferArgumentSymbolicShape(func::FuncOp func, unsigned argIndex,
                           std::vector<std::string> &symbols,
                           std::string *why) {
  std::string arg = "argument " + std::to_string(argIndex);
  auto type = dyn_cast<RankedTensorType>(func.getArgument(argIndex).getType());
  if (!type)
    return explain(why, arg + " is not a ranked tensor");
  auto dims = func.getArgAttrOfType<ArrayAttr>(argIndex, "hg.dims");
  SymShape shape;
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(size)) {
      shape.push_back(SymExpr(size));
      continue;
    }
    auto name =
        dims && i < dims.size() ? dyn_cast<StringAttr>(dims[i]) : StringAttr();
    if (!name)
      return explain(why, arg + ": dynamic dimension " + llvm::Twine(i) +
                              " has no name in hg.dims");
    std::string error;
    std::optional<SymExpr> e =
        SymExpr::parseAddingNames(name.str(), symbols, &error);
    if (!e)
      return explain(why, arg + ": " + error);
    shape.push_back(std::move(*e));
  }
  return shape;
}

/// `shape` checked against the result type `t` (its rank and static
/// dims); the type's static dims replace the rule's polynomials for them.
static LogicalResult matchResultType(Type t, SymShape &shape,
                                     std::string *why) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type)
    return explain(why, "result is not a ranked tensor");
  if (type.getRank() != static_cast<int64_t>(shape.size()))
    return explain(why, "symbolic rank " + llvm::Twine(shape.size()) +
                            " disagrees with result type");
  for (auto [i, size] : llvm::enumerate(type.getShape())) {
    if (ShapedType::isDynamic(size))
      continue;
    std::optional<int64_t> c = shape[i].constant();
    if (c && *c != size)
      return explain(why, "dimension " + llvm::Twine(i) + " is " +
                              llvm::Twine(*c) + " symbolically but " +
                              llvm::Twine(size) + " in the result type");
    shape[i] = SymExpr(size); // the type knows better
  }
  return success();
}

FailureOr<SymShape> inferSymbolicShape(Operation *op,
                                       ArrayRef<SymShape> operandShapes,
                                       const std::vector<std::string> &symbols,
                                       std::string *why) {
  assert(operandShapes.size() == op->getNumOperands() &&
         "one shape per operand");
  if (op->getNumResults() != 1)
    return explain(why, "expected one result");
  FailureOr<SymShape> shape = ruleFor(op, operandShapes, symbols, why);
  if (failed(shape) ||
      failed(matchResultType(op->getResult(0).getType(), *shape, why)))
    return failure();
  return shape;
}

/// hg.layer_norm_grad: grad_input has the input's shape, grad_weight and
/// grad_bias its normalised dims [axis, rank).
static SmallVector<SymShape> layerNormGradShapes(LayerNormGradOp grad,
                                                 const SymShape &input) {
  const int64_t rank = static_cast<int64_t>(input.size());
  std::optional<int64_t> axis =
      normalizeAxis(static_cast<int64_t>(grad.getAxis()), rank);
  assert(axis && "the verifier checks the axis");
  SymShape normalized(input.begin() + *axis, input.end());
  return {input, normalized, normalized};
}

FailureOr<SmallVector<SymShape>>
inferSymbolicShapes(Operation *op, ArrayRef<SymShape> operandShapes,
                    const std::vector<std::string> &symbols, std::string *why) {
  auto shapeOf = [&](OpOperand &o) -> const SymShape & {
    return operandShapes[o.getOperandNumber()];
  };
  SmallVector<SymShape> shapes;
  if (auto step = dyn_cast<SampleStepOp>(op)) {
    // The emitted tokens have the logits' rows; the state keeps its shapes.
    shapes = {SymShape{shapeOf(step.getLogitsMutable())[0]},
              shapeOf(step.getTokensMutable()),
              shapeOf(step.getLogprobsMutable()),
              shapeOf(step.getLengthsMutable()),
              shapeOf(step.getFinishedMutable()),
              shapeOf(step.getCountMutable()),
              shapeOf(step.getRngMutable())};
  } else if (auto update = dyn_cast<AdamWUpdateOp>(op)) {
    shapes = {shapeOf(update.getParamMutable()),
              shapeOf(update.getExpAvgMutable()),
              shapeOf(update.getExpAvgSqMutable())};
    if (update.getNextWorkingParam())
      shapes.push_back(shapeOf(update.getParamMutable()));
  } else if (auto grad = dyn_cast<AttentionGradOp>(op)) {
    // Each gradient has its input's shape.
    shapes = {shapeOf(grad.getQueryMutable()), shapeOf(grad.getKeyMutable()),
              shapeOf(grad.getValueMutable())};
  } else if (auto grad = dyn_cast<LayerNormGradOp>(op)) {
    shapes = layerNormGradShapes(grad, operandShapes[0]);
  } else if (auto rewards = dyn_cast<PpoRewardsOp>(op)) {
    // rewards and old_values: the log-probabilities' [B, L].
    shapes = {operandShapes[0], operandShapes[0]};
  } else if (isa<PairwiseRankingLossOp>(op)) {
    // loss [], end_scores [2B] (the values' rows), accuracy [].
    if (operandShapes[0].size() != 2)
      return explain(why, "pairwise_ranking_loss of values that are not "
                          "[2B, T]");
    shapes = {SymShape{}, SymShape{operandShapes[0][0]}, SymShape{}};
  } else if (auto gae = dyn_cast<GaeOp>(op)) {
    // advantages and returns: [B, L - start].
    SymShape s = operandShapes[0];
    if (s.size() != 2)
      return explain(why, "gae of rewards that are not [B, L]");
    s[1] = s[1] - SymExpr(static_cast<int64_t>(gae.getStart()));
    shapes = {s, s};
  } else {
    FailureOr<SymShape> shape =
        inferSymbolicShape(op, operandShapes, symbols, why);
    if (failed(shape))
      return failure();
    return SmallVector<SymShape>{std::move(*shape)};
  }
  for (auto [result, shape] : llvm::zip(op->getResults(), shapes))
    if (failed(matchResultType(result.getType(), shape, why)))
      return failure();
  return shapes;
}

} // namespace hybridc::hg
