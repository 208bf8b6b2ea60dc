// Public header of the hg dialect: the dialect class, every op, and the
// shape helpers the ops' type inference is built from.
#pragma once

#include "dialects/hg/IR/HgDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>
#include <string>

namespace hybridc::hg {

/// Whether inferred and declared result types agree: same element types and
/// ranks, and dims equal where both are static.
bool areCompatibleTensorTypes(mlir::TypeRange lhs, mlir::TypeRange rhs);

namespace OpTrait {
/// Marks ops whose declared result types need only be compatible with the
/// inferred ones; the op class gets isCompatibleReturnTypes from ODS.
template <typename ConcreteType>
class CompatibleReturnTypes
    : public mlir::OpTrait::TraitBase<ConcreteType, CompatibleReturnTypes> {};
} // namespace OpTrait

} // namespace hybridc::hg

#define GET_OP_CLASSES
#include "dialects/hg/IR/HgOps.h.inc"

namespace hybridc::hg {

/// The dimension one entry of a `shape` attribute stands for: an integer
/// (or a string that is a constant polynomial, "64", "2*32") gives that size,
/// a symbolic polynomial ("batch*seq") gives ShapedType::kDynamic. Returns
/// std::nullopt for anything else (negative sizes, malformed text, other
/// attribute kinds); `why`, when given, then says what is wrong.
std::optional<int64_t> getShapeEntryDim(mlir::Attribute entry,
                                        std::string *why = nullptr);

/// A `shape` attribute for static sizes (one I64 entry per size).
mlir::ArrayAttr getStaticShapeAttr(mlir::Builder &b,
                                   llvm::ArrayRef<int64_t> sizes);

/// NumPy broadcast of two shapes (dynamic dims as ShapedType::kDynamic):
/// aligned from the right, a 1 takes the other side, a dynamic dim against a
/// static one (not 1) takes the static one. std::nullopt when two static
/// dims differ and neither is 1.
std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// Normalises an axis in [-rank, rank) to [0, rank); std::nullopt when out
/// of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Where an ONNX-style slice of a static dim of size `dim` begins and how
/// many elements it takes: negative start/end count from the end, values
/// clamp to the dim, INT64_MAX / INT64_MIN mean "to the end". `step` != 0.
struct SliceBounds {
  int64_t start;
  int64_t length;
};
SliceBounds resolveSliceBounds(int64_t dim, int64_t start, int64_t end,
                               int64_t step);

/// "[2, ?, 4]": a shape for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

} // namespace hybridc::hg
