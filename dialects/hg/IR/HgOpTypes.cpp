// Result type inference and verifiers of the hg ops.
//
// inferReturnTypes checks what it needs to compute a result type (ranks,
// axes, permutations, broadcast compatibility) and says what is wrong, so a
// builder given bad operands fails with a reason. Every verify() first runs
// that inference and compares the declared result type, then checks the
// rest (element types, contracting dims, parameter shapes). verify() runs
// before the InferTypeOpInterface's own check, so each error is reported
// once, by verify().
#include "dialects/hg/IR/HgOps.h"

#include "hybrid/SymExpr.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SmallString.h"

#include <functional>
#include <limits>

using namespace mlir;
using namespace hybridc::hg;

//===----------------------------------------------------------------------===//
// Public helpers
//===----------------------------------------------------------------------===//

std::optional<int64_t> hybridc::hg::getShapeEntryDim(Attribute entry,
                                                     std::string *why) {
  auto explain = [&](std::string text) -> std::optional<int64_t> {
    if (why)
      *why = std::move(text);
    return std::nullopt;
  };
  if (auto i = dyn_cast_or_null<IntegerAttr>(entry)) {
    if (!i.getType().isSignlessInteger() && !i.getType().isIndex())
      return explain("size must be a signless integer");
    int64_t v = i.getInt();
    if (v < 0)
      return explain("size " + std::to_string(v) + " is negative");
    return v;
  }
  if (auto s = dyn_cast_or_null<StringAttr>(entry)) {
    std::vector<std::string> names;
    std::string error;
    std::optional<hybrid::SymExpr> e =
        hybrid::SymExpr::parseAddingNames(s.str(), names, &error);
    if (!e)
      return explain(error);
    if (std::optional<int64_t> c = e->constant()) {
      if (*c < 0)
        return explain("size '" + s.str() + "' is negative");
      return *c;
    }
    return ShapedType::kDynamic;
  }
  return explain("entries must be integers or symbolic size strings");
}

ArrayAttr hybridc::hg::getStaticShapeAttr(Builder &b, ArrayRef<int64_t> sizes) {
  SmallVector<Attribute> entries;
  for (int64_t s : sizes)
    entries.push_back(b.getI64IntegerAttr(s));
  return b.getArrayAttr(entries);
}

std::optional<SmallVector<int64_t>>
hybridc::hg::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    int64_t &o = out[rank - 1 - i];
    if (l == 1)
      o = r;
    else if (r == 1)
      o = l;
    else if (ShapedType::isDynamic(l))
      o = r; // The dynamic side must be 1 or r at run time.
    else if (ShapedType::isDynamic(r) || l == r)
      o = l;
    else
      return std::nullopt;
  }
  return out;
}

std::optional<int64_t> hybridc::hg::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

SliceBounds hybridc::hg::resolveSliceBounds(int64_t dim, int64_t start,
                                            int64_t end, int64_t step) {
  assert(step != 0 && dim >= 0 && "slice step must be non-zero");
  if (dim == 0)
    return {0, 0};
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  int64_t span;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    span = end - start;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    span = start - end;
    step = -step;
  }
  if (span <= 0)
    return {start, 0};
  return {start, span / step + (span % step != 0)};
}

std::string hybridc::hg::formatShape(ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      out += ", ";
    out += ShapedType::isDynamic(d) ? "?" : std::to_string(d);
  }
  return out + "]";
}

bool hybridc::hg::areCompatibleTensorTypes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip(lhs, rhs)) {
    auto lt = dyn_cast<RankedTensorType>(l);
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt) {
      if (l != r)
        return false;
      continue;
    }
    if (lt.getElementType() != rt.getElementType() ||
        failed(verifyCompatibleShape(lt.getShape(), rt.getShape())))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Checks behind type inference
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kDynamic = ShapedType::kDynamic;
using Emitter = llvm::function_ref<InFlightDiagnostic()>;

bool isFloat(Type t) { return t.isF32() || t.isBF16() || t.isF16(); }
bool isInt(Type t) {
  return t.isSignlessInteger(64) || t.isSignlessInteger(32);
}
bool isI1(Type t) { return t.isSignlessInteger(1); }

Type elementTypeOf(Value v) {
  return cast<ShapedType>(v.getType()).getElementType();
}
RankedTensorType tensorTypeOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Collects inferred types and reports, prefixed like emitOpError, why a
/// type cannot be inferred (silently when there is no location).
class Inference {
public:
  Inference(MLIRContext *context, StringRef opName, std::optional<Location> loc,
            SmallVectorImpl<Type> &types)
      : context(context), opName(opName), loc(loc), types(types),
        emitFn([this] { return emit(); }) {}

  InFlightDiagnostic emit() const {
    if (!loc)
      return InFlightDiagnostic();
    InFlightDiagnostic d = emitError(*loc);
    d << "'" << opName << "' op ";
    return d;
  }
  Emitter emitter() const { return emitFn; }

  /// The operand as a ranked tensor, or a reported failure.
  FailureOr<RankedTensorType> tensor(Value v, StringRef name) const {
    auto t = v ? dyn_cast<RankedTensorType>(v.getType()) : nullptr;
    if (!t)
      return emit() << "expects " << name << " to be a ranked tensor",
             failure();
    return t;
  }
  FailureOr<RankedTensorType> tensorOfRank(Value v, StringRef name,
                                           int64_t rank) const {
    FailureOr<RankedTensorType> t = tensor(v, name);
    if (succeeded(t) && t->getRank() != rank)
      return emit() << "expects " << name << " of rank " << rank << ", got "
                    << *t,
             failure();
    return t;
  }

  LogicalResult result(ArrayRef<int64_t> shape, Type elementType) {
    types.push_back(RankedTensorType::get(shape, elementType));
    return success();
  }
  LogicalResult result(Type type) {
    types.push_back(type);
    return success();
  }

  Type i1() const { return IntegerType::get(context, 1); }

private:
  MLIRContext *context;
  StringRef opName;
  std::optional<Location> loc;
  SmallVectorImpl<Type> &types;
  std::function<InFlightDiagnostic()> emitFn;
};

FailureOr<int64_t> checkAxis(int64_t axis, int64_t rank, Emitter emit,
                             StringRef what = "axis") {
  if (std::optional<int64_t> a = normalizeAxis(axis, rank))
    return *a;
  return emit() << what << " " << axis << " is out of range for rank " << rank
                << " (valid: [" << -rank << ", " << rank << "))",
         failure();
}

/// Normalised, distinct axes; an empty list stands for all axes when
/// `emptyIsAll`.
FailureOr<SmallVector<int64_t>> checkAxes(ArrayRef<int64_t> axes, int64_t rank,
                                          Emitter emit, bool emptyIsAll) {
  SmallVector<int64_t> out;
  if (axes.empty() && emptyIsAll) {
    out = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    return out;
  }
  llvm::SmallBitVector seen(rank);
  for (int64_t axis : axes) {
    FailureOr<int64_t> a = checkAxis(axis, rank, emit);
    if (failed(a))
      return failure();
    if (seen.test(*a))
      return emit() << "axis " << axis << " is listed twice", failure();
    seen.set(*a);
    out.push_back(*a);
  }
  return out;
}

/// The dims a `shape` attribute stands for.
FailureOr<SmallVector<int64_t>> checkShapeAttr(ArrayAttr shape, Emitter emit,
                                               StringRef name = "shape") {
  if (!shape)
    return emit() << "requires attribute '" << name << "'", failure();
  SmallVector<int64_t> dims;
  for (auto [i, entry] : llvm::enumerate(shape)) {
    std::string why;
    std::optional<int64_t> d = getShapeEntryDim(entry, &why);
    if (!d)
      return emit() << "`" << name << "` entry #" << i << " (" << entry
                    << ") is invalid: " << why,
             failure();
    dims.push_back(*d);
  }
  return dims;
}

LogicalResult checkPermutation(ArrayRef<int64_t> perm, int64_t rank,
                               Emitter emit) {
  if (static_cast<int64_t>(perm.size()) != rank)
    return emit() << "perm has " << perm.size() << " entries but the input has "
                  << "rank " << rank;
  llvm::SmallBitVector seen(rank);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen.test(p))
      return emit() << "perm [" << perm << "] is not a permutation of [0, "
                    << rank << ")";
    seen.set(p);
  }
  return success();
}

/// The normalised sliced axes.
FailureOr<SmallVector<int64_t>> checkSlice(ArrayRef<int64_t> axes,
                                           ArrayRef<int64_t> starts,
                                           ArrayRef<int64_t> ends,
                                           ArrayRef<int64_t> steps,
                                           int64_t rank, Emitter emit) {
  if (starts.size() != axes.size() || ends.size() != axes.size() ||
      steps.size() != axes.size())
    return emit() << "axes, starts, ends and steps must have the same length, "
                  << "got " << axes.size() << ", " << starts.size() << ", "
                  << ends.size() << " and " << steps.size(),
           failure();
  FailureOr<SmallVector<int64_t>> norm =
      checkAxes(axes, rank, emit, /*emptyIsAll=*/false);
  if (failed(norm))
    return failure();
  for (auto [axis, step] : llvm::zip(axes, steps))
    if (step == 0)
      return emit() << "step for axis " << axis << " is zero", failure();
  return norm;
}

