// Conversions of elementwise ONNX ops (arithmetic, comparison, logic, unary
// math, Where, Cast, Clip, simple activations) to hg, folding known values.
#include "frontends/onnx/ConversionTable.h"
#include "frontends/onnx/NodeOperands.h"

#include "dialects/hg/IR/HgOps.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

namespace hybridc::onnx {
namespace {

using hybrid::SymExpr;
using hybrid::SymShape;

//===----------------------------------------------------------------------===//
// Folding known tensors with broadcasting
//===----------------------------------------------------------------------===//

/// For each element of the broadcast result of `shapes` (all static), the
/// flat source index into each operand; nullopt when too large to fold.
std::optional<std::vector<std::vector<int64_t>>>
broadcastIndices(llvm::ArrayRef<const TensorValue *> operands,
                 std::vector<int64_t> &outDims) {
  size_t rank = 0;
  std::vector<std::vector<int64_t>> dims;
  for (const TensorValue *v : operands) {
    dims.push_back(*v->staticDims());
    rank = std::max(rank, dims.back().size());
  }
  outDims.assign(rank, 1);
  for (const auto &d : dims)
    for (size_t i = 0; i < d.size(); ++i) {
      int64_t &o = outDims[rank - d.size() + i];
      if (d[i] != 1) {
        if (o != 1 && o != d[i])
          return std::nullopt;
        o = d[i];
      }
    }
  int64_t n = 1;
  for (int64_t d : outDims)
    n *= d;
  if (n > kMaxFoldedElements)
    return std::nullopt;
  std::vector<std::vector<int64_t>> idx(operands.size());
  for (size_t k = 0; k < operands.size(); ++k) {
    const std::vector<int64_t> &d = dims[k];
    std::vector<int64_t> strides = stridesOf(d);
    size_t off = rank - d.size();
    idx[k].resize(n);
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t rem = flat, src = 0;
      for (size_t i = rank; i-- > 0;) {
        int64_t coord = rem % outDims[i];
        rem /= outDims[i];
        if (i >= off && d[i - off] != 1)
          src += coord * strides[i - off];
      }
      idx[k][flat] = src;
    }
  }
  return idx;
}

enum class Binary {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Max,
  Min,
  Mod,
  Equal,
  Less,
  LessEqual,
  Greater,
  GreaterEqual,
  And,
  Or,
  Xor
};

bool isComparison(Binary op) {
  return op == Binary::Equal || op == Binary::Less || op == Binary::LessEqual ||
         op == Binary::Greater || op == Binary::GreaterEqual;
}

/// a < b, a <= b, a == b on sizes: decided when the difference has a known
/// sign (every symbol is >= 1).
std::optional<bool> symLess(const SymExpr &a, const SymExpr &b) {
  if (SymExpr::knownGE(b - a, 1))
    return true;
  if (SymExpr::knownGE(a, b))
    return false;
  return std::nullopt;
}
std::optional<bool> symEqual(const SymExpr &a, const SymExpr &b) {
  if (a == b)
    return true;
  if (SymExpr::knownGE(a - b, 1) || SymExpr::knownGE(b - a, 1))
    return false;
  return std::nullopt;
}

std::optional<SymExpr> foldIntBinary(Binary op, const SymExpr &a,
                                     const SymExpr &b, bool fmod) {
  std::optional<int64_t> ca = a.constant(), cb = b.constant();
  auto boolean = [](std::optional<bool> v) -> std::optional<SymExpr> {
    if (!v)
      return std::nullopt;
    return SymExpr(*v ? 1 : 0);
  };
  switch (op) {
  case Binary::Add:
    return a + b;
  case Binary::Sub:
    return a - b;
  case Binary::Mul:
    return a * b;
  // Integer Div and Mod fold as the CPU kernels compute them: truncating,
  // INT64_MIN / -1 wraps to INT64_MIN and INT64_MIN % -1 is 0 (both trap in
  // C). A zero divisor is not folded, so the kernel reports it at run time.
  case Binary::Div:
    if (ca && cb && *cb == -1)
      return SymExpr(static_cast<int64_t>(0 - static_cast<uint64_t>(*ca)));
    if (ca && cb)
      return *cb ? std::optional<SymExpr>(SymExpr(*ca / *cb)) : std::nullopt;
    if (cb && *cb == -1)
      return SymExpr(0) - a;
    if (cb && *cb)
      return a.divExact(b); // exact, so the rounding mode does not matter
    return std::nullopt;
  case Binary::Mod: {
    if (!ca || !cb || !*cb)
      return std::nullopt;
    if (*cb == -1)
      return SymExpr(0);
    int64_t r = *ca % *cb;
    if (!fmod && r != 0 && ((r < 0) != (*cb < 0)))
      r += *cb;
    return SymExpr(r);
  }
  case Binary::Pow: {
    if (!ca || !cb || *cb < 0)
      return std::nullopt;
    // By squaring, modulo 2^64 as the CPU kernel computes it.
    uint64_t r = 1, base = static_cast<uint64_t>(*ca);
    for (uint64_t e = static_cast<uint64_t>(*cb); e; e >>= 1) {
      if (e & 1)
        r *= base;
      base *= base;
    }
    return SymExpr(static_cast<int64_t>(r));
  }
  case Binary::Max:
  case Binary::Min: {
    std::optional<bool> less = symLess(a, b);
    if (!less)
      return a == b ? std::optional<SymExpr>(a) : std::nullopt;
    return (*less == (op == Binary::Max)) ? b : a;
  }
  case Binary::Equal:
    return boolean(symEqual(a, b));
  case Binary::Less:
    return boolean(symLess(a, b));
  case Binary::LessEqual: {
    std::optional<bool> gt = symLess(b, a);
    return boolean(gt ? std::optional<bool>(!*gt) : std::nullopt);
  }
  case Binary::Greater:
    return boolean(symLess(b, a));
  case Binary::GreaterEqual: {
    std::optional<bool> lt = symLess(a, b);
    return boolean(lt ? std::optional<bool>(!*lt) : std::nullopt);
  }
  case Binary::And:
  case Binary::Or:
  case Binary::Xor: {
    if (!ca || !cb)
      return std::nullopt;
    bool x = *ca, y = *cb;
    bool r = op == Binary::And  ? (x && y)
             : op == Binary::Or ? (x || y)
                                : (x != y);
    return SymExpr(r ? 1 : 0);
  }
  }
  return std::nullopt;
}

/// f32 arithmetic on doubles holding f32 values. Comparisons return 0/1.
double foldFloatBinary(Binary op, double a, double b) {
  float x = static_cast<float>(a), y = static_cast<float>(b);
  switch (op) {
  case Binary::Add:
    return x + y;
  case Binary::Sub:
    return x - y;
  case Binary::Mul:
    return x * y;
  case Binary::Div:
    return x / y;
  case Binary::Pow:
    return std::pow(x, y);
  case Binary::Max:
    return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y);
  case Binary::Min:
    return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y);
  case Binary::Mod:
    return std::fmod(x, y);
  case Binary::Equal:
    return x == y;
  case Binary::Less:
    return x < y;
  case Binary::LessEqual:
    return x <= y;
  case Binary::Greater:
    return x > y;
  case Binary::GreaterEqual:
    return x >= y;
  case Binary::And:
  case Binary::Or:
  case Binary::Xor:
    break;
  }
  return NAN;
}

