// ValueShapes: on-demand symbolic shapes of hg values, by the dialect's
// rules (HgSymbolicShapes.h).
#include "dialects/hg/Transforms/ValueShapes.h"

#include "dialects/hg/IR/HgSymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using hybrid::SymExpr;
using hybrid::SymShape;

namespace hybridc::hg {

ValueShapes::ValueShapes(Operation *anchor) {
  auto func = dyn_cast<func::FuncOp>(anchor);
  if (!func)
    func = anchor->getParentOfType<func::FuncOp>();
  if (!func)
    return;
  // All arguments up front, so the symbols are numbered as the lowering
  // numbers them, whatever order shapes are asked for in.
  for (BlockArgument arg : func.getArguments())
    (void)get(arg);
}

Attribute ValueShapes::dimAttr(MLIRContext *context, const SymExpr &e) const {
  if (std::optional<int64_t> c = e.constant())
    return IntegerAttr::get(IntegerType::get(context, 64), *c);
  return StringAttr::get(context, str(e));
}

ArrayAttr ValueShapes::shapeAttr(MLIRContext *context,
                                 const SymShape &shape) const {
  SmallVector<Attribute> dims;
  for (const SymExpr &d : shape)
    dims.push_back(dimAttr(context, d));
  return ArrayAttr::get(context, dims);
}

void ValueShapes::forget(Operation *op) {
  for (Value result : op->getResults())
    cache_.erase(result);
}

std::optional<SymExpr> ValueShapes::dim(Value value, int64_t d) {
  std::optional<SymShape> s = get(value);
  if (!s)
    return std::nullopt;
  int64_t rank = static_cast<int64_t>(s->size());
  if (d < 0)
    d += rank;
  if (d < 0 || d >= rank)
    return std::nullopt;
  return (*s)[d];
}

std::optional<SymShape> ValueShapes::get(Value value) {
  // Post-order over the defining ops, without recursion: residual streams
  // make def chains as long as the model.
  SmallVector<Value> stack = {value};
  while (!stack.empty()) {
    Value cur = stack.back();
    if (cache_.count(cur)) {
      stack.pop_back();
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(cur.getType());
    Operation *op = cur.getDefiningOp();
    bool ready = true;
    if (type && !type.hasStaticShape() && op)
      for (Value operand : op->getOperands())
        if (!cache_.count(operand)) {
          stack.push_back(operand);
          ready = false;
        }
    if (!ready)
      continue;
    cache_[cur] = compute(cur);
    stack.pop_back();
  }
  return cache_.lookup(value);
}

std::optional<SymShape> ValueShapes::compute(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return std::nullopt;
  if (type.hasStaticShape())
    return SymShape(type.getShape().begin(), type.getShape().end());
  FailureOr<SymShape> shape = failure();
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (func && arg.getOwner()->isEntryBlock())
      shape = inferArgumentSymbolicShape(func, arg.getArgNumber(), symbols_);
  } else {
    SmallVector<SymShape> operands;
    for (Value operand : value.getDefiningOp()->getOperands()) {
      std::optional<SymShape> s = cache_.lookup(operand);
      if (!s)
        return std::nullopt;
      operands.push_back(std::move(*s));
    }
    FailureOr<SmallVector<SymShape>> shapes =
        inferSymbolicShapes(value.getDefiningOp(), operands, symbols_);
    if (succeeded(shapes))
      shape = std::move((*shapes)[cast<OpResult>(value).getResultNumber()]);
  }
  if (failed(shape))
    return std::nullopt;
  return std::move(*shape);
}

} // namespace hybridc::hg
