// Operand predicates shared by the hg fusion patterns.
#include "dialects/hg/Transforms/OperandMatchers.h"

#include "dialects/hg/IR/HgOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;

namespace hybridc::hg {

std::optional<double> getScalarConstant(Value value) {
  auto constant = value.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || llvm::any_of(type.getShape(), [](int64_t d) { return d != 1; }))
    return std::nullopt;
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!splat)
    return std::nullopt;
  Type et = splat.getElementType();
  if (isa<FloatType>(et))
    return splat.getSplatValue<APFloat>().convertToDouble();
  if (et.isInteger(1))
    return splat.getSplatValue<bool>() ? 1.0 : 0.0;
  if (et.isInteger(64))
    return static_cast<double>(splat.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

double roundingTolerance(Type elementType, double relTol) {
  // A constant stored in a narrow float type carries that type's rounding:
  // half an ulp relative (2^-8 for bf16, 2^-11 for f16) on top of relTol.
  if (auto f = dyn_cast<FloatType>(elementType))
    return relTol + std::ldexp(1.0, -static_cast<int>(f.getFPMantissaWidth()));
  return relTol;
}

bool isScalarNear(Value value, double expected, double relTol) {
  std::optional<double> c = getScalarConstant(value);
  if (!c)
    return false;
  Type et = cast<ShapedType>(value.getType()).getElementType();
  double tol =
      roundingTolerance(et, relTol) * std::max(std::fabs(expected), 1e-30);
  return std::fabs(*c - expected) <= tol;
}

bool isParameter(Value value) {
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg)
    return false;
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return func && func.getArgAttr(arg.getArgNumber(), "hg.param");
}

bool isSameValue(Value a, Value b) {
  if (a == b)
    return true;
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || !isPure(x) || x->getNumRegions() || y->getNumRegions())
    return false;
  if (cast<OpResult>(a).getResultNumber() !=
      cast<OpResult>(b).getResultNumber())
    return false;
  return OperationEquivalence::isEquivalentTo(
      x, y, OperationEquivalence::IgnoreLocations);
}

bool isShapePreservingScalar(Value scalar, Value value) {
  auto s = dyn_cast<RankedTensorType>(scalar.getType());
  auto v = dyn_cast<RankedTensorType>(value.getType());
  return s && v && s.getRank() <= v.getRank() &&
         llvm::all_of(s.getShape(), [](int64_t d) { return d == 1; });
}

std::string describeOp(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(l))
        return name.getName().str();
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return op->getName().getStringRef().str();
}

bool hasFloatElements(Value value) {
  auto type = dyn_cast<ShapedType>(value.getType());
  return type && isa<FloatType>(type.getElementType());
}

} // namespace hybridc::hg