/// Folded truth values (0 or 1, as foldFloatBinary and foldFloatUnary
/// return them) as a known bool tensor.
TensorValue boolsOf(std::vector<int64_t> dims,
                    const std::vector<double> &truths) {
  std::vector<SymExpr> bools;
  for (double d : truths)
    bools.push_back(SymExpr(d != 0 ? 1 : 0));
  return TensorValue::makeInts(std::move(dims), std::move(bools),
                               ElemKind::Bool);
}

std::optional<TensorValue> foldBinary(Binary op, const TensorValue &a,
                                      const TensorValue &b, bool fmod) {
  if (a.isLive() || b.isLive() || a.kind != b.kind)
    return std::nullopt;
  std::vector<int64_t> dims;
  auto idx = broadcastIndices({&a, &b}, dims);
  if (!idx)
    return std::nullopt;
  size_t n = (*idx)[0].size();
  if (a.kind == ElemKind::Float) {
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i)
      out[i] =
          foldFloatBinary(op, a.floats[(*idx)[0][i]], b.floats[(*idx)[1][i]]);
    if (isComparison(op))
      return boolsOf(dims, out);
    return TensorValue::makeFloats(dims, std::move(out));
  }
  std::vector<SymExpr> out;
  for (size_t i = 0; i < n; ++i) {
    std::optional<SymExpr> r =
        foldIntBinary(op, a.ints[(*idx)[0][i]], b.ints[(*idx)[1][i]], fmod);
    if (!r)
      return std::nullopt;
    out.push_back(*r);
  }
  ElemKind kind = isComparison(op) ? ElemKind::Bool : a.kind;
  return TensorValue::makeInts(dims, std::move(out), kind);
}

