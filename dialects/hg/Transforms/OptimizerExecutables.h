// The training executables every optimizer pass (hg-adamw, hg-sgd) builds
// from @forward_loss_grad, and the precision plan they carry: f32 master
// copies of low-precision parameters and fp16 dynamic loss scaling.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace hybridc::hg {

/// The state whose value the gradients of @forward_loss_grad are scaled by
/// when it reads it (hg-autodiff's `loss-scale`): fp16 loss scaling.
constexpr llvm::StringLiteral kLossScaleState = "opt.loss_scale";

/// Builds one function's new arguments (inputs, states), the ops before its
/// return and its results.
class StepBuilder {
public:
  explicit StepBuilder(mlir::func::FuncOp f);

  mlir::OpBuilder &b() { return b_; }
  mlir::Location loc() const { return loc_; }
  mlir::Type f32() { return attrs_.getF32Type(); }
  mlir::RankedTensorType scalarType() {
    return mlir::RankedTensorType::get({1}, f32());
  }

  /// An f32 [1] input `name` with default `dflt`.
  mlir::Value input(llvm::StringRef name, double dflt);
  /// State `name` of `type` (zeros before its first write): the function's
  /// argument of that name, added when it has none.
  mlir::Value state(llvm::StringRef name, mlir::Type type);
  /// An f32 [1] constant.
  mlir::Value constant(double v);
  /// `v` as f32 (a copy of its type with f32 elements).
  mlir::Value toF32(mlir::Value v);

  /// The step count after this step, t (1 on the first step), from state
  /// `opt.step`, added on first use.
  mlir::Value stepCount();
  /// Writes the step count back (when stepCount() was used).
  void writeStepCount();

  /// From here on, writeBack() keeps the old value wherever `skip` (i1
  /// [1]) holds: a skipped step changes no parameter and no state it
  /// writes back, and the function stays one static graph.
  void skipWritesOn(mlir::Value skip) { skip_ = skip; }
  /// Writes `v` back to parameter (kind "hg.param") or state ("hg.state")
  /// `name`, unless the step is skipped (skipWritesOn).
  void writeBack(llvm::StringRef kind, llvm::StringRef name, mlir::Value v);
  /// A result tagged `kind` = `name`: an output ("hg.name") or a
  /// write-back that happens whether or not the step is skipped.
  void result(mlir::Value v, llvm::StringRef kind, llvm::StringRef name);
  /// Keeps only the results `keep` says yes to (before new ones).
  void keepResults(llvm::function_ref<bool(unsigned)> keep);
  /// Replaces result `i`'s value (its type may change).
  void replaceResult(unsigned i, mlir::Value v) { results_[i] = v; }

  /// Replaces the return by one of the collected results.
  void finish();

private:
  mlir::Value argument(mlir::Type type,
                       llvm::ArrayRef<mlir::NamedAttribute> attrs);
  /// The argument tagged `kind` = `name`, or null.
  mlir::Value argumentTagged(llvm::StringRef kind, llvm::StringRef name);

  mlir::func::FuncOp f_;
  mlir::Block &body_;
  mlir::func::ReturnOp ret_;
  mlir::OpBuilder b_;
  mlir::Builder attrs_;
  mlir::Location loc_;
  llvm::SmallVector<mlir::Value> results_;
  llvm::SmallVector<mlir::DictionaryAttr> resultAttrs_;
  mlir::Value skip_, stepCount_;
};

/// An optimizer's update of one parameter from its gradient, in f32.
class UpdateRule {
public:
  virtual ~UpdateRule() = default;
  /// Adds the rule's hyperparameter inputs to the function `s` builds and
  /// computes what every parameter shares (once per function).
  virtual void begin(StepBuilder &s) = 0;
  /// The new value of a parameter whose value is `p` and gradient `g`
  /// (both f32); the rule's own states (named after checkpoint name
  /// `name`) go through s.writeBack().
  virtual mlir::Value update(StepBuilder &s, mlir::Value p, mlir::Value g,
                             llvm::StringRef name) = 0;
  /// update() of a parameter of type `working` (bf16 or f16) kept through
  /// its f32 master `master`, from gradient `g` of f32 or of a
  /// half-precision type: the new master and the new working parameter
  /// (the master rounded to `working`). By default casts around update()
  /// (the gradient to f32, the new master to `working`); a rule whose
  /// fused op reads and writes those types itself overrides this.
  virtual std::pair<mlir::Value, mlir::Value>
  updateThroughMaster(StepBuilder &s, mlir::Value master, mlir::Value g,
                      mlir::Type working, llvm::StringRef name);
};

/// Adds @step, @forward_backward, @train_step and, when the plan needs
/// one, @init_optimizer over @forward_loss_grad, updating with `rule`, and
/// @backward over @forward_vjp when there is one; without
/// @forward_loss_grad (a value model: no loss of its own), @step,
/// @init_optimizer and @backward over @forward_vjp. Errors name `pass`.
/// See hg-adamw's description (Passes.td).
mlir::LogicalResult buildOptimizerExecutables(mlir::ModuleOp module,
                                              llvm::StringRef pass,
                                              UpdateRule &rule);

} // namespace hybridc::hg
