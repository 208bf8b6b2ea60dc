// NodeOperands: operand reads shared by the ONNX conversions.
#include "frontends/onnx/NodeOperands.h"

namespace hybridc::onnx {

llvm::Expected<int64_t> normalizeAxis(const GenericNode &node, int64_t axis,
                                      int64_t rank) {
  if (axis < -rank || axis >= rank)
    return node.error("axis " + llvm::Twine(axis) +
                      " is out of range for rank " + llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

llvm::Expected<int64_t> readAxis(const GenericNode &node, int64_t defaultAxis,
                                 int64_t rank) {
  int64_t axis;
  if (llvm::Error e = node.getInt("axis", defaultAxis, axis))
    return std::move(e);
  return normalizeAxis(node, axis, rank);
}

llvm::Expected<const TensorValue *>
floatInput(GraphImporter &imp, const GenericNode &node, size_t i) {
  auto v = imp.input(node, i);
  if (!v)
    return v.takeError();
  if ((*v)->kind != ElemKind::Float)
    return node.error("input '" + node.input(i) +
                      "' must be a float tensor, not " +
                      elemKindName((*v)->kind));
  return *v;
}

llvm::Expected<const TensorValue *> numericInput(GraphImporter &imp,
                                                 const GenericNode &node,
                                                 size_t i,
                                                 llvm::StringRef what) {
  auto v = imp.input(node, i);
  if (!v)
    return v.takeError();
  if ((*v)->kind == ElemKind::Bool)
    return node.error(what + " of a bool tensor is not supported");
  return *v;
}

llvm::Expected<std::vector<int64_t>>
axesOf(GraphImporter &imp, const GenericNode &node, int64_t inputSince) {
  std::vector<int64_t> axes;
  if (node.opset() < inputSince) {
    if (llvm::Error e = node.getInts("axes", axes))
      return std::move(e);
    return axes;
  }
  if (!node.hasInput(1))
    return axes;
  auto known = imp.knownInts(node, 1, "axes");
  if (!known)
    return known.takeError();
  for (const hybrid::SymExpr &a : *known) {
    std::optional<int64_t> c = a.constant();
    if (!c)
      return node.error("axes must be constants");
    axes.push_back(*c);
  }
  return axes;
}

} // namespace hybridc::onnx