/// Broadcast of several operand shapes, or a reported failure.
FailureOr<SmallVector<int64_t>>
checkBroadcast(ArrayRef<std::pair<StringRef, RankedTensorType>> operands,
               Emitter emit) {
  SmallVector<int64_t> shape(operands.front().second.getShape());
  for (size_t i = 1; i < operands.size(); ++i) {
    std::optional<SmallVector<int64_t>> b =
        broadcastShapes(shape, operands[i].second.getShape());
    if (!b) {
      InFlightDiagnostic d = emit();
      d << "operands do not broadcast:";
      for (size_t j = 0; j <= i; ++j)
        d << (j ? "," : "") << " " << operands[j].first << " "
          << operands[j].second;
      return failure();
    }
    shape = std::move(*b);
  }
  return shape;
}

LogicalResult checkElementTypesMatch(Emitter emit, StringRef a, Type at,
                                     StringRef b, Type bt) {
  if (at != bt)
    return emit() << a << " and " << b << " element types differ (" << at
                  << " vs " << bt << ")";
  return success();
}

int64_t getIntOr(IntegerAttr attr, int64_t dflt) {
  return attr ? attr.getInt() : dflt;
}
bool getBoolOr(BoolAttr attr, bool dflt) {
  return attr ? attr.getValue() : dflt;
}

//===----------------------------------------------------------------------===//
// Inference, one overload per op kind
//===----------------------------------------------------------------------===//

enum class ResultElement { SameAsInput, Bool };

