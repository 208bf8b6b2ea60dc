// Conversions of ONNX shape ops (Shape, Size, Reshape, Flatten, Squeeze,
// Unsqueeze, Expand, Constant, ConstantOfShape, Range). Shapes are folded
// to symbolic sizes at import time; only data movement reaches hg.
#include "frontends/onnx/ConversionTable.h"
#include "frontends/onnx/NodeOperands.h"

#include "dialects/hg/IR/HgOps.h"

#include <onnx/onnx_pb.h>

#include <cmath>

namespace hybridc::onnx {
namespace {

using hybrid::SymExpr;
using hybrid::SymShape;

llvm::Error convertShape(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  int64_t rank = (*x)->rank(), start, end;
  if (llvm::Error e = node.getInt("start", 0, start))
    return e;
  if (llvm::Error e = node.getInt("end", rank, end))
    return e;
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<SymExpr> dims((*x)->shape.begin() + start,
                            (*x)->shape.begin() + end);
  int64_t n = static_cast<int64_t>(dims.size());
  imp.setOutput(node, 0, TensorValue::makeInts({n}, std::move(dims)));
  return llvm::Error::success();
}

llvm::Error convertSize(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  imp.setOutput(node, 0, TensorValue::makeInts({}, {productOf((*x)->shape)}));
  return llvm::Error::success();
}

/// Resolves Reshape's 0 (copy) and -1 (infer) entries against `in`.
llvm::Expected<SymShape>
resolveReshape(GraphImporter &imp, const GenericNode &node, const SymShape &in,
               const std::vector<SymExpr> &target, bool allowZero) {
  SymShape out;
  std::optional<size_t> inferred;
  for (size_t i = 0; i < target.size(); ++i) {
    std::optional<int64_t> c = target[i].constant();
    if (c && *c == 0 && !allowZero) {
      if (i >= in.size())
        return node.error("shape entry " + llvm::Twine(i) +
                          " is 0 (copy) but the input has rank " +
                          llvm::Twine(in.size()));
      out.push_back(in[i]);
    } else if (c && *c == -1) {
      if (inferred)
        return node.error("shape has more than one -1");
      inferred = i;
      out.push_back(SymExpr(1));
    } else if (c && *c < 0) {
      return node.error("shape entry " + llvm::Twine(*c) + " is invalid");
    } else {
      out.push_back(target[i]);
    }
  }
  SymExpr total = productOf(in);
  SymExpr known = productOf(out);
  if (inferred) {
    std::optional<SymExpr> q;
    if (known != SymExpr(0))
      q = total.divExact(known);
    if (!q)
      return node.error("cannot infer the -1 entry: " + imp.str(total) +
                        " elements are not a multiple of " + imp.str(known));
    out[*inferred] = *q;
  } else if (total != known) {
    return node.error("shape " + imp.str(out) + " does not hold the " +
                      imp.str(total) + " elements of the input " + imp.str(in));
  }
  return out;
}

/// Reshape's target (input 1, or the `shape` attribute before opset 5)
/// resolved against the input shape `in`.
llvm::Expected<SymShape>
reshapedShape(GraphImporter &imp, const GenericNode &node, const SymShape &in) {
  std::vector<SymExpr> target;
  if (node.opset() < 5) {
    std::vector<int64_t> s;
    if (llvm::Error e = node.getInts("shape", s))
      return std::move(e);
    target.assign(s.begin(), s.end());
  } else {
    auto known = imp.knownInts(node, 1, "shape");
    if (!known)
      return known.takeError();
    target = std::move(*known);
  }
  int64_t allowZero = 0;
  if (node.opset() >= 14)
    if (llvm::Error e = node.getInt("allowzero", 0, allowZero))
      return std::move(e);
  return resolveReshape(imp, node, in, target, allowZero != 0);
}

llvm::Expected<SymShape>
flattenedShape(GraphImporter &, const GenericNode &node, const SymShape &in) {
  int64_t axis;
  if (llvm::Error e = node.getInt("axis", 1, axis))
    return std::move(e);
  int64_t rank = static_cast<int64_t>(in.size());
  if (axis < -rank || axis > rank)
    return node.error("axis " + llvm::Twine(axis) + " is out of range");
  if (axis < 0)
    axis += rank;
  return SymShape{productOf(in, 0, axis), productOf(in, axis, in.size())};
}

llvm::Expected<SymShape>
squeezedShape(GraphImporter &imp, const GenericNode &node, const SymShape &in) {
  auto axes = axesOf(imp, node, 13);
  if (!axes)
    return axes.takeError();
  int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(rank, false);
  if (axes->empty()) {
    for (int64_t i = 0; i < rank; ++i) {
      if (!in[i].isConstant())
        return node.error("squeezing every size-1 dim of " + imp.str(in) +
                          " depends on the symbolic sizes; give the axes");
      drop[i] = in[i] == SymExpr(1);
    }
  }
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(node, a, rank);
    if (!axis)
      return axis.takeError();
    if (in[*axis] != SymExpr(1))
      return node.error("cannot squeeze dim " + llvm::Twine(*axis) +
                        " of size " + imp.str(in[*axis]));
    drop[*axis] = true;
  }
  SymShape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!drop[i])
      out.push_back(in[i]);
  return out;
}

