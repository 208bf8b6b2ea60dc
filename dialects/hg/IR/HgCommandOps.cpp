// The hg ops generated with their commands from runtime/base/ops/ops.py
// (HgCommands.td): the type inference and verifier of the "same" shape rule
// (every operand and the result of one shape), which the generated ops call.
#include "dialects/hg/IR/HgOps.h"

using namespace mlir;

namespace hybridc::hg {
namespace {

/// The result's element type under the "same" rule.
enum class ResultElement { F32, Bool, FirstOperand };

/// The shape every operand has, static where any of them says: fails
/// (reported at `location`) when two static dims differ or ranks differ.
FailureOr<SmallVector<int64_t>> commonShape(std::optional<Location> location,
                                            StringRef name,
                                            ValueRange operands) {
  SmallVector<int64_t> shape;
  bool first = true;
  for (auto [i, v] : llvm::enumerate(operands)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t) {
      if (location)
        emitError(*location) << "'" << name << "' op expects operand " << i
                             << " to be a ranked tensor";
      return failure();
    }
    if (first) {
      shape.assign(t.getShape().begin(), t.getShape().end());
      first = false;
      continue;
    }
    bool same = t.getRank() == static_cast<int64_t>(shape.size());
    for (int64_t d = 0; same && d < t.getRank(); ++d) {
      int64_t &s = shape[d];
      const int64_t o = t.getDimSize(d);
      if (ShapedType::isDynamic(s))
        s = o;
      else if (!ShapedType::isDynamic(o) && o != s)
        same = false;
    }
    if (!same) {
      if (location)
        emitError(*location)
            << "'" << name << "' op expects every operand of one shape, got "
            << formatShape(shape) << " and " << formatShape(t.getShape())
            << " (operand " << i << ")";
      return failure();
    }
  }
  return shape;
}

LogicalResult inferSameShape(MLIRContext *context,
                             std::optional<Location> location, StringRef name,
                             ValueRange operands, ResultElement element,
                             SmallVectorImpl<Type> &inferred) {
  FailureOr<SmallVector<int64_t>> shape = commonShape(location, name, operands);
  if (failed(shape))
    return failure();
  Type type =
      element == ResultElement::F32 ? Float32Type::get(context)
      : element == ResultElement::Bool
          ? IntegerType::get(context, 1)
          : cast<RankedTensorType>(operands.front().getType()).getElementType();
  inferred.push_back(RankedTensorType::get(*shape, type));
  return success();
}

/// The declared result has the operands' shape (the inference checked the
/// operands; the result type only has to agree with them).
LogicalResult verifySameShape(Operation *op) {
  SmallVector<Type> inferred;
  if (failed(inferSameShape(op->getContext(), op->getLoc(),
                            op->getName().getStringRef(), op->getOperands(),
                            ResultElement::FirstOperand, inferred)))
    return failure();
  for (Type result : op->getResultTypes()) {
    auto declared = cast<RankedTensorType>(result);
    auto want = cast<RankedTensorType>(inferred.front())
                    .clone(declared.getElementType());
    if (!areCompatibleTensorTypes(TypeRange{want}, TypeRange{declared}))
      return op->emitOpError()
             << "result " << declared << " must have the operands' shape "
             << formatShape(want.getShape());
  }
  return success();
}

} // namespace

#include "dialects/hg/IR/HgCommands.cpp.inc"

} // namespace hybridc::hg
