// Symbolic shape propagation over hg ops (see SymbolicShapes.h).
#include "compiler/Analysis/SymbolicShapes.h"

#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc {
namespace {

llvm::Error opError(Operation *op, const llvm::Twine &msg) {
  std::string loc;
  llvm::raw_string_ostream os(loc);
  op->getLoc().print(os);
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 op->getName().getStringRef() + " at " +
                                     os.str() + ": " + msg);
}

int64_t normAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

/// NumPy broadcasting of symbolic shapes; dims must be provably compatible.
llvm::Expected<SymShape> broadcast(Operation *op,
                                   llvm::ArrayRef<const SymShape *> shapes) {
  size_t rank = 0;
  for (auto *s : shapes)
    rank = std::max(rank, s->size());
  SymShape out(rank, SymExpr(1));
  for (auto *s : shapes) {
    size_t off = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      const SymExpr &d = (*s)[i];
      SymExpr &o = out[off + i];
      if (d == SymExpr(1) || d == o)
        continue;
      if (o == SymExpr(1)) {
        o = d;
        continue;
      }
      return opError(op, "cannot prove dimensions " + std::to_string(i) +
                             " broadcast-compatible");
    }
  }
  return out;
}

} // namespace

const SymShape &SymbolicShapes::shapeOf(Value v) const {
  auto it = shapes_.find(v);
  assert(it != shapes_.end() && "value without a symbolic shape");
  return it->second;
}

std::string SymbolicShapes::str(const SymShape &shape) const {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    r += (i ? ", " : "") + shape[i].str(symbols_);
  return r + "]";
}

llvm::Expected<SymShape> SymbolicShapes::parseShapeAttr(Operation *op,
                                                        Attribute attr) {
  auto arr = dyn_cast_or_null<ArrayAttr>(attr);
  if (!arr)
    return opError(op, "expected a shape array attribute");
  SymShape out;
  for (Attribute a : arr) {
    if (auto i = dyn_cast<IntegerAttr>(a)) {
      out.push_back(SymExpr(i.getInt()));
    } else if (auto s = dyn_cast<StringAttr>(a)) {
      try {
        out.push_back(SymExpr::parse(s.str(), symbols_, /*addUnknown=*/false));
      } catch (const hybrid::Error &e) {
        return opError(op, e.what());
      }
    } else {
      return opError(op, "shape entries must be integers or strings");
    }
  }
  return out;
}

llvm::Expected<SymbolicShapes> SymbolicShapes::compute(func::FuncOp func) {
  SymbolicShapes result;
  for (BlockArgument arg : func.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "argument %u is not a ranked tensor",
                                     arg.getArgNumber());
    auto dims = func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), "hg.dims");
    SymShape shape;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      if (!type.isDynamicDim(i)) {
        shape.push_back(SymExpr(type.getDimSize(i)));
        continue;
      }
      StringAttr name = dims && i < static_cast<int64_t>(dims.size())
                            ? dyn_cast<StringAttr>(dims[i])
                            : StringAttr();
      if (!name)
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "argument %u: dynamic dimension %lld has no name in hg.dims",
            arg.getArgNumber(), static_cast<long long>(i));
      shape.push_back(SymExpr::parse(name.str(), result.symbols_));
    }
    result.shapes_[arg] = std::move(shape);
  }
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    if (llvm::Error err = result.computeOp(&op))
      return std::move(err);
  }
  return result;
}

