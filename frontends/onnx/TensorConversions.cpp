// Conversions of ONNX data-movement ops (Transpose, Slice, Concat, Split,
// Gather, GatherND, CumSum, Trilu) to hg. Slice bounds that are symbolic
// sizes are resolved against the sliced dim's symbolic size.
#include "frontends/onnx/ConversionTable.h"
#include "frontends/onnx/NodeOperands.h"

#include "dialects/hg/IR/HgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <limits>

namespace hybridc::onnx {
namespace {

using hybrid::SymExpr;
using hybrid::SymShape;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

//===----------------------------------------------------------------------===//
// Slicing (shared by Slice and Split)
//===----------------------------------------------------------------------===//

/// One axis of a slice: the hg.slice attribute values and the symbolic
/// first index and length of the result.
struct AxisSlice {
  int64_t axis;
  int64_t startAttr, endAttr, step;
  SymExpr start, length;
};

/// A bound of a positive-step slice as an index into [0, dim] and the
/// attribute value that says the same to hg.slice.
llvm::Expected<std::pair<SymExpr, int64_t>>
resolveBound(GraphImporter &imp, const GenericNode &node, const SymExpr &b,
             const SymExpr &dim) {
  auto cannot = [&]() {
    return node.error("cannot resolve slice bound " + imp.str(b) +
                      " against the symbolic dim " + imp.str(dim) +
                      " (its clamping depends on the sizes)");
  };
  if (std::optional<int64_t> c = b.constant()) {
    if (*c >= 0) {
      if (SymExpr::knownGE(dim, b))
        return std::make_pair(b, *c);
      if (*c >= (kInt64Max >> 1)) // "to the end"
        return std::make_pair(dim, kInt64Max);
      return cannot();
    }
    if (*c <= (kInt64Min >> 1)) // "from the start"
      return std::make_pair(SymExpr(0), kInt64Min);
    SymExpr idx = dim + b;
    if (SymExpr::knownGE(idx, 0))
      return std::make_pair(idx, *c);
    return cannot();
  }
  // Symbolic bound: an index of the dim if provably within it, written
  // relative to the end ("dim - c" -> -c; "dim" -> to the end).
  if (SymExpr::knownGE(b, dim))
    return std::make_pair(dim, kInt64Max);
  if (!SymExpr::knownGE(b, 0) || !SymExpr::knownGE(dim, b))
    return cannot();
  SymExpr fromEnd = b - dim;
  if (std::optional<int64_t> c = fromEnd.constant())
    return std::make_pair(b, *c);
  return node.error("cannot express slice bound " + imp.str(b) +
                    " relative to the dim " + imp.str(dim));
}

llvm::Expected<AxisSlice> resolveAxisSlice(GraphImporter &imp,
                                           const GenericNode &node,
                                           int64_t axis, const SymExpr &dim,
                                           const SymExpr &start,
                                           const SymExpr &end, int64_t step) {
  if (step == 0)
    return node.error("slice step is 0");
  AxisSlice s{axis, 0, 0, step, SymExpr(0), SymExpr(0)};
  std::optional<int64_t> cd = dim.constant(), cs = start.constant(),
                         ce = end.constant();
  if (cd && cs && ce) {
    hg::SliceBounds bounds = hg::resolveSliceBounds(*cd, *cs, *ce, step);
    s.startAttr = *cs;
    s.endAttr = *ce;
    s.start = SymExpr(bounds.start);
    s.length = SymExpr(bounds.length);
    return s;
  }
  if (step < 0) {
    // Only the whole dim reversed (x[::-step]) is supported symbolically.
    bool fromLast = cs && (*cs >= (kInt64Max >> 1) || *cs == -1);
    bool toFront = ce && *ce <= (kInt64Min >> 1);
    if (!fromLast || !toFront || step != -1)
      return node.error("negative-step slice of the symbolic dim " +
                        imp.str(dim) + " is not supported");
    s.startAttr = *cs;
    s.endAttr = *ce;
    s.start = dim - SymExpr(1);
    s.length = dim;
    return s;
  }
  auto b0 = resolveBound(imp, node, start, dim);
  if (!b0)
    return b0.takeError();
  auto b1 = resolveBound(imp, node, end, dim);
  if (!b1)
    return b1.takeError();
  s.start = b0->first;
  s.startAttr = b0->second;
  s.endAttr = b1->second;
  SymExpr span = b1->first - b0->first;
  if (SymExpr::knownGE(SymExpr(0), span)) {
    s.length = SymExpr(0);
  } else if (!SymExpr::knownGE(span, 0)) {
    return node.error("slice [" + imp.str(start) + ", " + imp.str(end) +
                      ") of dim " + imp.str(dim) +
                      " may be empty or not, depending on the sizes");
  } else if (step == 1) {
    s.length = span;
  } else if (std::optional<int64_t> c = span.constant()) {
    s.length = SymExpr((*c + step - 1) / step);
  } else if (std::optional<SymExpr> q = span.divExact(SymExpr(step))) {
    s.length = *q;
  } else {
    return node.error("strided slice length of " + imp.str(span) + " / " +
                      llvm::Twine(step) + " is not a polynomial");
  }
  return s;
}

/// Applies resolved per-axis slices: folds known inputs, else hg.slice.
TensorValue applySlice(GraphImporter &imp, const TensorValue &in,
                       const std::vector<AxisSlice> &slices) {
  SymShape shape = in.shape;
  for (const AxisSlice &s : slices)
    shape[s.axis] = s.length;
  if (shape == in.shape) {
    bool identity = true;
    for (const AxisSlice &s : slices)
      identity &= s.step == 1 && s.start == SymExpr(0);
    if (identity)
      return in;
  }
  if (in.isKnown()) {
    std::vector<int64_t> inStrides = stridesOf(*in.staticDims());
    std::vector<int64_t> strides = inStrides;
    int64_t offset = 0;
    for (const AxisSlice &s : slices) {
      offset += *s.start.constant() * inStrides[s.axis];
      strides[s.axis] = s.step * inStrides[s.axis];
    }
    return stridedCopy(in, shape, offset, strides);
  }
  llvm::SmallVector<int64_t> axes, starts, ends, steps;
  for (const AxisSlice &s : slices) {
    axes.push_back(s.axis);
    starts.push_back(s.startAttr);
    ends.push_back(s.endAttr);
    steps.push_back(s.step);
  }
  mlir::OpBuilder &b = imp.builder();
  mlir::Value r = imp.emit<hg::SliceOp>(
      in.live, b.getDenseI64ArrayAttr(axes), b.getDenseI64ArrayAttr(starts),
      b.getDenseI64ArrayAttr(ends), b.getDenseI64ArrayAttr(steps));
  return imp.live(r, shape);
}

llvm::Error convertSlice(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  std::vector<SymExpr> starts, ends;
  std::vector<int64_t> axes, steps;
  if (node.opset() < 10) {
    std::vector<int64_t> s, e;
    if (llvm::Error err = node.getInts("starts", s))
      return err;
    if (llvm::Error err = node.getInts("ends", e))
      return err;
    if (llvm::Error err = node.getInts("axes", axes))
      return err;
    starts.assign(s.begin(), s.end());
    ends.assign(e.begin(), e.end());
  } else {
    auto s = imp.knownInts(node, 1, "starts");
    if (!s)
      return s.takeError();
    auto e = imp.knownInts(node, 2, "ends");
    if (!e)
      return e.takeError();
    starts = std::move(*s);
    ends = std::move(*e);
    for (size_t i : {3, 4}) {
      if (!node.hasInput(i))
        continue;
      auto v = imp.knownInts(node, i, i == 3 ? "axes" : "steps");
      if (!v)
        return v.takeError();
      for (const SymExpr &a : *v) {
        std::optional<int64_t> c = a.constant();
        if (!c)
          return node.error("axes and steps must be constants");
        (i == 3 ? axes : steps).push_back(*c);
      }
    }
  }
  if (starts.size() != ends.size())
    return node.error("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    return node.error("starts, ends, axes and steps differ in length");
  std::vector<AxisSlice> slices;
  std::vector<bool> seen(in.rank(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    auto axis = normalizeAxis(node, axes[i], in.rank());
    if (!axis)
      return axis.takeError();
    if (seen[*axis])
      return node.error("axis " + llvm::Twine(*axis) + " is sliced twice");
    seen[*axis] = true;
    auto s = resolveAxisSlice(imp, node, *axis, in.shape[*axis], starts[i],
                              ends[i], steps[i]);
    if (!s)
      return s.takeError();
    slices.push_back(*s);
  }
  imp.setOutput(node, 0, applySlice(imp, in, slices));
  return llvm::Error::success();
}

llvm::Error convertSplit(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  auto axis = readAxis(node, 0, in.rank());
  if (!axis)
    return axis.takeError();
  const SymExpr &dim = in.shape[*axis];
  size_t n = node.numOutputs();
  std::vector<SymExpr> sizes;
  if (node.opset() < 13) {
    std::vector<int64_t> split;
    if (llvm::Error e = node.getInts("split", split))
      return e;
    sizes.assign(split.begin(), split.end());
  } else if (node.hasInput(1)) {
    auto split = imp.knownInts(node, 1, "split");
    if (!split)
      return split.takeError();
    sizes = std::move(*split);
  }
  if (sizes.empty()) {
    int64_t parts = static_cast<int64_t>(n);
    if (node.opset() >= 18) {
      if (llvm::Error e = node.getInt("num_outputs", parts, parts))
        return e;
      if (parts != static_cast<int64_t>(n))
        return node.error("num_outputs differs from the number of outputs");
    }
    if (std::optional<int64_t> c = dim.constant()) {
      // Opset 18 allows a shorter last chunk; earlier ones need equal parts.
      int64_t chunk = (*c + parts - 1) / parts;
      if (node.opset() < 18 && *c % parts)
        return node.error("dim of size " + llvm::Twine(*c) +
                          " does not split into " + llvm::Twine(parts) +
                          " equal parts");
      for (int64_t i = 0; i < parts; ++i)
        sizes.push_back(
            SymExpr(std::max<int64_t>(std::min(chunk, *c - i * chunk), 0)));
    } else {
      std::optional<SymExpr> chunk = dim.divExact(SymExpr(parts));
      if (!chunk)
        return node.error("cannot split the symbolic dim " + imp.str(dim) +
                          " into " + llvm::Twine(parts) + " parts");
      sizes.assign(parts, *chunk);
    }
  }
  if (sizes.size() != n)
    return node.error("split has " + llvm::Twine(sizes.size()) + " sizes for " +
                      llvm::Twine(n) + " outputs");
  SymExpr offset(0);
  for (size_t i = 0; i < n; ++i) {
    auto s =
        resolveAxisSlice(imp, node, *axis, dim, offset, offset + sizes[i], 1);
    if (!s)
      return s.takeError();
    if (s->length != sizes[i])
      return node.error("split sizes exceed the dim " + imp.str(dim));
    imp.setOutput(node, i, applySlice(imp, in, {*s}));
    offset = offset + sizes[i];
  }
  if (offset != dim)
    return node.error("split sizes add up to " + imp.str(offset) +
                      ", not the dim " + imp.str(dim));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Transpose, Concat
//===----------------------------------------------------------------------===//

llvm::Error convertTranspose(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  std::vector<int64_t> perm;
  if (llvm::Error e = node.getInts("perm", perm))
    return e;
  int64_t rank = in.rank();
  if (perm.empty())
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    return node.error("perm has " + llvm::Twine(perm.size()) +
                      " entries for rank " + llvm::Twine(rank));
  std::vector<bool> used(rank, false);
  SymShape shape;
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= rank || used[p])
      return node.error("perm is not a permutation");
    used[p] = true;
    identity &= p == i;
    shape.push_back(in.shape[p]);
  }
  if (identity) {
    imp.setOutput(node, 0, in);
    return llvm::Error::success();
  }
  if (in.isKnown()) {
    std::vector<int64_t> inStrides = stridesOf(*in.staticDims());
    std::vector<int64_t> strides;
    for (int64_t p : perm)
      strides.push_back(inStrides[p]);
    imp.setOutput(node, 0, stridedCopy(in, shape, 0, strides));
    return llvm::Error::success();
  }
  mlir::Value r = imp.emit<hg::TransposeOp>(
      in.live, imp.builder().getDenseI64ArrayAttr(perm));
  imp.setOutput(node, 0, imp.live(r, shape));
  return llvm::Error::success();
}

llvm::Error convertConcat(GraphImporter &imp, const GenericNode &node) {
  std::vector<const TensorValue *> ins;
  for (size_t i = 0; i < node.numInputs(); ++i) {
    auto v = imp.input(node, i);
    if (!v)
      return v.takeError();
    ins.push_back(*v);
  }
  if (ins.empty())
    return node.error("has no inputs");
  int64_t rank = ins[0]->rank();
  auto axis = readAxis(node, 0, rank);
  if (!axis)
    return axis.takeError();
  SymShape shape = ins[0]->shape;
  shape[*axis] = SymExpr(0);
  bool allKnown = true;
  for (const TensorValue *v : ins) {
    if (v->rank() != rank || v->kind != ins[0]->kind)
      return node.error("inputs differ in rank or element type");
    for (int64_t d = 0; d < rank; ++d)
      if (d != *axis && v->shape[d] != shape[d])
        return node.error("input shapes " + imp.str(ins[0]->shape) + " and " +
                          imp.str(v->shape) + " differ off the concat axis");
    shape[*axis] = shape[*axis] + v->shape[*axis];
    allKnown &= v->isKnown();
  }
  if (allKnown) {
    TensorValue r;
    r.kind = ins[0]->kind;
    r.shape = shape;
    std::vector<int64_t> dims = *r.staticDims();
    int64_t outer = 1;
    for (int64_t d = 0; d < *axis; ++d)
      outer *= dims[d];
    for (int64_t o = 0; o < outer; ++o)
      for (const TensorValue *v : ins) {
        int64_t slab = v->numElements() / outer;
        for (int64_t i = 0; i < slab; ++i)
          r.appendElement(*v, o * slab + i);
      }
    imp.setOutput(node, 0, std::move(r));
    return llvm::Error::success();
  }
  llvm::SmallVector<mlir::Value> operands;
  for (const TensorValue *v : ins)
    if (v->shape[*axis] != SymExpr(0)) // empty pieces add nothing
      operands.push_back(imp.materialize(*v));
  mlir::Value r = operands.size() == 1
                      ? operands.front()
                      : imp.emit<hg::ConcatOp>(
                            operands, imp.builder().getI64IntegerAttr(*axis));
  imp.setOutput(node, 0, imp.live(r, shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Gather, GatherND
//===----------------------------------------------------------------------===//

/// Whether `v` is a parameter (an argument of @forward tagged hg.param).
bool isParameter(const TensorValue &v) {
  auto arg = mlir::dyn_cast_or_null<mlir::BlockArgument>(v.live);
  if (!arg)
    return false;
  auto func = mlir::dyn_cast<mlir::func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), "hg.param");
}

llvm::Error convertGather(GraphImporter &imp, const GenericNode &node) {
  auto d = imp.input(node, 0);
  if (!d)
    return d.takeError();
  auto i = imp.input(node, 1);
  if (!i)
    return i.takeError();
  const TensorValue &data = **d, &indices = **i;
  if (indices.kind != ElemKind::Int)
    return node.error("indices must be integers");
  auto axis = readAxis(node, 0, data.rank());
  if (!axis)
    return axis.takeError();
  SymShape shape(data.shape.begin(), data.shape.begin() + *axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + *axis + 1, data.shape.end());

  if (data.isKnown() && indices.isKnown() && indices.isConstantInts()) {
    std::vector<int64_t> dims = *data.staticDims();
    std::vector<int64_t> strides = stridesOf(dims);
    int64_t axisDim = dims[*axis];
    int64_t outer = 1, inner = strides[*axis];
    for (int64_t k = 0; k < *axis; ++k)
      outer *= dims[k];
    TensorValue r;
    r.kind = data.kind;
    r.shape = shape;
    for (int64_t o = 0; o < outer; ++o)
      for (const SymExpr &e : indices.ints) {
        int64_t idx = *e.constant();
        if (idx < 0)
          idx += axisDim;
        if (idx < 0 || idx >= axisDim)
          return node.error("index " + llvm::Twine(*e.constant()) +
                            " is out of range for a dim of size " +
                            llvm::Twine(axisDim));
        for (int64_t k = 0; k < inner; ++k)
          r.appendElement(data, o * axisDim * inner + idx * inner + k);
      }
    imp.setOutput(node, 0, std::move(r));
    return llvm::Error::success();
  }

  // Token embedding: rows of a [V, D] weight table.
  if (*axis == 0 && data.rank() == 2 && data.kind == ElemKind::Float &&
      isParameter(data) && indices.isLive()) {
    mlir::Value r = imp.emit<hg::EmbeddingOp>(data.live, indices.live);
    imp.setOutput(node, 0, imp.live(r, shape));
    return llvm::Error::success();
  }

  // Constant indices into a static dim are normalised so hg sees no
  // negative index.
  TensorValue idx = indices;
  if (idx.isKnown())
    if (std::optional<int64_t> dim = data.shape[*axis].constant())
      for (SymExpr &e : idx.ints)
        if (std::optional<int64_t> c = e.constant(); c && *c < 0)
          e = SymExpr(*c + *dim);
  mlir::Value r =
      imp.emit<hg::GatherOp>(imp.materialize(data), imp.materialize(idx),
                             imp.builder().getI64IntegerAttr(*axis));
  imp.setOutput(node, 0, imp.live(r, shape));
  return llvm::Error::success();
}

llvm::Error convertGatherND(GraphImporter &imp, const GenericNode &node) {
  auto d = imp.input(node, 0);
  if (!d)
    return d.takeError();
  auto i = imp.input(node, 1);
  if (!i)
    return i.takeError();
  const TensorValue &data = **d, &indices = **i;
  if (indices.kind != ElemKind::Int || indices.rank() < 1)
    return node.error("indices must be an integer tensor of rank >= 1");
  int64_t batchDims = 0;
  if (node.opset() >= 12)
    if (llvm::Error e = node.getInt("batch_dims", 0, batchDims))
      return e;
  std::optional<int64_t> depth = indices.shape.back().constant();
  if (!depth || batchDims < 0 || batchDims + *depth > data.rank())
    return node.error("the index depth " + imp.str(indices.shape.back()) +
                      " does not fit data of rank " + llvm::Twine(data.rank()));
  SymShape shape(indices.shape.begin(), indices.shape.end() - 1);
  shape.insert(shape.end(), data.shape.begin() + batchDims + *depth,
               data.shape.end());
  mlir::Value r =
      imp.emit<hg::GatherNdOp>(imp.materialize(data), imp.materialize(indices),
                               imp.builder().getI64IntegerAttr(batchDims));
  imp.setOutput(node, 0, imp.live(r, shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// CumSum, Trilu
//===----------------------------------------------------------------------===//

llvm::Error convertCumSum(GraphImporter &imp, const GenericNode &node) {
  auto x = numericInput(imp, node, 0, "CumSum");
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  auto axisValue = imp.knownConstantInt(node, 1, "axis");
  if (!axisValue)
    return axisValue.takeError();
  auto axis = normalizeAxis(node, *axisValue, in.rank());
  if (!axis)
    return axis.takeError();
  int64_t exclusive, reverse;
  if (llvm::Error e = node.getInt("exclusive", 0, exclusive))
    return e;
  if (llvm::Error e = node.getInt("reverse", 0, reverse))
    return e;
  mlir::OpBuilder &b = imp.builder();
  mlir::Value r = imp.emit<hg::CumSumOp>(
      imp.materialize(in), b.getI64IntegerAttr(*axis),
      b.getBoolAttr(exclusive != 0), b.getBoolAttr(reverse != 0));
  imp.setOutput(node, 0, imp.live(r, in.shape));
  return llvm::Error::success();
}

llvm::Error convertTrilu(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  if (in.rank() < 2)
    return node.error("input must have rank >= 2");
  int64_t upper, k = 0;
  if (llvm::Error e = node.getInt("upper", 1, upper))
    return e;
  if (node.hasInput(1)) {
    auto kv = imp.knownConstantInt(node, 1, "k");
    if (!kv)
      return kv.takeError();
    k = *kv;
  }
  mlir::OpBuilder &b = imp.builder();
  mlir::Value r = imp.emit<hg::TriluOp>(
      imp.materialize(in), b.getBoolAttr(upper != 0), b.getI64IntegerAttr(k));
  imp.setOutput(node, 0, imp.live(r, in.shape));
  return llvm::Error::success();
}

} // namespace

void registerTensorConversions(ConversionTable &t) {
  t.add("Transpose", {1, 13, 21}, convertTranspose);
  t.add("Slice", {1, 10, 11, 13}, convertSlice);
  t.add("Concat", {4, 11, 13}, convertConcat);
  t.add("Split", {2, 11, 13, 18}, convertSplit);
  t.add("Gather", {1, 11, 13}, convertGather);
  t.add("GatherND", {11, 12, 13}, convertGatherND);
  t.add("CumSum", {11, 14}, convertCumSum);
  t.add("Trilu", 14, convertTrilu);
}

} // namespace hybridc::onnx
