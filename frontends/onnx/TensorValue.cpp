// TensorValue: constructors and small queries of imported ONNX values.
#include "frontends/onnx/TensorValue.h"

#include <cassert>

namespace hybridc::onnx {

using hybrid::SymExpr;
using hybrid::SymShape;

const char *elemKindName(ElemKind kind) {
  switch (kind) {
  case ElemKind::Float:
    return "f32";
  case ElemKind::Int:
    return "i64";
  case ElemKind::Bool:
    return "bool";
  }
  return "?";
}

SymShape toSymShape(const std::vector<int64_t> &dims) {
  return SymShape(dims.begin(), dims.end());
}

SymExpr productOf(const SymShape &shape, size_t begin, size_t end) {
  SymExpr p(1);
  for (size_t i = begin; i < end; ++i)
    p = p * shape[i];
  return p;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

TensorValue TensorValue::makeLive(mlir::Value value, SymShape shape,
                                  ElemKind kind) {
  TensorValue v;
  v.kind = kind;
  v.shape = std::move(shape);
  v.live = value;
  return v;
}

TensorValue TensorValue::makeInts(std::vector<int64_t> dims,
                                  std::vector<SymExpr> elements,
                                  ElemKind kind) {
  assert(kind != ElemKind::Float);
  TensorValue v;
  v.kind = kind;
  v.shape = toSymShape(dims);
  v.ints = std::move(elements);
  assert(static_cast<int64_t>(v.ints.size()) == v.numElements());
  return v;
}

TensorValue TensorValue::makeFloats(std::vector<int64_t> dims,
                                    std::vector<double> elements) {
  TensorValue v;
  v.kind = ElemKind::Float;
  v.shape = toSymShape(dims);
  v.floats = std::move(elements);
  assert(static_cast<int64_t>(v.floats.size()) == v.numElements());
  return v;
}

std::optional<std::vector<int64_t>> TensorValue::staticDims() const {
  std::vector<int64_t> dims;
  for (const SymExpr &d : shape) {
    std::optional<int64_t> c = d.constant();
    if (!c)
      return std::nullopt;
    dims.push_back(*c);
  }
  return dims;
}

int64_t TensorValue::numElements() const {
  int64_t n = 1;
  for (const SymExpr &d : shape)
    n *= d.constant().value_or(0);
  return n;
}

bool TensorValue::isConstantInts() const {
  for (const SymExpr &e : ints)
    if (!e.isConstant())
      return false;
  return true;
}

std::optional<double> TensorValue::elementAsDouble(int64_t i) const {
  if (kind == ElemKind::Float)
    return floats[i];
  if (std::optional<int64_t> c = ints[i].constant())
    return static_cast<double>(*c);
  return std::nullopt;
}

void TensorValue::appendElement(const TensorValue &from, int64_t i) {
  assert(from.kind == kind && from.isKnown());
  if (kind == ElemKind::Float)
    floats.push_back(from.floats[i]);
  else
    ints.push_back(from.ints[i]);
}

TensorValue stridedCopy(const TensorValue &in, SymShape shape, int64_t offset,
                        llvm::ArrayRef<int64_t> strides) {
  TensorValue r;
  r.kind = in.kind;
  r.shape = std::move(shape);
  std::vector<int64_t> dims = *r.staticDims();
  assert(strides.size() == dims.size());
  for (int64_t flat = 0, n = r.numElements(); flat < n; ++flat) {
    int64_t rem = flat, src = offset;
    for (size_t d = dims.size(); d-- > 0;) {
      src += (rem % dims[d]) * strides[d];
      rem /= dims[d];
    }
    r.appendElement(in, src);
  }
  return r;
}

} // namespace hybridc::onnx