llvm::Error SymbolicShapes::computeOp(Operation *op) {
  auto in = [&](unsigned i) -> const SymShape & {
    return shapeOf(op->getOperand(i));
  };
  auto intAttr = [&](StringRef name, int64_t dflt) {
    if (auto a = op->getAttrOfType<IntegerAttr>(name))
      return a.getInt();
    return dflt;
  };
  auto i64Array = [&](StringRef name) -> llvm::ArrayRef<int64_t> {
    if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
      return a.asArrayRef();
    return {};
  };

  llvm::Expected<SymShape> shape =
      llvm::TypeSwitch<Operation *, llvm::Expected<SymShape>>(op)
          .Case<hg::ConstantOp>([&](auto c) -> llvm::Expected<SymShape> {
            SymShape s;
            for (int64_t d : cast<RankedTensorType>(c.getType()).getShape())
              s.push_back(SymExpr(d));
            return s;
          })
          .Case<hg::AddOp, hg::SubOp, hg::MulOp, hg::DivOp, hg::PowOp,
                hg::MaxOp, hg::MinOp, hg::ModOp, hg::EqualOp, hg::LessOp,
                hg::LessEqualOp, hg::GreaterOp, hg::GreaterEqualOp, hg::AndOp,
                hg::OrOp, hg::XorOp, hg::SelectOp>(
              [&](Operation *) -> llvm::Expected<SymShape> {
                llvm::SmallVector<const SymShape *> ins;
                for (unsigned i = 0; i < op->getNumOperands(); ++i)
                  ins.push_back(&in(i));
                return broadcast(op, ins);
              })
          .Case<hg::ReshapeOp, hg::BroadcastToOp>(
              [&](Operation *) -> llvm::Expected<SymShape> {
                auto s = parseShapeAttr(op, op->getAttr("shape"));
                if (!s)
                  return s.takeError();
                if (isa<hg::ReshapeOp>(op)) {
                  SymExpr a(1), b(1);
                  for (auto &d : in(0))
                    a = a * d;
                  for (auto &d : *s)
                    b = b * d;
                  if (a != b)
                    return opError(op, "element count " + a.str(symbols_) +
                                           " != " + b.str(symbols_));
                }
                return s;
              })
          .Case<hg::IotaOp>([&](Operation *) -> llvm::Expected<SymShape> {
            return parseShapeAttr(op, op->getAttr("length"));
          })
          .Case<hg::TransposeOp>([&](Operation *) -> llvm::Expected<SymShape> {
            SymShape s;
            for (int64_t p : i64Array("perm"))
              s.push_back(in(0)[p]);
            return s;
          })
          .Case<hg::SliceOp>([&](Operation *) -> llvm::Expected<SymShape> {
            SymShape s = in(0);
            auto axes = i64Array("axes"), starts = i64Array("starts"),
                 ends = i64Array("ends"), steps = i64Array("steps");
            constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
            constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
            for (size_t i = 0; i < axes.size(); ++i) {
              int64_t ax = normAxis(axes[i], s.size());
              const SymExpr dim = s[ax];
              int64_t step = steps[i];
              if (auto c = dim.constant()) {
                int64_t d = *c, st = starts[i], en = ends[i];
                auto clampIdx = [&](int64_t v) {
                  if (v < 0 && v != kMin)
                    v += d;
                  if (step > 0)
                    return std::clamp<int64_t>(v == kMin ? 0 : v, 0, d);
                  return std::clamp<int64_t>(v == kMax ? d - 1 : v, -1, d - 1);
                };
                st = clampIdx(st);
                en = clampIdx(en);
                int64_t n = step > 0 ? (en - st + step - 1) / step
                                     : (st - en + (-step) - 1) / (-step);
                s[ax] = SymExpr(std::max<int64_t>(n, 0));
                continue;
              }
              if (step != 1)
                return opError(op, "strided slice of symbolic dimension " +
                                       dim.str(symbols_));
              auto bound = [&](int64_t v) -> std::optional<SymExpr> {
                if (v == kMax)
                  return dim;
                // dim - |v| is not clamped at 0 as ONNX would: a binding
                // that makes it negative fails the runtime's shape check.
                if (v < 0)
                  return dim + SymExpr(v);
                // A positive bound is itself when provably inside the dim.
                if (SymExpr::knownGE(dim, SymExpr(v)))
                  return SymExpr(v);
                return std::nullopt;
              };
              auto st = bound(starts[i]), en = bound(ends[i]);
              if (!st || !en)
                return opError(op, "slice bound on symbolic dimension " +
                                       dim.str(symbols_) +
                                       " is not provably in range");
              s[ax] = *en - *st;
            }
            return s;
          })
          .Case<hg::ConcatOp>([&](Operation *) -> llvm::Expected<SymShape> {
            SymShape s = in(0);
            int64_t ax = normAxis(intAttr("axis", 0), s.size());
            for (unsigned i = 1; i < op->getNumOperands(); ++i)
              s[ax] = s[ax] + in(i)[ax];
            return s;
          })
          .Case<hg::GatherOp>([&](Operation *) -> llvm::Expected<SymShape> {
            const SymShape &d = in(0), &idx = in(1);
            int64_t ax = normAxis(intAttr("axis", 0), d.size());
            SymShape s(d.begin(), d.begin() + ax);
            s.insert(s.end(), idx.begin(), idx.end());
            s.insert(s.end(), d.begin() + ax + 1, d.end());
            return s;
          })
          .Case<hg::GatherNdOp>([&](Operation *) -> llvm::Expected<SymShape> {
            const SymShape &d = in(0), &idx = in(1);
            int64_t b = intAttr("batch_dims", 0);
            auto r = idx.back().constant();
            if (!r)
              return opError(op, "gather_nd index depth must be static");
            SymShape s(idx.begin(), idx.end() - 1);
            s.insert(s.end(), d.begin() + b + *r, d.end());
            return s;
          })
          .Case<hg::ReduceSumOp, hg::ReduceMeanOp, hg::ReduceMaxOp,
                hg::ReduceMinOp, hg::ReduceProdOp>(
              [&](Operation *) -> llvm::Expected<SymShape> {
                const SymShape &x = in(0);
                auto axesRef = i64Array("axes");
                llvm::SmallVector<bool> reduced(x.size(), axesRef.empty());
                for (int64_t a : axesRef)
                  reduced[normAxis(a, x.size())] = true;
                auto keep = op->getAttrOfType<BoolAttr>("keepdims");
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
          .Case<hg::MatMulOp>([&](Operation *) -> llvm::Expected<SymShape> {
            SymShape a = in(0), b = in(1);
            bool aVec = a.size() == 1, bVec = b.size() == 1;
            if (aVec)
              a.insert(a.begin(), SymExpr(1));
            if (bVec)
              b.push_back(SymExpr(1));
            SymShape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
            auto batch = broadcast(op, {&ab, &bb});
            if (!batch)
              return batch.takeError();
            SymShape s = *batch;
            if (!aVec)
              s.push_back(a[a.size() - 2]);
            if (!bVec)
              s.push_back(b.back());
            return s;
          })
          .Case<hg::LinearOp>([&](hg::LinearOp l) -> llvm::Expected<SymShape> {
            SymShape s = in(0);
            const SymShape &w = in(1);
            s.back() = l.getTransposeWeight() ? w[0] : w[1];
            return s;
          })
          .Case<hg::EmbeddingOp>([&](Operation *) -> llvm::Expected<SymShape> {
            SymShape s = in(1);
            s.push_back(in(0)[1]);
            return s;
          })
          .Case<hg::AttentionOp>([&](Operation *) -> llvm::Expected<SymShape> {
            SymShape s = in(0);
            s.back() = in(2).back();
            return s;
          })
          .Default([&](Operation *) -> llvm::Expected<SymShape> {
            // Shape-preserving ops: unary math, cast, clip, cumsum, trilu,
            // softmax, norms, rotary.
            if (op->getNumOperands() == 0 || op->getNumResults() != 1)
              return opError(op, "no symbolic shape rule for this op");
            return in(0);
          });
  if (!shape)
    return shape.takeError();
  // Cross-check against the static dims of the result type.
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  if (type.getRank() != static_cast<int64_t>(shape->size()))
    return opError(op, "symbolic rank " + std::to_string(shape->size()) +
                           " disagrees with result type");
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (type.isDynamicDim(i))
      continue;
    auto c = (*shape)[i].constant();
    if (!c)
      (*shape)[i] = SymExpr(type.getDimSize(i)); // type knows better
    else if (*c != type.getDimSize(i))
      return opError(op, "dimension " + std::to_string(i) + " is " +
                             std::to_string(*c) + " symbolically but " +
                             std::to_string(type.getDimSize(i)) +
                             " in the result type");
  }
  shapes_[op->getResult(0)] = std::move(*shape);
  return llvm::Error::success();
}

} // namespace hybridc
