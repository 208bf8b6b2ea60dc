// Symbolic shapes of hg values, computed on demand for the preconditions of
// fusion patterns (is this dim the same size as that one?).
#pragma once

#include "hybrid/SymExpr.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"

#include <optional>
#include <string>
#include <vector>

namespace hybridc::hg {

/// Lazily derives each value's shape as polynomials in the symbols named by
/// the enclosing function's `hg.dims` argument attributes, by the dialect's
/// rules (HgSymbolicShapes.h), and caches them.
/// A value whose shape cannot be shown symbolically gets std::nullopt (the
/// caller then does not fuse). The cache is keyed by Value: while IR
/// changes, keep it valid with a ValueShapesListener (erased ops' values
/// may be reallocated). Rewrites preserve values, so shapes cached for
/// values that survive stay right.
class ValueShapes {
public:
  /// `anchor` is any op inside the function (or the function itself).
  explicit ValueShapes(mlir::Operation *anchor);

  std::optional<hybrid::SymShape> get(mlir::Value value);
  /// The size of dim `dim` (negative counts from the end).
  std::optional<hybrid::SymExpr> dim(mlir::Value value, int64_t dim);

  /// An I64 attribute for a constant size, else the polynomial's text.
  mlir::Attribute dimAttr(mlir::MLIRContext *context,
                          const hybrid::SymExpr &e) const;
  /// A shape attribute (as hg.reshape takes) for `shape`.
  mlir::ArrayAttr shapeAttr(mlir::MLIRContext *context,
                            const hybrid::SymShape &shape) const;
  std::string str(const hybrid::SymExpr &e) const { return e.str(symbols_); }
  /// The symbols shapes are polynomials in, numbered as the lowering does.
  const std::vector<std::string> &symbols() const { return symbols_; }

  /// Drops the cached shapes of `op`'s results.
  void forget(mlir::Operation *op);

private:
  std::optional<hybrid::SymShape> compute(mlir::Value value);

  std::vector<std::string> symbols_;
  llvm::DenseMap<mlir::Value, std::optional<hybrid::SymShape>> cache_;
};

/// Keeps a ValueShapes cache valid during a greedy rewrite (pass it as the
/// GreedyRewriteConfig listener).
class ValueShapesListener : public mlir::RewriterBase::Listener {
public:
  explicit ValueShapesListener(ValueShapes &shapes) : shapes_(shapes) {}
  void notifyOperationErased(mlir::Operation *op) override {
    shapes_.forget(op);
  }
  void notifyOperationModified(mlir::Operation *op) override {
    shapes_.forget(op);
  }

private:
  ValueShapes &shapes_;
};

} // namespace hybridc::hg