mlir::Value emitBinary(GraphImporter &imp, Binary op, mlir::Value a,
                       mlir::Value b, bool fmod) {
  switch (op) {
  case Binary::Add:
    return imp.emit<hg::AddOp>(a, b);
  case Binary::Sub:
    return imp.emit<hg::SubOp>(a, b);
  case Binary::Mul:
    return imp.emit<hg::MulOp>(a, b);
  case Binary::Div:
    return imp.emit<hg::DivOp>(a, b);
  case Binary::Pow:
    return imp.emit<hg::PowOp>(a, b);
  case Binary::Max:
    return imp.emit<hg::MaxOp>(a, b);
  case Binary::Min:
    return imp.emit<hg::MinOp>(a, b);
  case Binary::Mod:
    return imp.emit<hg::ModOp>(a, b, imp.builder().getBoolAttr(fmod));
  case Binary::Equal:
    return imp.emit<hg::EqualOp>(a, b);
  case Binary::Less:
    return imp.emit<hg::LessOp>(a, b);
  case Binary::LessEqual:
    return imp.emit<hg::LessEqualOp>(a, b);
  case Binary::Greater:
    return imp.emit<hg::GreaterOp>(a, b);
  case Binary::GreaterEqual:
    return imp.emit<hg::GreaterEqualOp>(a, b);
  case Binary::And:
    return imp.emit<hg::AndOp>(a, b);
  case Binary::Or:
    return imp.emit<hg::OrOp>(a, b);
  case Binary::Xor:
    return imp.emit<hg::XorOp>(a, b);
  }
  return {};
}

/// Folds or emits `op` on two values (ONNX broadcasting).
llvm::Expected<TensorValue> applyBinary(GraphImporter &imp,
                                        const GenericNode &node, Binary op,
                                        TensorValue a, TensorValue b,
                                        bool fmod = false) {
  if (op == Binary::Pow && a.kind != b.kind)
    b = imp.convert(b, a.kind); // Pow's exponent may have its own type
  if (a.kind != b.kind)
    return node.error(std::string("operands have different element types (") +
                      elemKindName(a.kind) + ", " + elemKindName(b.kind) + ")");
  bool logical = op == Binary::And || op == Binary::Or || op == Binary::Xor;
  if (logical != (a.kind == ElemKind::Bool))
    return node.error(std::string("unsupported element type ") +
                      elemKindName(a.kind));
  if (op == Binary::Mod && a.kind == ElemKind::Float && !fmod)
    return node.error("Mod of floating-point values requires fmod = 1");
  if (std::optional<TensorValue> folded = foldBinary(op, a, b, fmod))
    return std::move(*folded);
  auto shape = imp.broadcast(node, a.shape, b.shape);
  if (!shape)
    return shape.takeError();
  mlir::Value lhs = imp.materialize(a), rhs = imp.materialize(b);
  return imp.live(emitBinary(imp, op, lhs, rhs, fmod), std::move(*shape));
}

template <Binary Op>
llvm::Error convertBinary(GraphImporter &imp, const GenericNode &node) {
  auto a = imp.input(node, 0);
  if (!a)
    return a.takeError();
  auto b = imp.input(node, 1);
  if (!b)
    return b.takeError();
  int64_t fmod = 0;
  if (Op == Binary::Mod)
    if (llvm::Error e = node.getInt("fmod", 0, fmod))
      return e;
  auto r = applyBinary(imp, node, Op, **a, **b, fmod != 0);
  if (!r)
    return r.takeError();
  imp.setOutput(node, 0, std::move(*r));
  return llvm::Error::success();
}