template <typename AdaptorT>
LogicalResult inferBinary(AdaptorT a, Inference &inf, ResultElement kind) {
  FailureOr<RankedTensorType> lhs = inf.tensor(a.getLhs(), "lhs");
  FailureOr<RankedTensorType> rhs = inf.tensor(a.getRhs(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      checkBroadcast({{"lhs", *lhs}, {"rhs", *rhs}}, inf.emitter());
  if (failed(shape))
    return failure();
  return inf.result(
      *shape, kind == ResultElement::Bool ? inf.i1() : lhs->getElementType());
}

template <typename AdaptorT>
LogicalResult inferArithmetic(AdaptorT a, Inference &inf) {
  return inferBinary(a, inf, ResultElement::SameAsInput);
}
template <typename AdaptorT>
LogicalResult inferPredicate(AdaptorT a, Inference &inf) {
  return inferBinary(a, inf, ResultElement::Bool);
}

template <typename AdaptorT>
LogicalResult inferSameType(AdaptorT a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  return inf.result(*in);
}
template <typename AdaptorT>
LogicalResult inferSameShapeBool(AdaptorT a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  return inf.result(in->getShape(), inf.i1());
}

LogicalResult inferConstant(ConstantOp::Adaptor a, Inference &inf) {
  auto value = dyn_cast_or_null<ElementsAttr>(a.getValueAttr());
  if (!value)
    return inf.emit() << "requires an elements attribute 'value'", failure();
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return inf.emit() << "value must be a ranked tensor, got "
                      << value.getType(),
           failure();
  return inf.result(type);
}

LogicalResult inferSelect(SelectOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> cond = inf.tensor(a.getCond(), "cond");
  FailureOr<RankedTensorType> lhs = inf.tensor(a.getLhs(), "lhs");
  FailureOr<RankedTensorType> rhs = inf.tensor(a.getRhs(), "rhs");
  if (failed(cond) || failed(lhs) || failed(rhs))
    return failure();
  FailureOr<SmallVector<int64_t>> shape = checkBroadcast(
      {{"cond", *cond}, {"lhs", *lhs}, {"rhs", *rhs}}, inf.emitter());
  if (failed(shape))
    return failure();
  return inf.result(*shape, lhs->getElementType());
}

template <typename AdaptorT>
LogicalResult inferFromShapeAttr(AdaptorT a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  FailureOr<SmallVector<int64_t>> dims =
      checkShapeAttr(a.getShapeAttr(), inf.emitter());
  if (failed(dims))
    return failure();
  return inf.result(*dims, in->getElementType());
}

LogicalResult inferTranspose(TransposeOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  if (!a.getPermAttr())
    return inf.emit() << "requires attribute 'perm'", failure();
  ArrayRef<int64_t> perm = a.getPerm();
  if (failed(checkPermutation(perm, in->getRank(), inf.emitter())))
    return failure();
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(in->getDimSize(p));
  return inf.result(shape, in->getElementType());
}

LogicalResult inferSlice(SliceOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  if (!a.getAxesAttr() || !a.getStartsAttr() || !a.getEndsAttr() ||
      !a.getStepsAttr())
    return inf.emit() << "requires attributes 'axes', 'starts', 'ends' and "
                         "'steps'",
           failure();
  FailureOr<SmallVector<int64_t>> axes =
      checkSlice(a.getAxes(), a.getStarts(), a.getEnds(), a.getSteps(),
                 in->getRank(), inf.emitter());
  if (failed(axes))
    return failure();
  SmallVector<int64_t> shape(in->getShape());
  for (auto [i, axis] : llvm::enumerate(*axes)) {
    if (ShapedType::isDynamic(shape[axis]))
      continue;
    shape[axis] = resolveSliceBounds(shape[axis], a.getStarts()[i],
                                     a.getEnds()[i], a.getSteps()[i])
                      .length;
  }
  return inf.result(shape, in->getElementType());
}

LogicalResult inferConcat(ConcatOp::Adaptor a, Inference &inf) {
  if (a.getInputs().empty())
    return inf.emit() << "requires at least one input", failure();
  if (!a.getAxisAttr())
    return inf.emit() << "requires attribute 'axis'", failure();
  SmallVector<RankedTensorType> types;
  for (auto [i, v] : llvm::enumerate(a.getInputs())) {
    FailureOr<RankedTensorType> t =
        inf.tensor(v, "input #" + std::to_string(i));
    if (failed(t))
      return failure();
    types.push_back(*t);
  }
  int64_t rank = types.front().getRank();
  FailureOr<int64_t> axis =
      checkAxis(a.getAxisAttr().getInt(), rank, inf.emitter());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(types.front().getShape());
  for (auto [i, t] : llvm::enumerate(types)) {
    if (t.getRank() != rank)
      return inf.emit() << "input #" << i << " has rank " << t.getRank()
                        << " but input #0 has rank " << rank,
             failure();
    if (i == 0)
      continue;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = t.getDimSize(d);
      if (d == *axis) {
        shape[d] =
            ShapedType::isDynamic(shape[d]) || ShapedType::isDynamic(size)
                ? kDynamic
                : shape[d] + size;
        continue;
      }
      if (ShapedType::isDynamic(shape[d])) {
        shape[d] = size;
      } else if (!ShapedType::isDynamic(size) && size != shape[d]) {
        return inf.emit() << "input #" << i << " has size " << size
                          << " in dim " << d << " where the others have "
                          << shape[d] << " (only dim " << *axis
                          << " may differ)",
               failure();
      }
    }
  }
  return inf.result(shape, types.front().getElementType());
}

LogicalResult inferGather(GatherOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> data = inf.tensor(a.getData(), "data");
  FailureOr<RankedTensorType> indices = inf.tensor(a.getIndices(), "indices");
  if (failed(data) || failed(indices))
    return failure();
  if (!a.getAxisAttr())
    return inf.emit() << "requires attribute 'axis'", failure();
  FailureOr<int64_t> axis =
      checkAxis(a.getAxisAttr().getInt(), data->getRank(), inf.emitter());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> shape(data->getShape().take_front(*axis));
  llvm::append_range(shape, indices->getShape());
  llvm::append_range(shape, data->getShape().drop_front(*axis + 1));
  return inf.result(shape, data->getElementType());
}

LogicalResult inferGatherNd(GatherNdOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> data = inf.tensor(a.getData(), "data");
  FailureOr<RankedTensorType> indices = inf.tensor(a.getIndices(), "indices");
  if (failed(data) || failed(indices))
    return failure();
  int64_t r = data->getRank(), q = indices->getRank();
  int64_t b = getIntOr(a.getBatchDimsAttr(), 0);
  if (r < 1 || q < 1)
    return inf.emit() << "expects data and indices of rank >= 1, got " << *data
                      << " and " << *indices,
           failure();
  if (b < 0 || b >= std::min(r, q))
    return inf.emit() << "batch_dims " << b
                      << " must be in [0, min(data rank, indices rank)) = [0, "
                      << std::min(r, q) << ")",
           failure();
  int64_t m = indices->getDimSize(q - 1);
  if (ShapedType::isDynamic(m))
    return inf.emit() << "needs a static last dim of indices (the index "
                         "depth), got "
                      << *indices,
           failure();
  if (m < 1 || m > r - b)
    return inf.emit() << "index depth " << m << " (last dim of indices) must "
                      << "be in [1, data rank - batch_dims] = [1, " << r - b
                      << "]",
           failure();
  SmallVector<int64_t> shape(indices->getShape().drop_back());
  for (int64_t i = 0; i < b; ++i)
    if (ShapedType::isDynamic(shape[i]))
      shape[i] = data->getDimSize(i);
  llvm::append_range(shape, data->getShape().drop_front(b + m));
  return inf.result(shape, data->getElementType());
}

template <typename AdaptorT>
LogicalResult inferReduce(AdaptorT a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  if (!a.getAxesAttr())
    return inf.emit() << "requires attribute 'axes'", failure();
  FailureOr<SmallVector<int64_t>> axes =
      checkAxes(a.getAxes(), in->getRank(), inf.emitter(), /*emptyIsAll=*/true);
  if (failed(axes))
    return failure();
  bool keepdims = getBoolOr(a.getKeepdimsAttr(), true);
  llvm::SmallBitVector reduced(in->getRank());
  for (int64_t axis : *axes)
    reduced.set(axis);
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < in->getRank(); ++d) {
    if (!reduced.test(d))
      shape.push_back(in->getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  return inf.result(shape, in->getElementType());
}

LogicalResult inferMatMul(MatMulOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> lhs = inf.tensor(a.getLhs(), "lhs");
  FailureOr<RankedTensorType> rhs = inf.tensor(a.getRhs(), "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->getRank() < 1 || rhs->getRank() < 1)
    return inf.emit() << "expects operands of rank >= 1, got " << *lhs
                      << " and " << *rhs,
           failure();
  // 1-D operands are promoted ([K] -> [1, K] / [K, 1]) and the added dim is
  // dropped from the result.
  ArrayRef<int64_t> l = lhs->getShape(), r = rhs->getShape();
  ArrayRef<int64_t> lBatch =
      l.size() > 1 ? l.drop_back(2) : ArrayRef<int64_t>();
  ArrayRef<int64_t> rBatch =
      r.size() > 1 ? r.drop_back(2) : ArrayRef<int64_t>();
  std::optional<SmallVector<int64_t>> shape = broadcastShapes(lBatch, rBatch);
  if (!shape)
    return inf.emit() << "batch dims do not broadcast: lhs " << *lhs << ", rhs "
                      << *rhs,
           failure();
  if (l.size() > 1)
    shape->push_back(l[l.size() - 2]);
  if (r.size() > 1)
    shape->push_back(r.back());
  return inf.result(*shape, lhs->getElementType());
}

LogicalResult inferLinear(LinearOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  FailureOr<RankedTensorType> w = inf.tensorOfRank(a.getWeight(), "weight", 2);
  if (failed(in) || failed(w))
    return failure();
  if (in->getRank() < 1)
    return inf.emit() << "expects input of rank >= 1, got " << *in, failure();
  bool transposed = getBoolOr(a.getTransposeWeightAttr(), true);
  SmallVector<int64_t> shape(in->getShape().drop_back());
  shape.push_back(w->getDimSize(transposed ? 0 : 1));
  return inf.result(shape, in->getElementType());
}

LogicalResult inferEmbedding(EmbeddingOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> table =
      inf.tensorOfRank(a.getTable(), "table", 2);
  FailureOr<RankedTensorType> ids = inf.tensor(a.getIds(), "ids");
  if (failed(table) || failed(ids))
    return failure();
  SmallVector<int64_t> shape(ids->getShape());
  shape.push_back(table->getDimSize(1));
  return inf.result(shape, table->getElementType());
}

LogicalResult inferPositions(PositionsOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> mask = inf.tensorOfRank(a.getMask(), "mask", 2);
  if (failed(mask))
    return failure();
  return inf.result(mask->getShape(), IntegerType::get(mask->getContext(), 64));
}

LogicalResult inferCacheWrite(CacheWriteOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> cache = inf.tensor(a.getCache(), "cache");
  if (failed(cache))
    return failure();
  return inf.result(*cache);
}

LogicalResult inferSample(SampleOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> logits =
      inf.tensorOfRank(a.getLogits(), "logits", 2);
  if (failed(logits))
    return failure();
  return inf.result({logits->getDimSize(0)},
                    IntegerType::get(logits->getContext(), 64));
}

/// The emitted tokens [B], then the state's new values, each of its old
/// value's type.
LogicalResult inferSampleStep(SampleStepOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> logits =
      inf.tensorOfRank(a.getLogits(), "logits", 2);
  if (failed(logits) ||
      failed(inf.result({logits->getDimSize(0)},
                        IntegerType::get(logits->getContext(), 64))))
    return failure();
  const std::pair<Value, StringRef> state[] = {
      {a.getTokens(), "tokens"},   {a.getLogprobs(), "logprobs"},
      {a.getLengths(), "lengths"}, {a.getFinished(), "finished"},
      {a.getCount(), "count"},     {a.getRng(), "rng"}};
  for (auto [value, name] : state) {
    FailureOr<RankedTensorType> t = inf.tensor(value, name);
    if (failed(t))
      return failure();
    (void)inf.result(*t);
  }
  return success();
}

/// The parameter and its two moments, each of its old value's type.
LogicalResult inferAdamWUpdate(AdamWUpdateOp::Adaptor a, Inference &inf) {
  const std::pair<Value, StringRef> updated[] = {
      {a.getParam(), "param"},
      {a.getExpAvg(), "exp_avg"},
      {a.getExpAvgSq(), "exp_avg_sq"}};
  RankedTensorType param;
  for (auto [value, name] : updated) {
    FailureOr<RankedTensorType> t = inf.tensor(value, name);
    if (failed(t))
      return failure();
    param = param ? param : *t;
    (void)inf.result(*t);
  }
  // The working parameter: the param's shape in the working dtype.
  if (TypeAttr working = a.getWorkingDtypeAttr())
    return inf.result(param.clone(working.getValue()));
  return success();
}

/// The gradients of query, key and value, of their types.
LogicalResult inferAttentionGrad(AttentionGradOp::Adaptor a, Inference &inf) {
  const std::pair<Value, StringRef> inputs[] = {
      {a.getQuery(), "query"}, {a.getKey(), "key"}, {a.getValue(), "value"}};
  for (auto [value, name] : inputs) {
    FailureOr<RankedTensorType> t = inf.tensorOfRank(value, name, 4);
    if (failed(t))
      return failure();
    (void)inf.result(*t);
  }
  return success();
}

/// The logits' dims without the vocabulary, where the labels' static dims
/// fill in dynamic ones; f32.
LogicalResult inferLabelLogProbs(LabelLogProbsOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> logits = inf.tensor(a.getLogits(), "logits");
  if (failed(logits))
    return failure();
  if (logits->getRank() == 0)
    return inf.emit() << "expects logits [..., V], got " << *logits, failure();
  SmallVector<int64_t> shape(logits->getShape().drop_back());
  auto labels = dyn_cast<RankedTensorType>(a.getLabels().getType());
  if (labels && labels.getRank() == static_cast<int64_t>(shape.size()))
    for (auto [dim, label] : llvm::zip(shape, labels.getShape()))
      if (ShapedType::isDynamic(dim))
        dim = label;
  return inf.result(shape, Float32Type::get(logits->getContext()));
}

/// The logits' type.
LogicalResult inferLabelLogProbsGrad(LabelLogProbsGradOp::Adaptor a,
                                     Inference &inf) {
  FailureOr<RankedTensorType> logits = inf.tensor(a.getLogits(), "logits");
  if (failed(logits))
    return failure();
  return inf.result(*logits);
}

/// [rows, D] of grad_out's element type.
LogicalResult inferEmbeddingGrad(EmbeddingGradOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> g = inf.tensor(a.getGradOut(), "grad_out");
  if (failed(g))
    return failure();
  if (g->getRank() == 0)
    return inf.emit() << "expects grad_out [..., D], got " << *g, failure();
  const auto rows = static_cast<int64_t>(a.getRows());
  return inf.result(
      {rows < 0 ? ShapedType::kDynamic : rows, g->getShape().back()},
      g->getElementType());
}

LogicalResult inferAttention(AttentionOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> q = inf.tensorOfRank(a.getQuery(), "query", 4);
  FailureOr<RankedTensorType> v = inf.tensorOfRank(a.getValue(), "value", 4);
  if (failed(q) || failed(v))
    return failure();
  SmallVector<int64_t> shape(q->getShape());
  shape[3] = v->getDimSize(3);
  if (ShapedType::isDynamic(shape[0]))
    shape[0] = v->getDimSize(0);
  return inf.result(shape, q->getElementType());
}

/// A [B, L] operand of the RLHF experience ops: the shape, static where
/// any of `others` (of rank 2) says.
FailureOr<SmallVector<int64_t>> rowsByPositions(Inference &inf, Value first,
                                                StringRef name,
                                                ValueRange others) {
  FailureOr<RankedTensorType> t = inf.tensorOfRank(first, name, 2);
  if (failed(t))
    return failure();
  SmallVector<int64_t> shape(t->getShape());
  for (Value v : others)
    if (auto o = dyn_cast<RankedTensorType>(v.getType()); o && o.getRank() == 2)
      for (auto [dim, other] : llvm::zip(shape, o.getShape()))
        if (ShapedType::isDynamic(dim))
          dim = other;
  return shape;
}

/// rewards and old_values, both [B, L] f32.
LogicalResult inferPpoRewards(PpoRewardsOp::Adaptor a, Inference &inf) {
  FailureOr<SmallVector<int64_t>> shape =
      rowsByPositions(inf, a.getLogprobs(), "logprobs",
                      {a.getRefLogprobs(), a.getActionMask(), a.getValues()});
  if (failed(shape))
    return failure();
  Type f32 = Float32Type::get(a.getLogprobs().getContext());
  (void)inf.result(*shape, f32);
  return inf.result(*shape, f32);
}

/// advantages and returns, both [B, L - start] f32.
LogicalResult inferGae(GaeOp::Adaptor a, Inference &inf) {
  FailureOr<SmallVector<int64_t>> shape =
      rowsByPositions(inf, a.getRewards(), "rewards", {a.getValues()});
  if (failed(shape))
    return failure();
  const auto start = static_cast<int64_t>(a.getStart());
  int64_t &positions = (*shape)[1];
  if (start < 0 || (!ShapedType::isDynamic(positions) && start >= positions))
    return inf.emit() << "start " << start << " must lie in [0, L) of rewards "
                      << formatShape(*shape),
           failure();
  if (!ShapedType::isDynamic(positions))
    positions -= start;
  Type f32 = Float32Type::get(a.getRewards().getContext());
  (void)inf.result(*shape, f32);
  return inf.result(*shape, f32);
}

/// One f32 (rank 0).
LogicalResult inferMaskedMean(MaskedMeanOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  if (in->getRank() == 0)
    return inf.emit() << "expects input [..., T], got " << *in, failure();
  return inf.result({}, Float32Type::get(in->getContext()));
}

/// The mask's shape, f32.
LogicalResult inferMaskedMeanGrad(MaskedMeanGradOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> mask = inf.tensor(a.getMask(), "mask");
  if (failed(mask))
    return failure();
  if (mask->getRank() == 0)
    return inf.emit() << "expects mask [..., T], got " << *mask, failure();
  return inf.result(*mask);
}

/// loss [], end_scores [2B] and accuracy [], f32, from values [2B, T].
LogicalResult inferPairwiseRankingLoss(PairwiseRankingLossOp::Adaptor a,
                                       Inference &inf) {
  FailureOr<SmallVector<int64_t>> shape = rowsByPositions(
      inf, a.getValues(), "values", {a.getInputIds(), a.getAttentionMask()});
  if (failed(shape))
    return failure();
  Type f32 = Float32Type::get(a.getValues().getContext());
  (void)inf.result({}, f32);
  (void)inf.result({(*shape)[0]}, f32);
  return inf.result({}, f32);
}

/// grad_values: the values' [2B, T], f32.
LogicalResult inferPairwiseRankingLossGrad(PairwiseRankingLossGradOp::Adaptor a,
                                           Inference &inf) {
  FailureOr<SmallVector<int64_t>> shape = rowsByPositions(
      inf, a.getValues(), "values", {a.getInputIds(), a.getAttentionMask()});
  if (failed(shape))
    return failure();
  return inf.result(*shape, Float32Type::get(a.getValues().getContext()));
}

} // namespace

//===----------------------------------------------------------------------===//
// Interface glue
//===----------------------------------------------------------------------===//

/// grad_input of the input's type; grad_weight and grad_bias of the
/// normalised shape input.shape[axis:] and the input's element type.
LogicalResult inferLayerNormGrad(LayerNormGradOp::Adaptor a, Inference &inf) {
  FailureOr<RankedTensorType> in = inf.tensor(a.getInput(), "input");
  if (failed(in))
    return failure();
  FailureOr<int64_t> axis = checkAxis(static_cast<int64_t>(a.getAxis()),
                                      in->getRank(), inf.emitter());
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized = in->getShape().drop_front(*axis);
  (void)inf.result(*in);
  (void)inf.result(normalized, in->getElementType());
  return inf.result(normalized, in->getElementType());
}

#define HG_INFER_RETURN_TYPES(OP, FN)                                          \
  LogicalResult OP::inferReturnTypes(                                          \
      MLIRContext *context, std::optional<Location> location,                  \
      ValueRange operands, DictionaryAttr attributes,                          \
      OpaqueProperties properties, RegionRange regions,                        \
      SmallVectorImpl<Type> &inferredReturnTypes) {                            \
    Inference inf(context, OP::getOperationName(), location,                   \
                  inferredReturnTypes);                                        \
    return FN(OP::Adaptor(operands, attributes, properties, regions), inf);    \
  }

HG_INFER_RETURN_TYPES(ConstantOp, inferConstant)

HG_INFER_RETURN_TYPES(AddOp, inferArithmetic)
HG_INFER_RETURN_TYPES(SubOp, inferArithmetic)
HG_INFER_RETURN_TYPES(MulOp, inferArithmetic)
HG_INFER_RETURN_TYPES(DivOp, inferArithmetic)
HG_INFER_RETURN_TYPES(PowOp, inferArithmetic)
HG_INFER_RETURN_TYPES(MaxOp, inferArithmetic)
HG_INFER_RETURN_TYPES(MinOp, inferArithmetic)
HG_INFER_RETURN_TYPES(ModOp, inferArithmetic)
HG_INFER_RETURN_TYPES(EqualOp, inferPredicate)
HG_INFER_RETURN_TYPES(LessOp, inferPredicate)
HG_INFER_RETURN_TYPES(LessEqualOp, inferPredicate)
HG_INFER_RETURN_TYPES(GreaterOp, inferPredicate)
HG_INFER_RETURN_TYPES(GreaterEqualOp, inferPredicate)
HG_INFER_RETURN_TYPES(AndOp, inferPredicate)
HG_INFER_RETURN_TYPES(OrOp, inferPredicate)
HG_INFER_RETURN_TYPES(XorOp, inferPredicate)

HG_INFER_RETURN_TYPES(NegOp, inferSameType)
HG_INFER_RETURN_TYPES(AbsOp, inferSameType)
HG_INFER_RETURN_TYPES(SignOp, inferSameType)
HG_INFER_RETURN_TYPES(ExpOp, inferSameType)
HG_INFER_RETURN_TYPES(LogOp, inferSameType)
HG_INFER_RETURN_TYPES(SqrtOp, inferSameType)
HG_INFER_RETURN_TYPES(RsqrtOp, inferSameType)
HG_INFER_RETURN_TYPES(ReciprocalOp, inferSameType)
HG_INFER_RETURN_TYPES(TanhOp, inferSameType)
HG_INFER_RETURN_TYPES(SigmoidOp, inferSameType)
HG_INFER_RETURN_TYPES(ReluOp, inferSameType)
HG_INFER_RETURN_TYPES(SiluOp, inferSameType)
HG_INFER_RETURN_TYPES(GeluOp, inferSameType)
HG_INFER_RETURN_TYPES(SinOp, inferSameType)
HG_INFER_RETURN_TYPES(CosOp, inferSameType)
HG_INFER_RETURN_TYPES(ErfOp, inferSameType)
HG_INFER_RETURN_TYPES(FloorOp, inferSameType)
HG_INFER_RETURN_TYPES(CeilOp, inferSameType)
HG_INFER_RETURN_TYPES(NotOp, inferSameShapeBool)
HG_INFER_RETURN_TYPES(IsNanOp, inferSameShapeBool)
HG_INFER_RETURN_TYPES(IsInfOp, inferSameShapeBool)
HG_INFER_RETURN_TYPES(ClipOp, inferSameType)
HG_INFER_RETURN_TYPES(ActivationGradOp, inferSameType)
HG_INFER_RETURN_TYPES(SelectOp, inferSelect)

HG_INFER_RETURN_TYPES(ReshapeOp, inferFromShapeAttr)
HG_INFER_RETURN_TYPES(BroadcastToOp, inferFromShapeAttr)
HG_INFER_RETURN_TYPES(TransposeOp, inferTranspose)
HG_INFER_RETURN_TYPES(SliceOp, inferSlice)
HG_INFER_RETURN_TYPES(ConcatOp, inferConcat)
HG_INFER_RETURN_TYPES(GatherOp, inferGather)
HG_INFER_RETURN_TYPES(GatherNdOp, inferGatherNd)
HG_INFER_RETURN_TYPES(CumSumOp, inferSameType)
HG_INFER_RETURN_TYPES(TriluOp, inferSameType)

HG_INFER_RETURN_TYPES(ReduceSumOp, inferReduce)
HG_INFER_RETURN_TYPES(ReduceMeanOp, inferReduce)
HG_INFER_RETURN_TYPES(ReduceMaxOp, inferReduce)
HG_INFER_RETURN_TYPES(ReduceMinOp, inferReduce)
HG_INFER_RETURN_TYPES(ReduceProdOp, inferReduce)
HG_INFER_RETURN_TYPES(SoftmaxOp, inferSameType)
HG_INFER_RETURN_TYPES(LogSoftmaxOp, inferSameType)
HG_INFER_RETURN_TYPES(LayerNormOp, inferSameType)
HG_INFER_RETURN_TYPES(LayerNormGradOp, inferLayerNormGrad)
HG_INFER_RETURN_TYPES(RmsNormOp, inferSameType)

HG_INFER_RETURN_TYPES(MatMulOp, inferMatMul)
HG_INFER_RETURN_TYPES(LinearOp, inferLinear)
HG_INFER_RETURN_TYPES(EmbeddingOp, inferEmbedding)
HG_INFER_RETURN_TYPES(RotaryOp, inferSameType)
HG_INFER_RETURN_TYPES(AttentionOp, inferAttention)
HG_INFER_RETURN_TYPES(AttentionGradOp, inferAttentionGrad)
HG_INFER_RETURN_TYPES(LabelLogProbsOp, inferLabelLogProbs)
HG_INFER_RETURN_TYPES(LabelLogProbsGradOp, inferLabelLogProbsGrad)
HG_INFER_RETURN_TYPES(EmbeddingGradOp, inferEmbeddingGrad)
HG_INFER_RETURN_TYPES(PositionsOp, inferPositions)
HG_INFER_RETURN_TYPES(CacheWriteOp, inferCacheWrite)
HG_INFER_RETURN_TYPES(SampleOp, inferSample)
HG_INFER_RETURN_TYPES(SampleStepOp, inferSampleStep)
HG_INFER_RETURN_TYPES(AdamWUpdateOp, inferAdamWUpdate)
HG_INFER_RETURN_TYPES(PpoRewardsOp, inferPpoRewards)
HG_INFER_RETURN_TYPES(GaeOp, inferGae)
HG_INFER_RETURN_TYPES(MaskedMeanOp, inferMaskedMean)
HG_INFER_RETURN_TYPES(MaskedMeanGradOp, inferMaskedMeanGrad)
HG_INFER_RETURN_TYPES(PairwiseRankingLossOp, inferPairwiseRankingLoss)
HG_INFER_RETURN_TYPES(PairwiseRankingLossGradOp, inferPairwiseRankingLossGrad)

#undef HG_INFER_RETURN_TYPES

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

namespace {

enum class ElementClass { Float, Numeric, Bool, Any };

LogicalResult checkElementClass(Emitter emit, StringRef name, Type t,
                                ElementClass cls) {
  switch (cls) {
  case ElementClass::Float:
    if (!isFloat(t))
      return emit() << "expects " << name
                    << " of floating-point (f32, bf16, f16) elements, got "
                    << t;
    break;
  case ElementClass::Numeric:
    if (!isFloat(t) && !isInt(t))
      return emit() << "expects " << name
                    << " of numeric (float or i32/i64) elements, got " << t;
    break;
  case ElementClass::Bool:
    if (!isI1(t))
      return emit() << "expects " << name << " of i1 elements, got " << t;
    break;
  case ElementClass::Any:
    break;
  }
  return success();
}

/// Runs the op's type inference and checks the declared result type
/// against it.
template <typename OpT> LogicalResult verifyInferredResult(OpT op) {
  Operation *o = op.getOperation();
  SmallVector<Type, 1> inferred;
  if (failed(OpT::inferReturnTypes(o->getContext(), o->getLoc(),
                                   o->getOperands(), o->getRawDictionaryAttrs(),
                                   o->getPropertiesStorage(), o->getRegions(),
                                   inferred)))
    return failure();
  if (!areCompatibleTensorTypes(inferred, o->getResultTypes()))
    return op.emitOpError()
           << "result type " << o->getResultTypes()
           << " is incompatible with the inferred type " << inferred;
  return success();
}

template <typename OpT> LogicalResult verifyBinary(OpT op, ElementClass cls) {
  if (failed(verifyInferredResult(op)))
    return failure();
  auto emit = [&] { return op.emitOpError(); };
  Type lt = elementTypeOf(op.getLhs()), rt = elementTypeOf(op.getRhs());
  if (failed(checkElementTypesMatch(emit, "lhs", lt, "rhs", rt)))
    return failure();
  return checkElementClass(emit, "operands", lt, cls);
}

template <typename OpT> LogicalResult verifyUnary(OpT op, ElementClass cls) {
  if (failed(verifyInferredResult(op)))
    return failure();
  return checkElementClass([&] { return op.emitOpError(); }, "input",
                           elementTypeOf(op.getInput()), cls);
}

/// Checks an optional per-feature parameter (norm weight / bias) against
/// the normalised dims input.shape[axis:].
LogicalResult checkNormParam(Operation *op, Value param, StringRef name,
                             ArrayRef<int64_t> normalized) {
  if (!param)
    return success();
  RankedTensorType t = tensorTypeOf(param);
  if (failed(verifyCompatibleShape(t.getShape(), normalized)))
    return op->emitOpError()
           << name << " " << t << " must have the normalised shape "
           << formatShape(normalized) << " of the input";
  return success();
}

template <typename OpT> FailureOr<int64_t> verifyNormAxis(OpT op) {
  if (failed(verifyInferredResult(op)))
    return failure();
  RankedTensorType in = tensorTypeOf(op.getInput());
  return checkAxis(op.getAxis(), in.getRank(),
                   [&] { return op.emitOpError(); });
}

std::string formatFloat(const APFloat &v) {
  SmallString<16> text;
  v.toString(text);
  return text.str().str();
}

bool dimsConflict(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

} // namespace

#define HG_VERIFY_BINARY(OP, CLASS)                                            \
  LogicalResult OP::verify() { return verifyBinary(*this, CLASS); }
HG_VERIFY_BINARY(AddOp, ElementClass::Numeric)
HG_VERIFY_BINARY(SubOp, ElementClass::Numeric)
HG_VERIFY_BINARY(MulOp, ElementClass::Numeric)
HG_VERIFY_BINARY(DivOp, ElementClass::Numeric)
HG_VERIFY_BINARY(PowOp, ElementClass::Numeric)
HG_VERIFY_BINARY(MaxOp, ElementClass::Numeric)
HG_VERIFY_BINARY(MinOp, ElementClass::Numeric)
HG_VERIFY_BINARY(ModOp, ElementClass::Numeric)
HG_VERIFY_BINARY(EqualOp, ElementClass::Any)
HG_VERIFY_BINARY(LessOp, ElementClass::Numeric)
HG_VERIFY_BINARY(LessEqualOp, ElementClass::Numeric)
HG_VERIFY_BINARY(GreaterOp, ElementClass::Numeric)
HG_VERIFY_BINARY(GreaterEqualOp, ElementClass::Numeric)
HG_VERIFY_BINARY(AndOp, ElementClass::Bool)
HG_VERIFY_BINARY(OrOp, ElementClass::Bool)
HG_VERIFY_BINARY(XorOp, ElementClass::Bool)
#undef HG_VERIFY_BINARY

#define HG_VERIFY_UNARY(OP, CLASS)                                             \
  LogicalResult OP::verify() { return verifyUnary(*this, CLASS); }
HG_VERIFY_UNARY(NegOp, ElementClass::Numeric)
HG_VERIFY_UNARY(AbsOp, ElementClass::Numeric)
HG_VERIFY_UNARY(SignOp, ElementClass::Numeric)
HG_VERIFY_UNARY(ExpOp, ElementClass::Float)
HG_VERIFY_UNARY(LogOp, ElementClass::Float)
HG_VERIFY_UNARY(SqrtOp, ElementClass::Float)
HG_VERIFY_UNARY(RsqrtOp, ElementClass::Float)
HG_VERIFY_UNARY(ReciprocalOp, ElementClass::Float)
HG_VERIFY_UNARY(TanhOp, ElementClass::Float)
HG_VERIFY_UNARY(SigmoidOp, ElementClass::Float)
HG_VERIFY_UNARY(ReluOp, ElementClass::Numeric)
HG_VERIFY_UNARY(SiluOp, ElementClass::Float)
HG_VERIFY_UNARY(SinOp, ElementClass::Float)
HG_VERIFY_UNARY(CosOp, ElementClass::Float)
HG_VERIFY_UNARY(ErfOp, ElementClass::Float)
HG_VERIFY_UNARY(FloorOp, ElementClass::Float)
HG_VERIFY_UNARY(CeilOp, ElementClass::Float)
HG_VERIFY_UNARY(NotOp, ElementClass::Bool)
HG_VERIFY_UNARY(IsNanOp, ElementClass::Float)
HG_VERIFY_UNARY(IsInfOp, ElementClass::Float)
#undef HG_VERIFY_UNARY

LogicalResult GeluOp::verify() {
  if (failed(verifyUnary(*this, ElementClass::Float)))
    return failure();
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError() << "approximate must be \"none\" or \"tanh\", got \""
                         << getApproximate() << "\"";
  return success();
}

LogicalResult ClipOp::verify() {
  if (failed(verifyUnary(*this, ElementClass::Numeric)))
    return failure();
  std::optional<APFloat> lo = getMin(), hi = getMax();
  if (lo && hi && hi->compare(*lo) == APFloat::cmpLessThan)
    return emitOpError() << "min " << formatFloat(*lo)
                         << " is greater than max " << formatFloat(*hi);
  return success();
}

LogicalResult SelectOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  return checkElementTypesMatch([&] { return emitOpError(); }, "lhs",
                                elementTypeOf(getLhs()), "rhs",
                                elementTypeOf(getRhs()));
}

LogicalResult CastOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (failed(verifyCompatibleShape(in.getShape(), out.getShape())))
    return emitOpError() << "changes the shape: input " << in << ", result "
                         << out;
  return success();
}

LogicalResult ReshapeOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (in.hasStaticShape() && out.hasStaticShape() &&
      in.getNumElements() != out.getNumElements())
    return emitOpError() << "changes the element count: input " << in << " has "
                         << in.getNumElements() << ", result " << out << " has "
                         << out.getNumElements();
  return success();
}

