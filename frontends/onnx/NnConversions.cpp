// Conversions of ONNX linear algebra, reductions, softmax, normalisation and
// GELU to hg.
#include "frontends/onnx/ConversionTable.h"
#include "frontends/onnx/NodeOperands.h"

#include "dialects/hg/IR/HgOps.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <type_traits>

namespace hybridc::onnx {
namespace {

using hybrid::SymExpr;
using hybrid::SymShape;

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

/// NumPy matmul shape (1-D operands promoted and the added dim dropped).
llvm::Expected<SymShape> matmulShape(GraphImporter &imp,
                                     const GenericNode &node, SymShape a,
                                     SymShape b) {
  if (a.empty() || b.empty())
    return node.error("matmul operands must have rank >= 1");
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), SymExpr(1));
  if (bVec)
    b.push_back(SymExpr(1));
  const SymExpr &ka = a.back(), &kb = b[b.size() - 2];
  if (ka != kb)
    return node.error("contracting dims " + imp.str(ka) + " and " +
                      imp.str(kb) + " differ");
  SymShape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  auto batch = imp.broadcast(node, ab, bb);
  if (!batch)
    return batch.takeError();
  SymShape out = *batch;
  if (!aVec)
    out.push_back(a[a.size() - 2]);
  if (!bVec)
    out.push_back(b.back());
  return out;
}

llvm::Error convertMatMul(GraphImporter &imp, const GenericNode &node) {
  auto a = floatInput(imp, node, 0);
  if (!a)
    return a.takeError();
  auto b = floatInput(imp, node, 1);
  if (!b)
    return b.takeError();
  auto shape = matmulShape(imp, node, (*a)->shape, (*b)->shape);
  if (!shape)
    return shape.takeError();
  mlir::Value r =
      imp.emit<hg::MatMulOp>(imp.materialize(**a), imp.materialize(**b));
  imp.setOutput(node, 0, imp.live(r, *shape));
  return llvm::Error::success();
}

TensorValue transpose2d(GraphImporter &imp, const TensorValue &v) {
  mlir::Value t = imp.emit<hg::TransposeOp>(
      imp.materialize(v), imp.builder().getDenseI64ArrayAttr({1, 0}));
  return imp.live(t, {v.shape[1], v.shape[0]});
}