llvm::Expected<SymShape> unsqueezedShape(GraphImporter &imp,
                                         const GenericNode &node,
                                         const SymShape &in) {
  auto axes = axesOf(imp, node, 13);
  if (!axes)
    return axes.takeError();
  int64_t outRank = static_cast<int64_t>(in.size() + axes->size());
  std::vector<bool> inserted(outRank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(node, a, outRank);
    if (!axis)
      return axis.takeError();
    if (inserted[*axis])
      return node.error("axis " + llvm::Twine(a) + " is repeated");
    inserted[*axis] = true;
  }
  SymShape out;
  size_t next = 0;
  for (int64_t i = 0; i < outRank; ++i)
    out.push_back(inserted[i] ? SymExpr(1) : in[next++]);
  return out;
}

/// Reshape, Flatten, Squeeze and Unsqueeze move no data: each computes its
/// output shape from the input's, and the input is reshaped to it.
using OutputShapeFn = llvm::Expected<SymShape> (*)(GraphImporter &,
                                                   const GenericNode &,
                                                   const SymShape &);

template <OutputShapeFn OutputShape>
llvm::Error convertAsReshape(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  auto shape = OutputShape(imp, node, (*x)->shape);
  if (!shape)
    return shape.takeError();
  imp.setOutput(node, 0, imp.reshape(**x, *shape));
  return llvm::Error::success();
}

llvm::Error convertExpand(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  auto target = imp.knownInts(node, 1, "shape");
  if (!target)
    return target.takeError();
  SymShape shape(target->begin(), target->end());
  if (llvm::Error e = imp.checkShape(node, shape))
    return e;
  auto out = imp.broadcast(node, (*x)->shape, shape);
  if (!out)
    return out.takeError();
  if (llvm::Error e = imp.checkShape(node, *out))
    return e;
  imp.setOutput(node, 0, imp.broadcastTo(**x, *out));
  return llvm::Error::success();
}

/// A decoded tensor as a known value, or as an hg.constant when large.
TensorValue fromDecoded(GraphImporter &imp, const DecodedTensor &t) {
  int64_t n = 1;
  for (int64_t d : t.dims)
    n *= d;
  if (n > kMaxFoldedElements)
    return imp.live(imp.constant(t), toSymShape(t.dims));
  if (t.kind == ElemKind::Float)
    return TensorValue::makeFloats(t.dims, t.floats);
  return TensorValue::makeInts(
      t.dims, std::vector<SymExpr>(t.ints.begin(), t.ints.end()), t.kind);
}

llvm::Error convertConstant(GraphImporter &imp, const GenericNode &node) {
  DecodedTensor t;
  if (node.hasAttr("value")) {
    auto tensor = node.getTensor("value");
    if (!tensor)
      return tensor.takeError();
    auto decoded =
        decodeTensor(**tensor, "constant of node '" + node.name() + "'");
    if (!decoded)
      return decoded.takeError();
    t = std::move(*decoded);
  } else if (node.hasAttr("value_float")) {
    double f;
    if (llvm::Error e = node.getFloat("value_float", 0, f))
      return e;
    t.kind = ElemKind::Float;
    t.floats = {roundToF32(f)};
  } else if (node.hasAttr("value_floats")) {
    if (llvm::Error e = node.getFloats("value_floats", t.floats))
      return e;
    t.kind = ElemKind::Float;
    t.dims = {static_cast<int64_t>(t.floats.size())};
  } else if (node.hasAttr("value_int")) {
    int64_t i;
    if (llvm::Error e = node.getInt("value_int", 0, i))
      return e;
    t.kind = ElemKind::Int;
    t.ints = {i};
  } else if (node.hasAttr("value_ints")) {
    if (llvm::Error e = node.getInts("value_ints", t.ints))
      return e;
    t.kind = ElemKind::Int;
    t.dims = {static_cast<int64_t>(t.ints.size())};
  } else {
    return node.error("only dense numeric constants are supported (value, "
                      "value_float(s), value_int(s))");
  }
  imp.setOutput(node, 0, fromDecoded(imp, t));
  return llvm::Error::success();
}

llvm::Error convertConstantOfShape(GraphImporter &imp,
                                   const GenericNode &node) {
  auto target = imp.knownInts(node, 0, "shape");
  if (!target)
    return target.takeError();
  DecodedTensor fill;
  fill.kind = ElemKind::Float;
  fill.floats = {0.0};
  auto tensor = node.getTensor("value");
  if (!tensor)
    return tensor.takeError();
  if (*tensor) {
    auto decoded =
        decodeTensor(**tensor, "value of node '" + node.name() + "'");
    if (!decoded)
      return decoded.takeError();
    if (decoded->floats.size() + decoded->ints.size() != 1)
      return node.error("value must hold one element");
    fill = std::move(*decoded);
    fill.dims.clear();
  }
  TensorValue scalar = fromDecoded(imp, fill);
  SymShape shape(target->begin(), target->end());
  if (llvm::Error e = imp.checkShape(node, shape))
    return e;
  imp.setOutput(node, 0, imp.broadcastTo(scalar, shape));
  return llvm::Error::success();
}