LogicalResult BroadcastToOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  if (in.getRank() > out.getRank())
    return emitOpError() << "cannot broadcast input " << in << " to rank "
                         << out.getRank();
  int64_t lead = out.getRank() - in.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t from = in.getDimSize(d), to = out.getDimSize(lead + d);
    if (from != 1 && dimsConflict(from, to))
      return emitOpError() << "input dim " << d << " (size " << from
                           << ") cannot broadcast to size " << to
                           << "; only size-1 dims expand (resolve ONNX "
                              "Expand's two-way broadcast into `shape`)";
  }
  return success();
}

LogicalResult TransposeOp::verify() { return verifyInferredResult(*this); }

LogicalResult SliceOp::verify() { return verifyInferredResult(*this); }

LogicalResult ConcatOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  Type elt = elementTypeOf(getInputs().front());
  for (auto [i, v] : llvm::enumerate(getInputs()))
    if (elementTypeOf(v) != elt)
      return emitOpError() << "input #" << i << " has element type "
                           << elementTypeOf(v) << " but input #0 has " << elt;
  return success();
}

LogicalResult GatherOp::verify() { return verifyInferredResult(*this); }

LogicalResult GatherNdOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType data = getData().getType(), indices = getIndices().getType();
  for (int64_t i = 0; i < static_cast<int64_t>(getBatchDims()); ++i)
    if (dimsConflict(data.getDimSize(i), indices.getDimSize(i)))
      return emitOpError() << "batch dim " << i << " differs between data "
                           << data << " and indices " << indices;
  return success();
}

