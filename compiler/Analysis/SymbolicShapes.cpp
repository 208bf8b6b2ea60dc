// Symbolic shape propagation over hg ops (see SymbolicShapes.h); the rules
// themselves are the dialect's (HgSymbolicShapes.h).
#include "compiler/Analysis/SymbolicShapes.h"

#include "dialects/hg/IR/HgSymbolicShapes.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;
using hybrid::SymShape;

namespace hybridc {

const SymShape &SymbolicShapes::shapeOf(Value v) const {
  auto it = shapes_.find(v);
  assert(it != shapes_.end() && "value without a symbolic shape");
  return it->second;
}

std::string SymbolicShapes::str(const SymShape &shape) const {
  std::string r = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    r += (i ? ", " : "") + shape[i].str(symbols_);
  return r + "]";
}

FailureOr<SymbolicShapes> SymbolicShapes::compute(func::FuncOp func) {
  SymbolicShapes result;
  std::string why;
  for (BlockArgument arg : func.getArguments()) {
    FailureOr<SymShape> shape = hg::inferArgumentSymbolicShape(
        func, arg.getArgNumber(), result.symbols_, &why);
    if (failed(shape))
      return func.emitError() << why, failure();
    result.shapes_[arg] = std::move(*shape);
  }
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    llvm::SmallVector<SymShape> operands;
    for (Value v : op.getOperands())
      operands.push_back(result.shapeOf(v));
    FailureOr<llvm::SmallVector<SymShape>> shapes =
        hg::inferSymbolicShapes(&op, operands, result.symbols_, &why);
    if (failed(shapes))
      return op.emitOpError() << why, failure();
    for (auto [value, shape] : llvm::zip(op.getResults(), *shapes))
      result.shapes_[value] = std::move(shape);
  }
  return result;
}

} // namespace hybridc