/// Max / Min / Sum over any number of inputs.
template <Binary Op>
llvm::Error convertVariadic(GraphImporter &imp, const GenericNode &node) {
  auto first = imp.input(node, 0);
  if (!first)
    return first.takeError();
  TensorValue acc = **first;
  for (size_t i = 1; i < node.numInputs(); ++i) {
    auto next = imp.input(node, i);
    if (!next)
      return next.takeError();
    auto r = applyBinary(imp, node, Op, acc, **next);
    if (!r)
      return r.takeError();
    acc = std::move(*r);
  }
  imp.setOutput(node, 0, std::move(acc));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

enum class Unary {
  Neg,
  Abs,
  Sign,
  Exp,
  Log,
  Sqrt,
  Reciprocal,
  Tanh,
  Sigmoid,
  Relu,
  Erf,
  Sin,
  Cos,
  Floor,
  Ceil,
  Not,
  IsNaN
};

std::optional<SymExpr> foldIntUnary(Unary op, const SymExpr &e) {
  std::optional<bool> positive, negative;
  if (SymExpr::knownGE(e, 1))
    positive = true, negative = false;
  else if (SymExpr::knownGE(SymExpr(-1), e))
    positive = false, negative = true;
  else if (e == SymExpr(0))
    positive = false, negative = false;
  switch (op) {
  case Unary::Neg:
    return e * SymExpr(-1);
  case Unary::Abs:
    if (!positive)
      return std::nullopt;
    return *negative ? e * SymExpr(-1) : e;
  case Unary::Sign:
    if (!positive)
      return std::nullopt;
    return SymExpr(*positive ? 1 : *negative ? -1 : 0);
  case Unary::Relu:
    if (!positive)
      return std::nullopt;
    return *negative ? SymExpr(0) : e;
  case Unary::Not:
    if (auto c = e.constant())
      return SymExpr(*c ? 0 : 1);
    return std::nullopt;
  case Unary::Floor:
  case Unary::Ceil:
    return e;
  default:
    return std::nullopt;
  }
}

double foldFloatUnary(Unary op, double v) {
  float x = static_cast<float>(v);
  switch (op) {
  case Unary::Neg:
    return -x;
  case Unary::Abs:
    return std::fabs(x);
  case Unary::Sign:
    return x > 0 ? 1.0f : x < 0 ? -1.0f : x;
  case Unary::Exp:
    return std::exp(x);
  case Unary::Log:
    return std::log(x);
  case Unary::Sqrt:
    return std::sqrt(x);
  case Unary::Reciprocal:
    return 1.0f / x;
  case Unary::Tanh:
    return std::tanh(x);
  case Unary::Sigmoid:
    return 1.0f / (1.0f + std::exp(-x));
  case Unary::Relu:
    return x > 0 ? x : 0.0f;
  case Unary::Erf:
    return std::erf(x);
  case Unary::Sin:
    return std::sin(x);
  case Unary::Cos:
    return std::cos(x);
  case Unary::Floor:
    return std::floor(x);
  case Unary::Ceil:
    return std::ceil(x);
  case Unary::IsNaN:
    return std::isnan(x);
  case Unary::Not:
    break;
  }
  return NAN;
}

mlir::Value emitUnary(GraphImporter &imp, Unary op, mlir::Value x) {
  switch (op) {
  case Unary::Neg:
    return imp.emit<hg::NegOp>(x);
  case Unary::Abs:
    return imp.emit<hg::AbsOp>(x);
  case Unary::Sign:
    return imp.emit<hg::SignOp>(x);
  case Unary::Exp:
    return imp.emit<hg::ExpOp>(x);
  case Unary::Log:
    return imp.emit<hg::LogOp>(x);
  case Unary::Sqrt:
    return imp.emit<hg::SqrtOp>(x);
  case Unary::Reciprocal:
    return imp.emit<hg::ReciprocalOp>(x);
  case Unary::Tanh:
    return imp.emit<hg::TanhOp>(x);
  case Unary::Sigmoid:
    return imp.emit<hg::SigmoidOp>(x);
  case Unary::Relu:
    return imp.emit<hg::ReluOp>(x);
  case Unary::Erf:
    return imp.emit<hg::ErfOp>(x);
  case Unary::Sin:
    return imp.emit<hg::SinOp>(x);
  case Unary::Cos:
    return imp.emit<hg::CosOp>(x);
  case Unary::Floor:
    return imp.emit<hg::FloorOp>(x);
  case Unary::Ceil:
    return imp.emit<hg::CeilOp>(x);
  case Unary::Not:
    return imp.emit<hg::NotOp>(x);
  case Unary::IsNaN:
    return imp.emit<hg::IsNanOp>(x);
  }
  return {};
}

/// Which element kinds each unary op accepts (ONNX type constraints,
/// restricted to hg's kinds).
bool acceptsKind(Unary op, ElemKind kind) {
  switch (op) {
  case Unary::Not:
    return kind == ElemKind::Bool;
  case Unary::Neg:
  case Unary::Abs:
  case Unary::Sign:
  case Unary::Relu:
    return kind != ElemKind::Bool;
  default:
    return kind == ElemKind::Float;
  }
}

/// `op` on a known value; std::nullopt when an integer result depends on
/// the symbolic sizes.
std::optional<TensorValue> foldUnary(Unary op, const TensorValue &v) {
  std::vector<int64_t> dims = *v.staticDims();
  if (v.kind == ElemKind::Float) {
    std::vector<double> out;
    for (double f : v.floats)
      out.push_back(foldFloatUnary(op, f));
    if (op == Unary::IsNaN)
      return boolsOf(dims, out);
    return TensorValue::makeFloats(dims, std::move(out));
  }
  std::vector<SymExpr> out;
  for (const SymExpr &e : v.ints) {
    std::optional<SymExpr> r = foldIntUnary(op, e);
    if (!r)
      return std::nullopt;
    out.push_back(*r);
  }
  return TensorValue::makeInts(dims, std::move(out), v.kind);
}

template <Unary Op>
llvm::Error convertUnary(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  const TensorValue &v = **x;
  if (!acceptsKind(Op, v.kind))
    return node.error(std::string("unsupported element type ") +
                      elemKindName(v.kind));
  if (v.isKnown()) {
    if (std::optional<TensorValue> folded = foldUnary(Op, v)) {
      imp.setOutput(node, 0, std::move(*folded));
      return llvm::Error::success();
    }
  }
  imp.setOutput(node, 0,
                imp.live(emitUnary(imp, Op, imp.materialize(v)), v.shape));
  return llvm::Error::success();
}

llvm::Error convertIsInf(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  if ((*x)->kind != ElemKind::Float)
    return node.error("IsInf needs a floating-point input");
  int64_t detectPos, detectNeg;
  if (llvm::Error e = node.getInt("detect_positive", 1, detectPos))
    return e;
  if (llvm::Error e = node.getInt("detect_negative", 1, detectNeg))
    return e;
  const TensorValue &v = **x;
  if (!detectPos && !detectNeg) {
    TensorValue never = TensorValue::makeInts({}, {SymExpr(0)}, ElemKind::Bool);
    imp.setOutput(node, 0, imp.broadcastTo(never, v.shape));
    return llvm::Error::success();
  }
  mlir::Value in = imp.materialize(v);
  mlir::Value inf = imp.emit<hg::IsInfOp>(in);
  if (detectPos && detectNeg) {
    imp.setOutput(node, 0, imp.live(inf, v.shape));
    return llvm::Error::success();
  }
  mlir::Value zero = imp.scalarConstant(0, ElemKind::Float);
  mlir::Value sign = detectPos ? imp.emit<hg::GreaterOp>(in, zero)
                               : imp.emit<hg::LessOp>(in, zero);
  imp.setOutput(node, 0, imp.live(imp.emit<hg::AndOp>(inf, sign), v.shape));
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Where, Cast, Clip, Identity, activations
//===----------------------------------------------------------------------===//

llvm::Error convertWhere(GraphImporter &imp, const GenericNode &node) {
  auto c = imp.input(node, 0);
  if (!c)
    return c.takeError();
  auto x = imp.input(node, 1);
  if (!x)
    return x.takeError();
  auto y = imp.input(node, 2);
  if (!y)
    return y.takeError();
  const TensorValue &cond = **c, &a = **x, &b = **y;
  if (cond.kind != ElemKind::Bool)
    return node.error("condition must be a bool tensor");
  if (a.kind != b.kind)
    return node.error("branches have different element types");
  if (cond.isKnown() && a.isKnown() && b.isKnown()) {
    std::vector<int64_t> dims;
    if (auto idx = broadcastIndices({&cond, &a, &b}, dims)) {
      size_t n = (*idx)[0].size();
      bool folded = true;
      TensorValue r;
      r.kind = a.kind;
      r.shape = toSymShape(dims);
      for (size_t i = 0; i < n && folded; ++i) {
        std::optional<int64_t> pick = cond.ints[(*idx)[0][i]].constant();
        folded = pick.has_value();
        if (!folded)
          break;
        if (*pick)
          r.appendElement(a, (*idx)[1][i]);
        else
          r.appendElement(b, (*idx)[2][i]);
      }
      if (folded) {
        imp.setOutput(node, 0, std::move(r));
        return llvm::Error::success();
      }
    }
  }
  auto ab = imp.broadcast(node, a.shape, b.shape);
  if (!ab)
    return ab.takeError();
  auto shape = imp.broadcast(node, cond.shape, *ab);
  if (!shape)
    return shape.takeError();
  mlir::Value r = imp.emit<hg::SelectOp>(
      imp.materialize(cond), imp.materialize(a), imp.materialize(b));
  imp.setOutput(node, 0, imp.live(r, std::move(*shape)));
  return llvm::Error::success();
}

/// The hg kind of a Cast target; int32 keeps its values in i64 (only
/// overflow behaviour differs, which exported graphs never rely on).
llvm::Expected<ElemKind> castTarget(const GenericNode &node, int64_t to) {
  switch (to) {
  case ::onnx::TensorProto::FLOAT:
    return ElemKind::Float;
  case ::onnx::TensorProto::INT64:
  case ::onnx::TensorProto::INT32:
    return ElemKind::Int;
  case ::onnx::TensorProto::BOOL:
    return ElemKind::Bool;
  default:
    return node.error("cast to " + onnxTypeName(static_cast<int32_t>(to)) +
                      " is not supported (hg computes in f32, i64 and bool)");
  }
}

llvm::Error convertCast(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  int64_t to;
  if (llvm::Error e = node.getInt("to", 0, to))
    return e;
  if (!node.hasAttr("to"))
    return node.error("missing attribute 'to'");
  auto kind = castTarget(node, to);
  if (!kind)
    return kind.takeError();
  TensorValue r = imp.convert(**x, *kind);
  // Known integers cast to int32 wrap like ONNX does.
  if (to == ::onnx::TensorProto::INT32 && r.isKnown())
    for (SymExpr &e : r.ints)
      if (std::optional<int64_t> c = e.constant())
        e = SymExpr(static_cast<int64_t>(static_cast<int32_t>(*c)));
  imp.setOutput(node, 0, std::move(r));
  return llvm::Error::success();
}

llvm::Error convertCastLike(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  auto like = imp.input(node, 1);
  if (!like)
    return like.takeError();
  imp.setOutput(node, 0, imp.convert(**x, (*like)->kind));
  return llvm::Error::success();
}

llvm::Error convertIdentity(GraphImporter &imp, const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  imp.setOutput(node, 0, **x);
  return llvm::Error::success();
}

llvm::Error convertClip(GraphImporter &imp, const GenericNode &node) {
  auto x = numericInput(imp, node, 0, "Clip");
  if (!x)
    return x.takeError();
  const TensorValue &v = **x;
  std::optional<double> lo, hi;
  TensorValue result = v;
  if (node.opset() < 11) {
    if (node.hasAttr("min")) {
      double m;
      if (llvm::Error e = node.getFloat("min", 0, m))
        return e;
      lo = m;
    }
    if (node.hasAttr("max")) {
      double m;
      if (llvm::Error e = node.getFloat("max", 0, m))
        return e;
      hi = m;
    }
  } else {
    // Bounds are inputs; constant ones become attributes, run-time ones
    // become max / min ops.
    for (size_t i : {1, 2}) {
      auto bound = imp.optionalInput(node, i);
      if (!bound)
        return bound.takeError();
      if (!*bound)
        continue;
      if ((*bound)->isKnown() && (*bound)->numElements() == 1) {
        if (std::optional<double> d = (*bound)->elementAsDouble(0)) {
          (i == 1 ? lo : hi) = *d;
          continue;
        }
      }
      auto r = applyBinary(imp, node, i == 1 ? Binary::Max : Binary::Min,
                           result, **bound);
      if (!r)
        return r.takeError();
      result = std::move(*r);
    }
  }
  if (!lo && !hi) {
    imp.setOutput(node, 0, std::move(result));
    return llvm::Error::success();
  }
  mlir::OpBuilder &b = imp.builder();
  mlir::Value r = imp.emit<hg::ClipOp>(
      imp.materialize(result), lo ? b.getF64FloatAttr(*lo) : mlir::FloatAttr(),
      hi ? b.getF64FloatAttr(*hi) : mlir::FloatAttr());
  imp.setOutput(node, 0, imp.live(r, result.shape));
  return llvm::Error::success();
}

/// LeakyRelu: x < 0 ? alpha * x : x.
llvm::Expected<mlir::Value>
buildLeakyRelu(GraphImporter &imp, const GenericNode &node, mlir::Value x) {
  double alpha;
  if (llvm::Error e = node.getFloat("alpha", 0.01, alpha))
    return std::move(e);
  mlir::Value zero = imp.scalarConstant(0, ElemKind::Float);
  mlir::Value neg = imp.emit<hg::LessOp>(x, zero);
  mlir::Value scaled =
      imp.emit<hg::MulOp>(x, imp.scalarConstant(alpha, ElemKind::Float));
  return imp.emit<hg::SelectOp>(neg, scaled, x);
}

/// Elu: x < 0 ? alpha * (exp(x) - 1) : x.
llvm::Expected<mlir::Value> buildElu(GraphImporter &imp,
                                     const GenericNode &node, mlir::Value x) {
  double alpha;
  if (llvm::Error e = node.getFloat("alpha", 1.0, alpha))
    return std::move(e);
  mlir::Value zero = imp.scalarConstant(0, ElemKind::Float);
  mlir::Value one = imp.scalarConstant(1, ElemKind::Float);
  mlir::Value neg = imp.emit<hg::LessOp>(x, zero);
  mlir::Value em1 = imp.emit<hg::SubOp>(imp.emit<hg::ExpOp>(x), one);
  mlir::Value scaled =
      imp.emit<hg::MulOp>(em1, imp.scalarConstant(alpha, ElemKind::Float));
  return imp.emit<hg::SelectOp>(neg, scaled, x);
}

/// HardSigmoid: clip(alpha * x + beta, 0, 1).
llvm::Expected<mlir::Value>
buildHardSigmoid(GraphImporter &imp, const GenericNode &node, mlir::Value x) {
  double alpha, beta;
  if (llvm::Error e = node.getFloat("alpha", 0.2, alpha))
    return std::move(e);
  if (llvm::Error e = node.getFloat("beta", 0.5, beta))
    return std::move(e);
  mlir::Value y =
      imp.emit<hg::MulOp>(x, imp.scalarConstant(alpha, ElemKind::Float));
  y = imp.emit<hg::AddOp>(y, imp.scalarConstant(beta, ElemKind::Float));
  mlir::OpBuilder &b = imp.builder();
  return imp.emit<hg::ClipOp>(y, b.getF64FloatAttr(0.0),
                              b.getF64FloatAttr(1.0));
}

/// Float activations hg has no op for are built from other ops: `Build`
/// maps the materialised input 0 to the result, of the input's shape.
using ActivationBuildFn = llvm::Expected<mlir::Value> (*)(GraphImporter &,
                                                          const GenericNode &,
                                                          mlir::Value);

template <ActivationBuildFn Build>
llvm::Error convertBuiltActivation(GraphImporter &imp,
                                   const GenericNode &node) {
  auto x = imp.input(node, 0);
  if (!x)
    return x.takeError();
  if ((*x)->kind != ElemKind::Float)
    return node.error("needs a floating-point input");
  const TensorValue &v = **x;
  auto r = Build(imp, node, imp.materialize(v));
  if (!r)
    return r.takeError();
  imp.setOutput(node, 0, imp.live(*r, v.shape));
  return llvm::Error::success();
}

} // namespace

void registerElementwiseConversions(ConversionTable &t) {
  // Multidirectional broadcasting arrived in opset 7; older versions (with
  // axis/broadcast attributes) are not claimed.
  t.add("Add", {7, 13, 14}, convertBinary<Binary::Add>);
  t.add("Sub", {7, 13, 14}, convertBinary<Binary::Sub>);
  t.add("Mul", {7, 13, 14}, convertBinary<Binary::Mul>);
  t.add("Div", {7, 13, 14}, convertBinary<Binary::Div>);
  t.add("Pow", {7, 12, 13, 15}, convertBinary<Binary::Pow>);
  t.add("Mod", {10, 13}, convertBinary<Binary::Mod>);
  t.add("Max", {8, 12, 13}, convertVariadic<Binary::Max>);
  t.add("Min", {8, 12, 13}, convertVariadic<Binary::Min>);
  t.add("Sum", {8, 13}, convertVariadic<Binary::Add>);
  t.add("Equal", {7, 11, 13, 19}, convertBinary<Binary::Equal>);
  t.add("Less", {7, 9, 13}, convertBinary<Binary::Less>);
  t.add("LessOrEqual", {12, 16}, convertBinary<Binary::LessEqual>);
  t.add("Greater", {7, 9, 13}, convertBinary<Binary::Greater>);
  t.add("GreaterOrEqual", {12, 16}, convertBinary<Binary::GreaterEqual>);
  t.add("And", 7, convertBinary<Binary::And>);
  t.add("Or", 7, convertBinary<Binary::Or>);
  t.add("Xor", 7, convertBinary<Binary::Xor>);

  t.add("Neg", {6, 13}, convertUnary<Unary::Neg>);
  t.add("Abs", {6, 13}, convertUnary<Unary::Abs>);
  t.add("Sign", {9, 13}, convertUnary<Unary::Sign>);
  t.add("Exp", {6, 13}, convertUnary<Unary::Exp>);
  t.add("Log", {6, 13}, convertUnary<Unary::Log>);
  t.add("Sqrt", {6, 13}, convertUnary<Unary::Sqrt>);
  t.add("Reciprocal", {6, 13}, convertUnary<Unary::Reciprocal>);
  t.add("Tanh", {6, 13}, convertUnary<Unary::Tanh>);
  t.add("Sigmoid", {6, 13}, convertUnary<Unary::Sigmoid>);
  t.add("Relu", {6, 13, 14}, convertUnary<Unary::Relu>);
  t.add("Erf", {9, 13}, convertUnary<Unary::Erf>);
  t.add("Sin", 7, convertUnary<Unary::Sin>);
  t.add("Cos", 7, convertUnary<Unary::Cos>);
  t.add("Floor", {6, 13}, convertUnary<Unary::Floor>);
  t.add("Ceil", {6, 13}, convertUnary<Unary::Ceil>);
  t.add("Not", 1, convertUnary<Unary::Not>);
  t.add("IsNaN", {9, 13, 20}, convertUnary<Unary::IsNaN>);
  t.add("IsInf", {10, 20}, convertIsInf);

  t.add("Where", {9, 16}, convertWhere);
  t.add("Cast", {6, 9, 13, 19, 21}, convertCast);
  t.add("CastLike", {15, 19, 21}, convertCastLike);
  t.add("Clip", {6, 11, 12, 13}, convertClip);
  t.add("Identity", {1, 13, 14, 16, 19, 21}, convertIdentity);
  t.add("LeakyRelu", {6, 16}, convertBuiltActivation<buildLeakyRelu>);
  t.add("Elu", 6, convertBuiltActivation<buildElu>);
  t.add("HardSigmoid", 6, convertBuiltActivation<buildHardSigmoid>);
}

} // namespace hybridc::onnx