LogicalResult IotaOp::verify() {
  RankedTensorType out = getResult().getType();
  if (out.getRank() != 1)
    return emitOpError() << "result must be 1-D, got " << out;
  if (getLength().size() != 1)
    return emitOpError() << "length must have exactly one entry, got "
                         << getLength().size();
  FailureOr<SmallVector<int64_t>> dims = checkShapeAttr(
      getLength(), [&] { return emitOpError(); }, "length");
  if (failed(dims))
    return failure();
  if (dimsConflict((*dims)[0], out.getDimSize(0)))
    return emitOpError() << "result " << out << " does not have length "
                         << (*dims)[0];
  if (isInt(out.getElementType())) {
    for (auto [name, v] : {std::pair<StringRef, APFloat>{"start", getStart()},
                           {"step", getStep()}})
      if (!v.isInteger())
        return emitOpError() << name << " " << formatFloat(v)
                             << " is not an integer but the result is i64";
  }
  return success();
}

LogicalResult CumSumOp::verify() {
  if (failed(verifyUnary(*this, ElementClass::Numeric)))
    return failure();
  return checkAxis(getAxis(), getInput().getType().getRank(),
                   [&] { return emitOpError(); });
}

LogicalResult TriluOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  if (getInput().getType().getRank() < 2)
    return emitOpError() << "expects input of rank >= 2, got "
                         << getInput().getType();
  return success();
}

