// What the ONNX importer knows about one ONNX value: a live hg tensor, or a
// tensor whose elements are known at import time (constants and shape
// arithmetic, whose integers may be symbolic sizes like `batch*seq`).
#pragma once

#include "hybrid/SymExpr.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hybridc::onnx {

/// Element kinds the importer tracks. ONNX integer types all import as i64
/// and floating-point constants as f32 (hg computes in f32, i64 and i1).
enum class ElemKind { Float, Int, Bool };

const char *elemKindName(ElemKind kind);

/// One ONNX value. Either `live` (an SSA value of the function being built)
/// or known, with elements in `ints` (Int and Bool, bools as 0/1) or
/// `floats` (Float, rounded to f32). `shape` is set in both cases; a known
/// value's shape is static. Value type; copies are cheap for the small
/// known tensors the importer folds.
struct TensorValue {
  ElemKind kind = ElemKind::Float;
  hybrid::SymShape shape;
  mlir::Value live;
  std::vector<hybrid::SymExpr> ints;
  std::vector<double> floats;

  static TensorValue makeLive(mlir::Value value, hybrid::SymShape shape,
                              ElemKind kind);
  static TensorValue makeInts(std::vector<int64_t> dims,
                              std::vector<hybrid::SymExpr> elements,
                              ElemKind kind = ElemKind::Int);
  static TensorValue makeFloats(std::vector<int64_t> dims,
                                std::vector<double> elements);

  bool isLive() const { return static_cast<bool>(live); }
  bool isKnown() const { return !isLive(); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// Static dims of a known value (or of a live one with a static shape).
  std::optional<std::vector<int64_t>> staticDims() const;
  /// Element count of a known value.
  int64_t numElements() const;
  /// Whether every element of a known value is an integer constant.
  bool isConstantInts() const;
  /// The element at flat index `i` of a known value as a double (Float, or
  /// a constant Int/Bool).
  std::optional<double> elementAsDouble(int64_t i) const;
  /// Appends element `i` of the known value `from`, of this value's kind.
  void appendElement(const TensorValue &from, int64_t i);
};

/// Row-major strides of static dims.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims);

/// The known value of static `shape` whose element at coordinates c is
/// element `offset` + sum(c[d] * strides[d]) of the known value `in`: how
/// folding a transpose, slice or broadcast reads its input.
TensorValue stridedCopy(const TensorValue &in, hybrid::SymShape shape,
                        int64_t offset, llvm::ArrayRef<int64_t> strides);

/// Product of symbolic dims.
hybrid::SymExpr productOf(const hybrid::SymShape &shape, size_t begin,
                          size_t end);
inline hybrid::SymExpr productOf(const hybrid::SymShape &shape) {
  return productOf(shape, 0, shape.size());
}

/// Static dims as symbolic ones.
hybrid::SymShape toSymShape(const std::vector<int64_t> &dims);

/// Rounds to the nearest f32, as hg computes in f32.
inline double roundToF32(double v) {
  return static_cast<double>(static_cast<float>(v));
}

} // namespace hybridc::onnx
