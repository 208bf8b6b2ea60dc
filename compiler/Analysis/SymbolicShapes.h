// Symbolic shapes of every tensor in an hg function: each dimension as a
// polynomial (hybrid::SymExpr) in the function's dynamic dimensions, which
// the memory plan and the command list are written in.
#pragma once

#include "hybrid/SymExpr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace hybridc {

/// Computes and holds the symbolic shape of each value of one function.
/// Symbols are numbered in the order they first appear in the arguments'
/// `hg.dims` attributes.
class SymbolicShapes {
public:
  /// Fails, with an error diagnostic at the op, when a shape cannot be
  /// expressed as a polynomial in the symbols (e.g. a slice whose bound may
  /// exceed a symbolic dimension).
  static mlir::FailureOr<SymbolicShapes> compute(mlir::func::FuncOp func);

  const hybrid::SymShape &shapeOf(mlir::Value v) const;
  const std::vector<std::string> &symbols() const { return symbols_; }
  std::string str(const hybrid::SymShape &shape) const;

private:
  std::vector<std::string> symbols_;
  llvm::DenseMap<mlir::Value, hybrid::SymShape> shapes_;
};

} // namespace hybridc
