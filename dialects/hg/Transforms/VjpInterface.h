// Reverse-mode autodiff's per-op rules (VjpInterface.td) and the context
// they build in: the builder at the end of the function being
// differentiated, the symbolic shapes of its values, and the helpers every
// rule needs (scalars, shapes, undoing a broadcast).
#pragma once

#include "dialects/hg/IR/HgOps.h"
#include "dialects/hg/Transforms/ValueShapes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/DenseSet.h"

namespace hybridc::hg {

class VjpContext {
public:
  VjpContext(mlir::OpBuilder &builder, ValueShapes &shapes)
      : builder_(builder), shapes_(shapes) {}

  mlir::OpBuilder &builder() { return builder_; }
  /// Where new ops are placed (the op being differentiated's loc).
  mlir::Location loc() const { return loc_; }
  void setLoc(mlir::Location loc) { loc_ = loc; }

  /// A rank-0 constant `value` of `elementType`.
  mlir::Value scalar(double value, mlir::Type elementType);
  /// `value`'s shape as hg.reshape / hg.broadcast_to take it; null (and
  /// an error at the current op) when it is not known symbolically.
  mlir::ArrayAttr shapeOf(mlir::Value value);
  /// [product of the leading dims, last dim] of `value`'s shape.
  mlir::ArrayAttr rowsOf(mlir::Value value);
  /// `value`'s symbolic shape (an error at the current op when unknown).
  std::optional<hybrid::SymShape> symShape(mlir::Value value);
  /// The shape attribute of a symbolic shape.
  mlir::ArrayAttr attr(const hybrid::SymShape &shape);
  /// Zeros of `elementType` and `shape`.
  mlir::Value zeros(mlir::Type elementType, const hybrid::SymShape &shape);
  /// The gradient `grad` of a value `like` was broadcast into, summed back
  /// to `like`'s shape (over the leading dims `like` lacks and the dims
  /// where `like` has size 1); `grad` itself when the shapes agree.
  mlir::Value unbroadcast(mlir::Value grad, mlir::Value like);
  /// `grad` (reduced over `axes`, keepdims or not) broadcast back to
  /// `like`'s shape.
  mlir::Value broadcastBack(mlir::Value grad, mlir::Value like,
                            llvm::ArrayRef<int64_t> axes, bool keepdims);

  /// Whether `value` depends on a parameter, so that its gradient is used
  /// (hg-autodiff's activity analysis marks the values it finds).
  bool varies(mlir::Value value) const { return varied_.contains(value); }
  void markVaried(mlir::Value value) { varied_.insert(value); }

  /// Builds `Op` with its inferred result type.
  template <typename Op, typename... Args> mlir::Value make(Args &&...args) {
    return builder_.create<Op>(loc_, std::forward<Args>(args)...)->getResult(0);
  }

private:
  mlir::OpBuilder &builder_;
  ValueShapes &shapes_;
  llvm::DenseSet<mlir::Value> varied_;
  mlir::Location loc_ = mlir::UnknownLoc::get(builder_.getContext());
};

/// Attaches every hg op's rule (VjpRules.cpp) to the dialect when it loads.
void registerVjpRules(mlir::DialectRegistry &registry);

} // namespace hybridc::hg

#include "dialects/hg/Transforms/VjpInterface.h.inc"
