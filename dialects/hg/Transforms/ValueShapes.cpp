// ValueShapes: on-demand symbolic shape inference over hg ops.
#include "dialects/hg/Transforms/ValueShapes.h"

#include "dialects/hg/IR/HgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc::hg {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

std::optional<SymShape> broadcast(ArrayRef<const SymShape *> shapes) {
  size_t rank = 0;
  for (const SymShape *s : shapes)
    rank = std::max(rank, s->size());
  SymShape out(rank, SymExpr(1));
  for (const SymShape *s : shapes) {
    size_t off = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      const SymExpr &d = (*s)[i];
      SymExpr &o = out[off + i];
      if (d == SymExpr(1) || d == o)
        continue;
      if (o != SymExpr(1))
        return std::nullopt;
      o = d;
    }
  }
  return out;
}

/// A positive-step slice bound as an index in [0, dim].
std::optional<SymExpr> sliceIndex(int64_t v, const SymExpr &dim) {
  if (v >= (kInt64Max >> 1))
    return dim;
  if (v <= (kInt64Min >> 1))
    return SymExpr(0);
  if (v >= 0)
    return SymExpr::knownGE(dim, SymExpr(v)) ? std::optional<SymExpr>(v)
                                             : std::nullopt;
  SymExpr idx = dim + SymExpr(v);
  return SymExpr::knownGE(idx, 0) ? std::optional<SymExpr>(idx) : std::nullopt;
}

} // namespace

ValueShapes::ValueShapes(Operation *anchor) {
  auto func = dyn_cast<func::FuncOp>(anchor);
  if (!func)
    func = anchor->getParentOfType<func::FuncOp>();
  if (!func)
    return;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (auto dims = func.getArgAttrOfType<ArrayAttr>(i, "hg.dims"))
      for (Attribute d : dims)
        if (auto s = dyn_cast<StringAttr>(d)) {
          try {
            (void)SymExpr::parse(s.str(), symbols_);
          } catch (const std::exception &) {
          }
        }
}

Attribute ValueShapes::dimAttr(MLIRContext *context, const SymExpr &e) const {
  if (std::optional<int64_t> c = e.constant())
    return IntegerAttr::get(IntegerType::get(context, 64), *c);
  return StringAttr::get(context, str(e));
}

ArrayAttr ValueShapes::shapeAttr(MLIRContext *context,
                                 const SymShape &shape) const {
  SmallVector<Attribute> dims;
  for (const SymExpr &d : shape)
    dims.push_back(dimAttr(context, d));
  return ArrayAttr::get(context, dims);
}

std::optional<SymShape> ValueShapes::parseShape(Attribute attr) {
  auto arr = dyn_cast_or_null<ArrayAttr>(attr);
  if (!arr)
    return std::nullopt;
  SymShape out;
  for (Attribute a : arr) {
    if (auto i = dyn_cast<IntegerAttr>(a)) {
      out.push_back(SymExpr(i.getInt()));
      continue;
    }
    auto s = dyn_cast<StringAttr>(a);
    if (!s)
      return std::nullopt;
    try {
      out.push_back(SymExpr::parse(s.str(), symbols_));
    } catch (const std::exception &) {
      return std::nullopt;
    }
  }
  return out;
}

void ValueShapes::forget(Operation *op) {
  for (Value result : op->getResults())
    cache_.erase(result);
}

std::optional<SymExpr> ValueShapes::dim(Value value, int64_t d) {
  std::optional<SymShape> s = get(value);
  if (!s)
    return std::nullopt;
  int64_t rank = static_cast<int64_t>(s->size());
  if (d < 0)
    d += rank;
  if (d < 0 || d >= rank)
    return std::nullopt;
  return (*s)[d];
}

std::optional<SymShape> ValueShapes::get(Value value) {
  // Post-order over the defining ops, without recursion: residual streams
  // make def chains as long as the model.
  SmallVector<Value> stack = {value};
  while (!stack.empty()) {
    Value cur = stack.back();
    if (cache_.count(cur)) {
      stack.pop_back();
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(cur.getType());
    Operation *op = cur.getDefiningOp();
    bool ready = true;
    if (type && !type.hasStaticShape() && op)
      for (Value operand : op->getOperands())
        if (!cache_.count(operand)) {
          stack.push_back(operand);
          ready = false;
        }
    if (!ready)
      continue;
    cache_[cur] = compute(cur);
    stack.pop_back();
  }
  return cache_.lookup(value);
}

std::optional<SymShape> ValueShapes::compute(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return std::nullopt;
  if (type.hasStaticShape())
    return SymShape(type.getShape().begin(), type.getShape().end());
  std::optional<SymShape> shape;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    ArrayAttr dims =
        func ? func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "hg.dims")
             : ArrayAttr();
    shape = parseShape(dims);
  } else {
    shape = computeOp(value.getDefiningOp(),
                      cast<OpResult>(value).getResultNumber());
  }
  if (!shape || static_cast<int64_t>(shape->size()) != type.getRank())
    return std::nullopt;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (type.isDynamicDim(i))
      continue;
    std::optional<int64_t> c = (*shape)[i].constant();
    if (c && *c != type.getDimSize(i))
      return std::nullopt; // inconsistent: trust neither
    (*shape)[i] = SymExpr(type.getDimSize(i));
  }
  return shape;
}