#define HG_VERIFY_REDUCE(OP)                                                   \
  LogicalResult OP::verify() {                                                 \
    return verifyUnary(*this, ElementClass::Numeric);                          \
  }
HG_VERIFY_REDUCE(ReduceSumOp)
HG_VERIFY_REDUCE(ReduceMaxOp)
HG_VERIFY_REDUCE(ReduceMinOp)
HG_VERIFY_REDUCE(ReduceProdOp)
#undef HG_VERIFY_REDUCE

LogicalResult ReduceMeanOp::verify() {
  return verifyUnary(*this, ElementClass::Float);
}

LogicalResult SoftmaxOp::verify() {
  return failure(failed(verifyNormAxis(*this)));
}

LogicalResult LogSoftmaxOp::verify() {
  return failure(failed(verifyNormAxis(*this)));
}

/// The checks hg.layer_norm and hg.layer_norm_grad share: the axis, a
/// weight of the normalised shape, epsilon >= 0. Returns the normalised
/// shape.
template <typename OpT>
static FailureOr<ArrayRef<int64_t>> verifyLayerNormOperands(OpT op) {
  FailureOr<int64_t> axis = verifyNormAxis(op);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized =
      op.getInput().getType().getShape().drop_front(*axis);
  if (failed(checkNormParam(op, op.getWeight(), "weight", normalized)))
    return failure();
  if (op.getEpsilon().isNegative())
    return op.emitOpError() << "epsilon must be >= 0", failure();
  return normalized;
}

LogicalResult LayerNormOp::verify() {
  FailureOr<ArrayRef<int64_t>> normalized = verifyLayerNormOperands(*this);
  if (failed(normalized))
    return failure();
  return checkNormParam(*this, getBias(), "bias", *normalized);
}

LogicalResult ActivationGradOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  StringRef act = getActivation();
  if (act != "relu" && act != "gelu" && act != "gelu_tanh" && act != "silu")
    return emitOpError() << "activation '" << act
                         << "' is not relu, gelu, gelu_tanh or silu";
  RankedTensorType in = getInput().getType(), g = getGradOut().getType();
  auto emit = [&] { return emitOpError(); };
  if (failed(checkElementTypesMatch(emit, "input", in.getElementType(),
                                    "grad_out", g.getElementType())))
    return failure();
  if (failed(verifyCompatibleShape(g.getShape(), in.getShape())))
    return emitOpError() << "grad_out " << g << " must have the input's shape "
                         << formatShape(in.getShape());
  return success();
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(verifyLayerNormOperands(*this)))
    return failure();
  RankedTensorType in = getInput().getType(), g = getGradOut().getType();
  auto emit = [&] { return emitOpError(); };
  const std::pair<Value, StringRef> others[] = {{getWeight(), "weight"},
                                                {getGradOut(), "grad_out"}};
  for (auto [value, name] : others)
    if (value &&
        failed(checkElementTypesMatch(emit, "input", in.getElementType(), name,
                                      elementTypeOf(value))))
      return failure();
  if (failed(verifyCompatibleShape(g.getShape(), in.getShape())))
    return emitOpError() << "grad_out " << g << " must have the input's shape "
                         << formatShape(in.getShape());
  return success();
}

LogicalResult RmsNormOp::verify() {
  FailureOr<int64_t> axis = verifyNormAxis(*this);
  if (failed(axis))
    return failure();
  ArrayRef<int64_t> normalized =
      getInput().getType().getShape().drop_front(*axis);
  if (failed(checkNormParam(*this, getWeight(), "weight", normalized)))
    return failure();
  if (getEpsilon().isNegative())
    return emitOpError() << "epsilon must be >= 0";
  return success();
}

LogicalResult MatMulOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  ArrayRef<int64_t> l = getLhs().getType().getShape();
  ArrayRef<int64_t> r = getRhs().getType().getShape();
  int64_t lk = l.back(), rk = r.size() > 1 ? r[r.size() - 2] : r.front();
  if (dimsConflict(lk, rk))
    return emitOpError() << "contracting dims differ: lhs "
                         << getLhs().getType() << " has K = " << lk << ", rhs "
                         << getRhs().getType() << " has K = " << rk;
  return success();
}

LogicalResult LinearOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType in = getInput().getType(), w = getWeight().getType();
  bool transposed = getTransposeWeight();
  int64_t k = in.getDimSize(in.getRank() - 1);
  int64_t wk = w.getDimSize(transposed ? 1 : 0);
  int64_t n = w.getDimSize(transposed ? 0 : 1);
  if (dimsConflict(k, wk))
    return emitOpError() << "input " << in << " has K = " << k << " but weight "
                         << w << " has K = " << wk << " (weight is "
                         << (transposed ? "[N, K]" : "[K, N]") << ")";
  if (Value bias = getBias()) {
    RankedTensorType b = tensorTypeOf(bias);
    if (b.getRank() != 1 || dimsConflict(b.getDimSize(0), n))
      return emitOpError() << "bias " << b << " must be " << formatShape({n});
  }
  if (Value residual = getResidual();
      residual && residual.getType() != getType())
    return emitOpError() << "residual " << residual.getType()
                         << " must have the result's type " << getType();
  StringRef act = getActivation();
  if (act != "none" && act != "relu" && act != "gelu" && act != "gelu_tanh" &&
      act != "silu")
    return emitOpError() << "activation '" << act
                         << "' is not none, relu, gelu, gelu_tanh or silu";
  StringRef norm = getNorm();
  if (norm != "none" && norm != "layer_norm" && norm != "rms_norm")
    return emitOpError() << "norm '" << norm
                         << "' is not none, layer_norm or rms_norm";
  if (norm == "none" && (getNormWeight() || getNormBias()))
    return emitOpError() << "norm_weight and norm_bias need a norm";
  if (norm == "rms_norm" && getNormBias())
    return emitOpError() << "rms_norm takes no norm_bias";
  if (norm != "none" && !(getNormEpsilon().convertToDouble() >= 0))
    return emitOpError() << "norm_epsilon must be >= 0";
  for (Value v : {getNormWeight(), getNormBias()}) {
    if (!v)
      continue;
    RankedTensorType t = tensorTypeOf(v);
    if (t.getRank() != 1 || dimsConflict(t.getDimSize(0), k) ||
        t.getElementType() != in.getElementType())
      return emitOpError() << "norm operand " << t << " must be "
                           << formatShape({k}) << " of the input's type";
  }
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  const int64_t rows = getTable().getType().getDimSize(0);
  if (std::optional<int64_t> pad = getPaddingIdx();
      pad && (*pad < 0 || (!ShapedType::isDynamic(rows) && *pad >= rows)))
    return emitOpError() << "padding_idx " << *pad
                         << " is not a row of the table (" << rows << " rows)";
  return success();
}