/// Range(start, limit, delta). Constant ranges fold; a symbolic length
/// becomes hg.iota.
llvm::Error convertRange(GraphImporter &imp, const GenericNode &node) {
  const TensorValue *in[3];
  for (size_t i = 0; i < 3; ++i) {
    auto v = imp.input(node, i);
    if (!v)
      return v.takeError();
    if ((*v)->isLive())
      return node.error("input '" + node.input(i) +
                        "' is computed at run time; a range of data-dependent "
                        "length is not supported");
    if ((*v)->numElements() != 1)
      return node.error("inputs must be scalars");
    in[i] = *v;
  }
  ElemKind kind = in[0]->kind;
  mlir::OpBuilder &b = imp.builder();
  if (kind == ElemKind::Float) {
    double start = in[0]->floats[0], limit = in[1]->elementAsDouble(0).value(),
           delta = in[2]->elementAsDouble(0).value();
    if (delta == 0)
      return node.error("delta is 0");
    int64_t n = std::max<int64_t>(
        static_cast<int64_t>(std::ceil((limit - start) / delta)), 0);
    if (n <= kMaxFoldedElements) {
      std::vector<double> f;
      for (int64_t i = 0; i < n; ++i)
        f.push_back(roundToF32(start + static_cast<double>(i) * delta));
      imp.setOutput(node, 0, TensorValue::makeFloats({n}, std::move(f)));
      return llvm::Error::success();
    }
    SymShape shape = {SymExpr(n)};
    mlir::Value r = imp.emit<hg::IotaOp>(
        imp.tensorType(shape, kind), imp.shapeAttr(shape),
        b.getF64FloatAttr(start), b.getF64FloatAttr(delta));
    imp.setOutput(node, 0, imp.live(r, shape));
    return llvm::Error::success();
  }
  if (kind != ElemKind::Int)
    return node.error("unsupported element type");
  const SymExpr &start = in[0]->ints[0], &limit = in[1]->ints[0];
  std::optional<int64_t> delta = in[2]->ints[0].constant();
  if (!delta || *delta == 0)
    return node.error("delta must be a non-zero constant");
  SymExpr span = limit - start;
  SymExpr length;
  if (std::optional<int64_t> c = span.constant()) {
    int64_t s = *c, d = *delta;
    int64_t n = (s > 0) == (d > 0) && s != 0
                    ? (std::abs(s) + std::abs(d) - 1) / std::abs(d)
                    : 0;
    length = SymExpr(n);
  } else {
    std::optional<SymExpr> q = span.divExact(SymExpr(*delta));
    if (!q || !SymExpr::knownGE(*q, 0))
      return node.error("cannot express the length of range(" + imp.str(start) +
                        ", " + imp.str(limit) + ", " + llvm::Twine(*delta) +
                        ") as a size");
    length = *q;
  }
  if (std::optional<int64_t> n = length.constant();
      n && *n <= kMaxFoldedElements) {
    std::vector<SymExpr> elems;
    for (int64_t i = 0; i < *n; ++i)
      elems.push_back(start + SymExpr(i * *delta));
    imp.setOutput(node, 0, TensorValue::makeInts({*n}, std::move(elems)));
    return llvm::Error::success();
  }
  SymShape shape = {length};
  std::optional<int64_t> constStart = start.constant();
  mlir::Value r = imp.emit<hg::IotaOp>(
      imp.tensorType(shape, kind), imp.shapeAttr(shape),
      b.getF64FloatAttr(static_cast<double>(constStart.value_or(0))),
      b.getF64FloatAttr(static_cast<double>(*delta)));
  if (!constStart) // a symbolic start (e.g. past length) is added at run time
    r = imp.emit<hg::AddOp>(r, imp.materialize(*in[0]));
  imp.setOutput(node, 0, imp.live(r, shape));
  return llvm::Error::success();
}

} // namespace

void registerShapeConversions(ConversionTable &t) {
  t.add("Shape", {1, 13, 15, 19, 21}, convertShape);
  t.add("Size", {1, 13, 19, 21}, convertSize);
  t.add("Reshape", {1, 5, 13, 14, 19, 21}, convertAsReshape<reshapedShape>);
  t.add("Flatten", {1, 9, 11, 13, 21}, convertAsReshape<flattenedShape>);
  t.add("Squeeze", {1, 11, 13, 21}, convertAsReshape<squeezedShape>);
  t.add("Unsqueeze", {1, 11, 13, 21}, convertAsReshape<unsqueezedShape>);
  t.add("Expand", {8, 13}, convertExpand);
  t.add("Constant", {1, 9, 11, 12, 13, 19, 21}, convertConstant);
  t.add("ConstantOfShape", {9, 20, 21}, convertConstantOfShape);
  t.add("Range", 11, convertRange);
}

} // namespace hybridc::onnx