std::optional<SymShape> ValueShapes::computeOp(Operation *op,
                                               unsigned resultIndex) {
  if (op->getNumResults() != 1 || resultIndex != 0)
    return std::nullopt;
  SmallVector<SymShape> in;
  for (Value operand : op->getOperands()) {
    std::optional<SymShape> s = cache_.lookup(operand);
    if (!s)
      return std::nullopt;
    in.push_back(*s);
  }
  auto axisOf = [&](int64_t axis, size_t rank) {
    return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
  };
  return TypeSwitch<Operation *, std::optional<SymShape>>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ModOp, EqualOp,
            LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, AndOp, OrOp, XorOp,
            SelectOp>([&](Operation *) {
        SmallVector<const SymShape *> ptrs;
        for (const SymShape &s : in)
          ptrs.push_back(&s);
        return broadcast(ptrs);
      })
      .Case<ReshapeOp, BroadcastToOp>(
          [&](Operation *o) { return parseShape(o->getAttr("shape")); })
      .Case<IotaOp>([&](IotaOp o) { return parseShape(o.getLength()); })
      .Case<TransposeOp>([&](TransposeOp o) -> std::optional<SymShape> {
        SymShape s;
        for (int64_t p : o.getPerm())
          s.push_back(in[0][p]);
        return s;
      })
      .Case<SliceOp>([&](SliceOp o) -> std::optional<SymShape> {
        SymShape s = in[0];
        for (auto [axis, start, end, step] :
             llvm::zip(o.getAxes(), o.getStarts(), o.getEnds(), o.getSteps())) {
          int64_t ax = axisOf(axis, s.size());
          const SymExpr dim = s[ax];
          if (std::optional<int64_t> c = dim.constant()) {
            s[ax] = SymExpr(resolveSliceBounds(*c, start, end, step).length);
            continue;
          }
          if (step == -1 && (start >= (kInt64Max >> 1) || start == -1) &&
              end <= (kInt64Min >> 1)) {
            continue; // the whole dim reversed
          }
          if (step <= 0)
            return std::nullopt;
          std::optional<SymExpr> b = sliceIndex(start, dim),
                                 e = sliceIndex(end, dim);
          if (!b || !e)
            return std::nullopt;
          SymExpr span = *e - *b;
          if (SymExpr::knownGE(SymExpr(0), span))
            s[ax] = SymExpr(0);
          else if (!SymExpr::knownGE(span, 0))
            return std::nullopt;
          else if (step == 1)
            s[ax] = span;
          else if (std::optional<int64_t> c = span.constant())
            s[ax] = SymExpr((*c + step - 1) / step);
          else if (std::optional<SymExpr> q = span.divExact(SymExpr(step)))
            s[ax] = *q;
          else
            return std::nullopt;
        }
        return s;
      })
      .Case<ConcatOp>([&](ConcatOp o) -> std::optional<SymShape> {
        SymShape s = in[0];
        int64_t ax = axisOf(o.getAxis(), s.size());
        for (size_t i = 1; i < in.size(); ++i)
          s[ax] = s[ax] + in[i][ax];
        return s;
      })
      .Case<GatherOp>([&](GatherOp o) -> std::optional<SymShape> {
        const SymShape &d = in[0], &idx = in[1];
        int64_t ax = axisOf(o.getAxis(), d.size());
        SymShape s(d.begin(), d.begin() + ax);
        s.insert(s.end(), idx.begin(), idx.end());
        s.insert(s.end(), d.begin() + ax + 1, d.end());
        return s;
      })
      .Case<GatherNdOp>([&](GatherNdOp o) -> std::optional<SymShape> {
        const SymShape &d = in[0], &idx = in[1];
        std::optional<int64_t> depth = idx.back().constant();
        int64_t b = o.getBatchDims();
        if (!depth || b + *depth > static_cast<int64_t>(d.size()))
          return std::nullopt;
        SymShape s(idx.begin(), idx.end() - 1);
        s.insert(s.end(), d.begin() + b + *depth, d.end());
        return s;
      })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp>(
          [&](Operation *o) -> std::optional<SymShape> {
            const SymShape &x = in[0];
            auto axes = o->getAttrOfType<DenseI64ArrayAttr>("axes");
            SmallVector<bool> reduced(x.size(), !axes || axes.empty());
            if (axes)
              for (int64_t a : axes.asArrayRef())
                reduced[axisOf(a, x.size())] = true;
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
      .Case<MatMulOp>([&](Operation *) -> std::optional<SymShape> {
        SymShape a = in[0], b = in[1];
        bool aVec = a.size() == 1, bVec = b.size() == 1;
        if (aVec)
          a.insert(a.begin(), SymExpr(1));
        if (bVec)
          b.push_back(SymExpr(1));
        SymShape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
        std::optional<SymShape> s = broadcast({&ab, &bb});
        if (!s)
          return std::nullopt;
        if (!aVec)
          s->push_back(a[a.size() - 2]);
        if (!bVec)
          s->push_back(b.back());
        return s;
      })
      .Case<LinearOp>([&](LinearOp l) -> std::optional<SymShape> {
        SymShape s = in[0];
        s.back() = l.getTransposeWeight() ? in[1][0] : in[1][1];
        return s;
      })
      .Case<EmbeddingOp>([&](Operation *) -> std::optional<SymShape> {
        SymShape s = in[1];
        s.push_back(in[0][1]);
        return s;
      })
      .Case<AttentionOp>([&](Operation *) -> std::optional<SymShape> {
        SymShape s = in[0];
        s.back() = in[2].back();
        return s;
      })
      .Case<ConstantOp>([&](Operation *) { return std::nullopt; })
      .Default([&](Operation *o) -> std::optional<SymShape> {
        // Shape-preserving hg ops: unary math, cast, clip, cumsum, trilu,
        // softmax, norms, rotary.
        if (o->getDialect() != o->getContext()->getLoadedDialect("hg") ||
            in.empty())
          return std::nullopt;
        return in[0];
      });
}

} // namespace hybridc::hg