/// Gemm: alpha * A' B' + beta * C. The common case (alpha = beta = 1, no
/// transposed A, a vector bias) is exactly hg.linear.
llvm::Error convertGemm(GraphImporter &imp, const GenericNode &node) {
  auto a = floatInput(imp, node, 0);
  if (!a)
    return a.takeError();
  auto b = floatInput(imp, node, 1);
  if (!b)
    return b.takeError();
  const TensorValue *c = nullptr;
  if (node.hasInput(2)) {
    auto cv = floatInput(imp, node, 2);
    if (!cv)
      return cv.takeError();
    c = *cv;
  }
  double alpha, beta;
  int64_t transA, transB;
  if (llvm::Error e = node.getFloat("alpha", 1.0, alpha))
    return e;
  if (llvm::Error e = node.getFloat("beta", 1.0, beta))
    return e;
  if (llvm::Error e = node.getInt("transA", 0, transA))
    return e;
  if (llvm::Error e = node.getInt("transB", 0, transB))
    return e;
  const TensorValue &A = **a, &B = **b;
  if (A.rank() != 2 || B.rank() != 2)
    return node.error("A and B must be matrices");
  SymExpr m = transA ? A.shape[1] : A.shape[0];
  SymExpr k = transA ? A.shape[0] : A.shape[1];
  SymExpr kb = transB ? B.shape[1] : B.shape[0];
  SymExpr n = transB ? B.shape[0] : B.shape[1];
  if (k != kb)
    return node.error("contracting dims " + imp.str(k) + " and " + imp.str(kb) +
                      " differ");
  SymShape shape = {m, n};

  bool vectorBias =
      c && beta == 1.0 &&
      (c->shape == SymShape{n} || c->shape == SymShape{SymExpr(1), n});
  if (alpha == 1.0 && !transA && (!c || vectorBias)) {
    mlir::Value bias;
    if (c)
      bias = imp.materialize(imp.reshape(*c, {n}));
    mlir::Value r =
        imp.emit<hg::LinearOp>(imp.materialize(A), imp.materialize(B), bias,
                               imp.builder().getBoolAttr(transB != 0));
    imp.setOutput(node, 0, imp.live(r, shape));
    return llvm::Error::success();
  }

  TensorValue lhs = transA ? transpose2d(imp, A) : A;
  TensorValue rhs = transB ? transpose2d(imp, B) : B;
  mlir::Value y =
      imp.emit<hg::MatMulOp>(imp.materialize(lhs), imp.materialize(rhs));
  if (alpha != 1.0)
    y = imp.emit<hg::MulOp>(y, imp.scalarConstant(alpha, ElemKind::Float));
  if (c) {
    auto cs = imp.broadcast(node, c->shape, shape);
    if (!cs)
      return cs.takeError();
    if (*cs != shape)
      return node.error("C of shape " + imp.str(c->shape) +
                        " does not broadcast to " + imp.str(shape));
    mlir::Value cv = imp.materialize(*c);
    if (beta != 1.0)
      cv = imp.emit<hg::MulOp>(cv, imp.scalarConstant(beta, ElemKind::Float));
    y = imp.emit<hg::AddOp>(y, cv);
  }
  imp.setOutput(node, 0, imp.live(y, shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// ReduceSum takes axes as an input from opset 13, the others from 18.
template <typename ReduceOp>
llvm::Error convertReduce(GraphImporter &imp, const GenericNode &node) {
  constexpr bool isSum = std::is_same_v<ReduceOp, hg::ReduceSumOp>;
  constexpr bool isProd = std::is_same_v<ReduceOp, hg::ReduceProdOp>;
  auto x = numericInput(imp, node, 0, "reduction");
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  int64_t axesAsInput = isSum ? 13 : 18;
  auto axes = axesOf(imp, node, axesAsInput);
  if (!axes)
    return axes.takeError();
  int64_t keepdims, noop = 0;
  if (llvm::Error e = node.getInt("keepdims", 1, keepdims))
    return e;
  if (node.opset() >= axesAsInput)
    if (llvm::Error e = node.getInt("noop_with_empty_axes", 0, noop))
      return e;
  if (axes->empty() && noop) {
    imp.setOutput(node, 0, in);
    return llvm::Error::success();
  }
  int64_t rank = in.rank();
  std::vector<bool> reduced(rank, axes->empty());
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(node, a, rank);
    if (!axis)
      return axis.takeError();
    reduced[*axis] = true;
  }
  llvm::SmallVector<int64_t> normAxes;
  SymShape shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (reduced[i])
      normAxes.push_back(i);
    if (!reduced[i])
      shape.push_back(in.shape[i]);
    else if (keepdims)
      shape.push_back(SymExpr(1));
  }
  // Sizes are often reduced with ReduceProd / ReduceSum; fold full
  // reductions of known integers.
  if (in.isKnown() && in.kind == ElemKind::Int &&
      normAxes.size() == static_cast<size_t>(rank) && (isSum || isProd) &&
      in.numElements() > 0) {
    SymExpr acc = isSum ? SymExpr(0) : SymExpr(1);
    for (const SymExpr &e : in.ints)
      acc = isSum ? acc + e : acc * e;
    std::vector<int64_t> dims(shape.size(), 1);
    imp.setOutput(node, 0, TensorValue::makeInts(dims, {acc}));
    return llvm::Error::success();
  }
  mlir::OpBuilder &b = imp.builder();
  mlir::Value r =
      imp.emit<ReduceOp>(imp.materialize(in), b.getDenseI64ArrayAttr(normAxes),
                         b.getBoolAttr(keepdims != 0));
  imp.setOutput(node, 0, imp.live(r, shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

/// Before opset 13 (Log)Softmax normalises over all dims from `axis` on,
/// flattened ("coerced to 2-D"); from 13 over `axis` alone.
template <bool Log>
llvm::Error convertSoftmax(GraphImporter &imp, const GenericNode &node) {
  auto x = floatInput(imp, node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  bool coerced = node.opset() < 13;
  int64_t axisAttr;
  if (llvm::Error e = node.getInt("axis", coerced ? 1 : -1, axisAttr))
    return e;
  int64_t rank = in.rank();
  if (rank == 0)
    return node.error("input must have rank >= 1");
  auto axis = normalizeAxis(node, axisAttr, rank);
  if (!axis)
    return axis.takeError();
  auto emit = [&](mlir::Value v, int64_t ax) {
    mlir::IntegerAttr a = imp.builder().getI64IntegerAttr(ax);
    return Log ? imp.emit<hg::LogSoftmaxOp>(v, a)
               : imp.emit<hg::SoftmaxOp>(v, a);
  };
  if (!coerced || *axis == rank - 1) {
    imp.setOutput(node, 0,
                  imp.live(emit(imp.materialize(in), *axis), in.shape));
    return llvm::Error::success();
  }
  SymShape flat = {productOf(in.shape, 0, *axis),
                   productOf(in.shape, *axis, rank)};
  TensorValue v2d = imp.reshape(in, flat);
  TensorValue r2d = imp.live(emit(imp.materialize(v2d), 1), flat);
  imp.setOutput(node, 0, imp.reshape(r2d, in.shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Normalisation, GELU
//===----------------------------------------------------------------------===//

/// A scale or bias operand of a norm over `normShape`: passed as is when it
/// has that shape, broadcast to it when it broadcasts without growing the
/// input.
llvm::Expected<mlir::Value> normOperand(GraphImporter &imp,
                                        const GenericNode &node,
                                        const TensorValue &v,
                                        const SymShape &normShape) {
  if (v.kind != ElemKind::Float)
    return node.error("scale and bias must be float tensors");
  if (v.shape == normShape)
    return imp.materialize(v);
  if (v.rank() > static_cast<int64_t>(normShape.size()))
    return node.error("scale/bias of shape " + imp.str(v.shape) +
                      " does not broadcast to the normalised shape " +
                      imp.str(normShape));
  auto shape = imp.broadcast(node, v.shape, normShape);
  if (!shape)
    return shape.takeError();
  if (*shape != normShape)
    return node.error("scale/bias of shape " + imp.str(v.shape) +
                      " does not broadcast to the normalised shape " +
                      imp.str(normShape));
  return imp.materialize(imp.broadcastTo(v, normShape));
}

llvm::Error checkStashType(const GenericNode &node) {
  int64_t stash;
  if (llvm::Error e = node.getInt("stash_type", 1, stash))
    return e;
  if (stash != ::onnx::TensorProto::FLOAT)
    return node.error("stash_type " +
                      onnxTypeName(static_cast<int32_t>(stash)) +
                      " is not supported (hg normalises in f32)");
  return llvm::Error::success();
}

/// What LayerNormalization and RMSNormalization read alike: the float
/// input, the first normalised axis, epsilon, and the scale operand over the
/// normalised dims.
struct NormOperands {
  const TensorValue *input;
  int64_t axis;
  double epsilon;
  SymShape normShape;
  mlir::Value scale;
};

llvm::Expected<NormOperands> readNormOperands(GraphImporter &imp,
                                              const GenericNode &node) {
  auto x = floatInput(imp, node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &in = **x;
  if (llvm::Error e = checkStashType(node))
    return std::move(e);
  int64_t axisAttr;
  double eps;
  if (llvm::Error e = node.getInt("axis", -1, axisAttr))
    return std::move(e);
  if (llvm::Error e = node.getFloat("epsilon", 1e-5, eps))
    return std::move(e);
  auto axis = normalizeAxis(node, axisAttr, in.rank());
  if (!axis)
    return axis.takeError();
  SymShape normShape(in.shape.begin() + *axis, in.shape.end());
  auto scale = imp.input(node, 1);
  if (!scale)
    return scale.takeError();
  auto weight = normOperand(imp, node, **scale, normShape);
  if (!weight)
    return weight.takeError();
  return NormOperands{&in, *axis, eps, std::move(normShape), *weight};
}

llvm::Error convertLayerNorm(GraphImporter &imp, const GenericNode &node) {
  auto norm = readNormOperands(imp, node);
  if (!norm)
    return norm.takeError();
  const TensorValue &in = *norm->input;
  int64_t axis = norm->axis;
  mlir::Value bias;
  if (node.hasInput(2)) {
    auto b = imp.input(node, 2);
    if (!b)
      return b.takeError();
    auto bv = normOperand(imp, node, **b, norm->normShape);
    if (!bv)
      return bv.takeError();
    bias = *bv;
  }
  mlir::OpBuilder &b = imp.builder();
  mlir::Value input = imp.materialize(in);
  mlir::Value r = imp.emit<hg::LayerNormOp>(input, norm->scale, bias,
                                            b.getF64FloatAttr(norm->epsilon),
                                            b.getI64IntegerAttr(axis));
  imp.setOutput(node, 0, imp.live(r, in.shape));

  // The optional Mean and InvStdDev outputs ([d0 .. d(axis-1), 1, .., 1]),
  // computed separately when something reads them.
  bool wantMean = node.hasOutput(1) && imp.isUsed(node.output(1));
  bool wantInvStd = node.hasOutput(2) && imp.isUsed(node.output(2));
  if (!wantMean && !wantInvStd)
    return llvm::Error::success();
  SymShape statShape(in.shape.begin(), in.shape.begin() + axis);
  statShape.resize(in.shape.size(), SymExpr(1));
  llvm::SmallVector<int64_t> axes;
  for (int64_t i = axis; i < in.rank(); ++i)
    axes.push_back(i);
  mlir::DenseI64ArrayAttr axesAttr = b.getDenseI64ArrayAttr(axes);
  mlir::Value mean =
      imp.emit<hg::ReduceMeanOp>(input, axesAttr, b.getBoolAttr(true));
  imp.setOutput(node, 1, imp.live(mean, statShape));
  if (wantInvStd) {
    mlir::Value centred = imp.emit<hg::SubOp>(input, mean);
    mlir::Value var = imp.emit<hg::ReduceMeanOp>(
        imp.emit<hg::MulOp>(centred, centred), axesAttr, b.getBoolAttr(true));
    mlir::Value invStd = imp.emit<hg::RsqrtOp>(imp.emit<hg::AddOp>(
        var, imp.scalarConstant(norm->epsilon, ElemKind::Float)));
    imp.setOutput(node, 2, imp.live(invStd, statShape));
  }
  return llvm::Error::success();
}

llvm::Error convertRmsNorm(GraphImporter &imp, const GenericNode &node) {
  auto norm = readNormOperands(imp, node);
  if (!norm)
    return norm.takeError();
  mlir::OpBuilder &b = imp.builder();
  mlir::Value r = imp.emit<hg::RmsNormOp>(
      imp.materialize(*norm->input), norm->scale,
      b.getF64FloatAttr(norm->epsilon), b.getI64IntegerAttr(norm->axis));
  imp.setOutput(node, 0, imp.live(r, norm->input->shape));
  return llvm::Error::success();
}

llvm::Error convertGelu(GraphImporter &imp, const GenericNode &node) {
  auto x = floatInput(imp, node, 0);
  if (!x)
    return x.takeError();
  std::string approximate;
  if (llvm::Error e = node.getString("approximate", "none", approximate))
    return e;
  if (approximate != "none" && approximate != "tanh")
    return node.error("unknown approximate '" + approximate + "'");
  mlir::Value r = imp.emit<hg::GeluOp>(
      imp.materialize(**x), imp.builder().getStringAttr(approximate));
  imp.setOutput(node, 0, imp.live(r, (*x)->shape));
  return llvm::Error::success();
}

} // namespace

void registerNnConversions(ConversionTable &t) {
  t.add("MatMul", {1, 9, 13}, convertMatMul);
  t.add("Gemm", {7, 9, 11, 13}, convertGemm);
  t.add("ReduceSum", {1, 11, 13}, convertReduce<hg::ReduceSumOp>);
  t.add("ReduceMean", {1, 11, 13, 18}, convertReduce<hg::ReduceMeanOp>);
  t.add("ReduceMax", {1, 11, 12, 13, 18, 20}, convertReduce<hg::ReduceMaxOp>);
  t.add("ReduceMin", {1, 11, 12, 13, 18, 20}, convertReduce<hg::ReduceMinOp>);
  t.add("ReduceProd", {1, 11, 13, 18}, convertReduce<hg::ReduceProdOp>);
  t.add("Softmax", {1, 11, 13}, convertSoftmax<false>);
  t.add("LogSoftmax", {1, 11, 13}, convertSoftmax<true>);
  t.add("LayerNormalization", 17, convertLayerNorm);
  t.add("RMSNormalization", 23, convertRmsNorm);
  t.add("Gelu", 20, convertGelu);
}

} // namespace hybridc::onnx
