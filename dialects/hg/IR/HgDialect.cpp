// The hg dialect: registration and constant materialisation.
#include "dialects/hg/IR/HgOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace hybridc::hg;

#include "dialects/hg/IR/HgDialect.cpp.inc"

void HgDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/hg/IR/HgOps.cpp.inc"
      >();
}

Operation *HgDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                          Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!elements || elements.getType() != type || !tensor)
    return nullptr;
  Type elt = tensor.getElementType();
  if (!elt.isF32() && !elt.isBF16() && !elt.isF16() &&
      !elt.isSignlessInteger(64) && !elt.isSignlessInteger(32) &&
      !elt.isSignlessInteger(1))
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}