LogicalResult RotaryOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType in = getInput().getType();
  RankedTensorType cos = getCos().getType(), sin = getSin().getType();
  if (in.getRank() != 4)
    return emitOpError() << "expects input [B, H, T, D], got " << in;
  if (cos != sin)
    return emitOpError() << "cos " << cos << " and sin " << sin
                         << " must have the same type";
  if (cos.getRank() != 3)
    return emitOpError() << "expects cos and sin [B or 1, T, rotary_dim], got "
                         << cos;
  int64_t b = cos.getDimSize(0), t = cos.getDimSize(1), rd = cos.getDimSize(2);
  if (b != 1 && dimsConflict(b, in.getDimSize(0)))
    return emitOpError() << "cos/sin batch " << b << " must be 1 or match "
                         << "the input batch " << in.getDimSize(0);
  if (dimsConflict(t, in.getDimSize(2)))
    return emitOpError() << "cos/sin length " << t
                         << " must match the input sequence length "
                         << in.getDimSize(2);
  if (!ShapedType::isDynamic(rd)) {
    if (rd % 2 != 0)
      return emitOpError() << "rotary_dim " << rd << " must be even";
    int64_t d = in.getDimSize(3);
    if (!ShapedType::isDynamic(d) && rd > d)
      return emitOpError() << "rotary_dim " << rd << " exceeds the head dim "
                           << d;
  }
  return success();
}

/// The checks hg.attention and hg.attention_grad share: key and value
/// [B, Hkv, S, *] agreeing with query [B, Hq, T, Dh], Hq a multiple of Hkv,
/// a mask broadcastable to the scores, a [B, S] key mask, a window >= 0.
static LogicalResult verifyAttentionOperands(Operation *op, Value query,
                                             Value key, Value value, Value mask,
                                             Value keyMask,
                                             int64_t slidingWindow) {
  auto emitOpError = [&] { return op->emitOpError(); };
  RankedTensorType q = tensorTypeOf(query), k = tensorTypeOf(key),
                   v = tensorTypeOf(value);
  if (k.getRank() != 4)
    return emitOpError() << "expects key [B, Hkv, S, Dh], got " << k;
  for (int64_t d : {0, 1, 2})
    if (dimsConflict(k.getDimSize(d), v.getDimSize(d)))
      return emitOpError() << "key " << k << " and value " << v
                           << " must agree in [B, Hkv, S]";
  if (dimsConflict(q.getDimSize(0), k.getDimSize(0)))
    return emitOpError() << "query batch " << q.getDimSize(0)
                         << " differs from key batch " << k.getDimSize(0);
  if (dimsConflict(q.getDimSize(3), k.getDimSize(3)))
    return emitOpError() << "query head dim " << q.getDimSize(3)
                         << " differs from key head dim " << k.getDimSize(3);
  int64_t hq = q.getDimSize(1), hkv = k.getDimSize(1);
  if (!ShapedType::isDynamic(hq) && !ShapedType::isDynamic(hkv) &&
      (hkv == 0 || hq % hkv != 0))
    return emitOpError() << "query heads " << hq
                         << " must be a multiple of KV heads " << hkv;
  if (mask) {
    RankedTensorType m = tensorTypeOf(mask);
    if (m.getRank() > 4)
      return emitOpError() << "mask " << m << " has rank > 4";
    SmallVector<int64_t> scores = {q.getDimSize(0), hq, q.getDimSize(2),
                                   k.getDimSize(2)};
    std::optional<SmallVector<int64_t>> b =
        broadcastShapes(m.getShape(), scores);
    if (!b || failed(verifyCompatibleShape(*b, scores)))
      return emitOpError() << "mask " << m
                           << " does not broadcast to the scores [B, Hq, T, S]"
                           << " = " << formatShape(scores);
  }
  if (slidingWindow < 0)
    return emitOpError() << "sliding_window must be >= 0, got "
                         << slidingWindow;
  if (keyMask) {
    RankedTensorType m = tensorTypeOf(keyMask);
    if (m.getRank() != 2 || dimsConflict(m.getDimSize(0), q.getDimSize(0)) ||
        dimsConflict(m.getDimSize(1), k.getDimSize(2)))
      return emitOpError() << "key_mask " << m << " must be [B, S] = "
                           << formatShape({q.getDimSize(0), k.getDimSize(2)});
  }
  return success();
}

/// ALiBi slopes, when present: one per query head.
static LogicalResult verifyAlibiSlopes(Operation *op, Value slopes,
                                       RankedTensorType query) {
  if (!slopes)
    return success();
  RankedTensorType s = tensorTypeOf(slopes);
  if (s.getRank() != 1 || dimsConflict(s.getDimSize(0), query.getDimSize(1)))
    return op->emitOpError()
           << "alibi slopes " << s
           << " must be [Hq] = " << formatShape({query.getDimSize(1)});
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyInferredResult(*this)) ||
      failed(verifyAttentionOperands(
          *this, getQuery(), getKey(), getValue(), getMask(), getKeyMask(),
          static_cast<int64_t>(getSlidingWindow()))) ||
      failed(verifyAlibiSlopes(*this, getAlibiSlopes(), getQuery().getType())))
    return failure();
  if (Value length = getKeyLength()) {
    RankedTensorType l = tensorTypeOf(length);
    if (l.getRank() != 1 || dimsConflict(l.getDimSize(0), 1))
      return emitOpError() << "key_length " << l << " must be [1]";
  }
  return success();
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyInferredResult(*this)) ||
      failed(verifyAttentionOperands(
          *this, getQuery(), getKey(), getValue(), getMask(), getKeyMask(),
          static_cast<int64_t>(getSlidingWindow()))) ||
      failed(verifyAlibiSlopes(*this, getAlibiSlopes(), getQuery().getType())))
    return failure();
  RankedTensorType q = getQuery().getType(), v = getValue().getType(),
                   g = getGradOut().getType();
  auto emit = [&] { return emitOpError(); };
  const std::pair<Value, StringRef> others[] = {{getKey(), "key"},
                                                {getValue(), "value"},
                                                {getGradOut(), "grad_out"},
                                                {getMask(), "mask"},
                                                {getAlibiSlopes(), "alibi"}};
  for (auto [value, name] : others)
    if (value &&
        failed(checkElementTypesMatch(emit, "query", q.getElementType(), name,
                                      elementTypeOf(value))))
      return failure();
  SmallVector<int64_t> out = {q.getDimSize(0), q.getDimSize(1), q.getDimSize(2),
                              v.getDimSize(3)};
  if (g.getRank() != 4 || failed(verifyCompatibleShape(g.getShape(), out)))
    return emitOpError() << "grad_out " << g
                         << " must be the attention's result [B, Hq, T, Dv] = "
                         << formatShape(out);
  return success();
}

/// An i64 [1] tensor: a position or length held on the device.
static LogicalResult verifyDeviceScalar(Operation *op, Value v,
                                        StringRef name) {
  RankedTensorType t = cast<RankedTensorType>(v.getType());
  if (!t.getElementType().isSignlessInteger(64) || t.getRank() != 1 ||
      dimsConflict(t.getDimSize(0), 1))
    return op->emitOpError()
           << "expects " << name << " as tensor<1xi64>, got " << t;
  return success();
}

LogicalResult PositionsOp::verify() { return verifyInferredResult(*this); }

LogicalResult CacheWriteOp::verify() {
  if (failed(verifyInferredResult(*this)) ||
      failed(verifyDeviceScalar(*this, getOffset(), "offset")))
    return failure();
  RankedTensorType c = getCache().getType(), u = getUpdate().getType();
  if (c.getElementType() != u.getElementType())
    return emitOpError() << "update " << u << " and cache " << c
                         << " element types differ";
  if (c.getRank() != u.getRank())
    return emitOpError() << "update " << u << " and cache " << c
                         << " ranks differ";
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= c.getRank())
    return emitOpError() << "axis " << axis << " is out of range for rank "
                         << c.getRank();
  for (int64_t d = 0; d < c.getRank(); ++d) {
    if (d == axis) {
      if (!ShapedType::isDynamic(c.getDimSize(d)) &&
          !ShapedType::isDynamic(u.getDimSize(d)) &&
          u.getDimSize(d) > c.getDimSize(d))
        return emitOpError() << "update " << u << " is longer than cache " << c
                             << " along axis " << axis;
      continue;
    }
    if (dimsConflict(c.getDimSize(d), u.getDimSize(d)))
      return emitOpError() << "update " << u << " and cache " << c
                           << " differ in dim " << d;
  }
  return success();
}

/// sampling f32 [3] = {temperature, top_p, top_k} and rng i64 [2] = {seed,
/// counter}, as hg.sample and hg.sample_step take them.
static LogicalResult verifySamplingOperands(Operation *op, Value samplingValue,
                                            Value rngValue) {
  RankedTensorType sampling = tensorTypeOf(samplingValue);
  RankedTensorType rng = tensorTypeOf(rngValue);
  if (!sampling.getElementType().isF32() || sampling.getRank() != 1 ||
      dimsConflict(sampling.getDimSize(0), 3))
    return op->emitOpError() << "expects sampling as tensor<3xf32> "
                                "{temperature, top_p, top_k}, got "
                             << sampling;
  if (!rng.getElementType().isSignlessInteger(64) || rng.getRank() != 1 ||
      dimsConflict(rng.getDimSize(0), 2))
    return op->emitOpError()
           << "expects rng as tensor<2xi64> {seed, counter}, got " << rng;
  return success();
}

/// Checks that a per-row operand of a label_log_probs op has the logits'
/// dims without the vocabulary.
template <typename OpT>
static LogicalResult checkRowsOfLogits(OpT op, Value v, StringRef name) {
  ArrayRef<int64_t> rows = op.getLogits().getType().getShape().drop_back();
  if (failed(verifyCompatibleShape(
          cast<RankedTensorType>(v.getType()).getShape(), rows)))
    return op.emitOpError() << name << " " << v.getType()
                            << " must have the logits' shape without the "
                               "vocabulary dim "
                            << formatShape(rows);
  return success();
}

