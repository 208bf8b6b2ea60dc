// Small predicates the hg fusion patterns match operands with: scalar
// constants, parameters, structurally equal values.
#pragma once

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include <optional>
#include <string>

namespace hybridc::hg {

/// The value of a splat hg.constant that acts as a scalar under
/// broadcasting (rank 0, or every dim 1), else std::nullopt.
std::optional<double> getScalarConstant(mlir::Value value);

/// Whether the scalar constant `value` equals `expected` to a relative
/// tolerance (exporters round constants like sqrt(2/pi) to f32).
bool isScalarNear(mlir::Value value, double expected, double relTol = 1e-5);

/// `relTol` widened by the rounding of a constant of `elementType` (half an
/// ulp of bf16 or f16), so that patterns match narrow-float graphs as they
/// match f32 ones.
double roundingTolerance(mlir::Type elementType, double relTol);

/// Whether `value` is an argument of the function tagged `hg.param`.
bool isParameter(mlir::Value value);

/// Whether `a` and `b` compute the same tensor: the same SSA value, or
/// results of equivalent pure ops on the same operands (exports repeat
/// subexpressions that CSE has not merged yet).
bool isSameValue(mlir::Value a, mlir::Value b);

/// Whether `scalar` (of any rank) broadcasts against `value` without
/// changing its shape: every dim of `scalar` is 1 and its rank is not
/// larger.
bool isShapePreservingScalar(mlir::Value scalar, mlir::Value value);

/// The name a diagnostic should show for `op`: the ONNX node name carried by
/// its NameLoc when there is one, else the op name.
std::string describeOp(mlir::Operation *op);

/// Whether `value` is a tensor of floating-point elements (f32, bf16, f16):
/// the fusions apply to every float dtype alike.
bool hasFloatElements(mlir::Value value);

} // namespace hybridc::hg