LogicalResult LabelLogProbsOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  return checkRowsOfLogits(*this, getLabels(), "labels");
}

LogicalResult LabelLogProbsGradOp::verify() {
  if (failed(verifyInferredResult(*this)) ||
      failed(checkRowsOfLogits(*this, getLabels(), "labels")))
    return failure();
  return checkRowsOfLogits(*this, getGrad(), "grad");
}

LogicalResult EmbeddingGradOp::verify() {
  if (static_cast<int64_t>(getRows()) < 0)
    return emitOpError() << "rows must be >= 0, got "
                         << static_cast<int64_t>(getRows());
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType ids = getIds().getType(), g = getGradOut().getType();
  if (g.getRank() != ids.getRank() + 1 ||
      failed(verifyCompatibleShape(g.getShape().drop_back(), ids.getShape())))
    return emitOpError() << "grad_out " << g
                         << " must have the ids' shape and a feature dim, "
                         << formatShape(ids.getShape()) << " + [D]";
  return success();
}

LogicalResult SampleOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  return verifySamplingOperands(*this, getSampling(), getRng());
}

LogicalResult SampleStepOp::verify() {
  if (failed(verifyInferredResult(*this)) ||
      failed(verifySamplingOperands(*this, getSampling(), getRng())) ||
      failed(verifyDeviceScalar(*this, getCount(), "count")))
    return failure();
  RankedTensorType config = getConfig().getType();
  if (!config.getElementType().isSignlessInteger(64) || config.getRank() != 1 ||
      dimsConflict(config.getDimSize(0), 4))
    return emitOpError() << "expects config as tensor<4xi64> {eos, pad, "
                            "min_new, unused}, got "
                         << config;
  int64_t rows = getLogits().getType().getDimSize(0);
  auto isRows = [&](RankedTensorType t) {
    return t.getRank() == 1 && !dimsConflict(t.getDimSize(0), rows);
  };
  RankedTensorType finished = getFinished().getType();
  if (!isRows(finished))
    return emitOpError() << "expects finished as [B] = " << formatShape({rows})
                         << " like the logits' rows, got " << finished;
  RankedTensorType lengths = getLengths().getType();
  if (!lengths.getElementType().isSignlessInteger(64) || !isRows(lengths))
    return emitOpError() << "expects lengths as i64 [B] = "
                         << formatShape({rows})
                         << " like the logits' rows, got " << lengths;
  RankedTensorType tokens = getTokens().getType();
  if (!tokens.getElementType().isSignlessInteger(64) || tokens.getRank() != 2 ||
      dimsConflict(tokens.getDimSize(0), rows))
    return emitOpError() << "expects tokens as i64 [B, N] with B = "
                         << formatShape({rows})
                         << " like the logits' rows, got " << tokens;
  RankedTensorType logprobs = getLogprobs().getType();
  if (!logprobs.getElementType().isF32() || logprobs.getRank() != 2 ||
      dimsConflict(logprobs.getDimSize(0), tokens.getDimSize(0)) ||
      dimsConflict(logprobs.getDimSize(1), tokens.getDimSize(1)))
    return emitOpError() << "expects logprobs as f32 of the shape of tokens "
                         << formatShape(tokens.getShape()) << ", got "
                         << logprobs;
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  if (std::optional<Type> working = getWorkingDtype();
      working && !working->isBF16() && !working->isF16())
    return emitOpError() << "expects working_dtype bf16 or f16 (an f32 "
                            "parameter is updated in place), got "
                         << *working;
  if (failed(verifyInferredResult(*this)))
    return failure();
  RankedTensorType param = getParam().getType();
  const std::pair<Value, StringRef> tensors[] = {{getParam(), "param"},
                                                 {getGrad(), "grad"},
                                                 {getExpAvg(), "exp_avg"},
                                                 {getExpAvgSq(), "exp_avg_sq"}};
  for (auto [value, name] : tensors) {
    RankedTensorType t = tensorTypeOf(value);
    // The gradient may be of any float type (ODS: f32, bf16, f16): the
    // update reads it as f32, exactly.
    if (value != getGrad() && !t.getElementType().isF32())
      return emitOpError() << "expects " << name << " as f32, got " << t;
    if (failed(verifyCompatibleShape(t.getShape(), param.getShape())))
      return emitOpError() << "expects " << name << " of the param's shape "
                           << formatShape(param.getShape()) << ", got " << t;
  }
  const std::pair<Value, StringRef> scalars[] = {
      {getBeta1(), "beta1"},
      {getBeta2(), "beta2"},
      {getEps(), "eps"},
      {getStepSize(), "step_size"},
      {getBiasCorrection2Sqrt(), "bias_correction2_sqrt"},
      {getDecayFactor(), "decay_factor"}};
  for (auto [value, name] : scalars) {
    RankedTensorType t = tensorTypeOf(value);
    if (!t.getElementType().isF32() || t.getRank() != 1 ||
        dimsConflict(t.getDimSize(0), 1))
      return emitOpError() << "expects " << name << " as tensor<1xf32>, got "
                           << t;
  }
  return success();
}

/// Each of `values` has `shape` (a [B, L] operand of an RLHF op).
static LogicalResult
checkSameShape(Operation *op, ArrayRef<int64_t> shape, StringRef like,
               ArrayRef<std::pair<Value, StringRef>> values) {
  for (auto [value, name] : values) {
    RankedTensorType t = tensorTypeOf(value);
    if (failed(verifyCompatibleShape(t.getShape(), shape)))
      return op->emitOpError()
             << "expects " << name << " of " << like << "'s shape "
             << formatShape(shape) << ", got " << t;
  }
  return success();
}

LogicalResult PpoRewardsOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  ArrayRef<int64_t> shape = getLogprobs().getType().getShape();
  if (failed(checkSameShape(*this, shape, "logprobs",
                            {{getRefLogprobs(), "ref_logprobs"},
                             {getActionMask(), "action_mask"},
                             {getValues(), "values"}})))
    return failure();
  RankedTensorType scores = getRewardScores().getType();
  if (scores.getRank() != 1 || dimsConflict(scores.getDimSize(0), shape[0]))
    return emitOpError() << "expects reward_scores [B] = "
                         << formatShape(shape.take_front())
                         << " like the logprobs' rows, got " << scores;
  RankedTensorType kl = getKlCtl().getType();
  if (kl.getRank() != 1 || dimsConflict(kl.getDimSize(0), 1))
    return emitOpError() << "expects kl_ctl as tensor<1xf32>, got " << kl;
  const auto start = static_cast<int64_t>(getStart());
  if (start < 0 || (!ShapedType::isDynamic(shape[1]) && start >= shape[1]))
    return emitOpError() << "start " << start
                         << " must lie in [0, L) of logprobs "
                         << formatShape(shape);
  if (!(getClipRewardValue().convertToDouble() >= 0))
    return emitOpError() << "clip_reward_value must be >= 0, got "
                         << formatFloat(getClipRewardValue());
  return success();
}

LogicalResult GaeOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  return checkSameShape(*this, getRewards().getType().getShape(), "rewards",
                        {{getValues(), "values"}});
}

LogicalResult MaskedMeanOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  return checkSameShape(*this, getInput().getType().getShape(), "input",
                        {{getMask(), "mask"}});
}

/// values [2B, T] (an even number of rows, when known) and input_ids and
/// attention_mask of its shape: the operands of both ranking-loss ops.
static LogicalResult verifyRankingRows(Operation *op, Value values, Value ids,
                                       Value mask) {
  ArrayRef<int64_t> shape = tensorTypeOf(values).getShape();
  if (!ShapedType::isDynamic(shape[0]) && shape[0] % 2 != 0)
    return op->emitOpError()
           << "expects values [2B, T] (the chosen rows, then the rejected), "
              "got "
           << shape[0] << " rows";
  return checkSameShape(op, shape, "values",
                        {{ids, "input_ids"}, {mask, "attention_mask"}});
}

LogicalResult PairwiseRankingLossOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  return verifyRankingRows(*this, getValues(), getInputIds(),
                           getAttentionMask());
}

LogicalResult PairwiseRankingLossGradOp::verify() {
  if (failed(verifyInferredResult(*this)) ||
      failed(verifyRankingRows(*this, getValues(), getInputIds(),
                               getAttentionMask())))
    return failure();
  if (getGrad().getType().getRank() != 0)
    return emitOpError() << "expects grad as tensor<f32> (the loss's), got "
                         << getGrad().getType();
  RankedTensorType scores = getGradEndScores().getType();
  int64_t rows = getValues().getType().getDimSize(0);
  if (scores.getRank() != 1 || dimsConflict(scores.getDimSize(0), rows))
    return emitOpError() << "expects grad_end_scores [2B] = "
                         << formatShape(
                                getValues().getType().getShape().take_front())
                         << " like the values' rows, got " << scores;
  return success();
}

LogicalResult MaskedMeanGradOp::verify() {
  if (failed(verifyInferredResult(*this)))
    return failure();
  if (getGrad().getType().getRank() != 0)
    return emitOpError() << "expects grad as tensor<f32> (masked_mean's "
                            "result), got "
                         << getGrad().getType();
  return success();
}
