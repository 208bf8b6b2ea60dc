// What every hg -> hrt lowering pattern sees: the executable being built for
// one hg function, the buffer of each hg value, and the set of patterns.
#pragma once

#include "compiler/Analysis/SymbolicShapes.h"
#include "dialects/hrt/IR/HrtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Support/TypeID.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <cstddef>
#include <functional>
#include <type_traits>

namespace hybridc {

class ExecutableLowering;

/// The lowering of each hg op type: a function that appends the op's
/// commands to the executable, and optionally the rule saying when the op
/// may write a result over one of its operands (a state or parameter
/// updated in place). Built once per pass; one entry per op type.
class HgToHrtPatterns {
public:
  /// Appends the commands computing the op's results; every operand has a
  /// buffer already. Errors are emitted at the op.
  using LowerFn = std::function<mlir::LogicalResult(mlir::Operation *,
                                                    ExecutableLowering &)>;
  /// Whether the op stays correct when `result` is written into the buffer
  /// of its operand `input`.
  using InPlaceFn = std::function<bool(mlir::Operation *, mlir::Value input,
                                       mlir::Value result)>;

  /// Lowers every OpT with `lower(OpT, ExecutableLowering &)`; OpT writes
  /// a result over an operand where `writesOverItsInput(OpT, input,
  /// result)` allows it (never without one).
  template <typename OpT, typename Lower, typename InPlace = std::nullptr_t>
  void add(Lower lower, InPlace writesOverItsInput = nullptr) {
    InPlaceFn inPlace;
    if constexpr (!std::is_null_pointer_v<InPlace>)
      inPlace = [writesOverItsInput](mlir::Operation *op, mlir::Value input,
                                     mlir::Value result) {
        return writesOverItsInput(mlir::cast<OpT>(op), input, result);
      };
    insert(
        mlir::TypeID::get<OpT>(),
        [lower](mlir::Operation *op, ExecutableLowering &lowering) {
          return lower(mlir::cast<OpT>(op), lowering);
        },
        std::move(inPlace));
  }

  /// The lowering of `op`'s type; null when no pattern takes it.
  const LowerFn *lowering(mlir::Operation *op) const;
  /// Whether `op` may write `result` over its operand `input` (false for an
  /// op no pattern takes).
  bool writesOverItsInput(mlir::Operation *op, mlir::Value input,
                          mlir::Value result) const;

private:
  struct Pattern {
    LowerFn lower;
    InPlaceFn writesOverItsInput;
  };
  void insert(mlir::TypeID op, LowerFn lower, InPlaceFn writesOverItsInput);

  llvm::DenseMap<mlir::TypeID, Pattern> patterns_;
};

/// The families of patterns, one file each; adding an op's lowering means
/// adding it to one of them (or a new family here and in
/// populateHgToHrtPatterns).
void populateAttentionPatterns(HgToHrtPatterns &patterns);
/// The hg ops that are a command's graph form (ops.py's `hg`): generated.
void populateCommandPatterns(HgToHrtPatterns &patterns);
void populateDataMovementPatterns(HgToHrtPatterns &patterns);
void populateElementwisePatterns(HgToHrtPatterns &patterns);
void populateGenerationPatterns(HgToHrtPatterns &patterns);
void populateLinearPatterns(HgToHrtPatterns &patterns);
void populateNormPatterns(HgToHrtPatterns &patterns);
void populateReductionPatterns(HgToHrtPatterns &patterns);
void populateTrainingPatterns(HgToHrtPatterns &patterns);

/// Every family above.
void populateHgToHrtPatterns(HgToHrtPatterns &patterns);

/// The in-place rule of kernels that read each element's (or row's) old
/// value before writing the new one: `result` may take the buffer of
/// `input` when `olds` pairs it with the operand holding its old value and
/// `input` is no other operand of `op`.
bool writesOverOldValue(
    mlir::Operation *op, mlir::Value input, mlir::Value result,
    llvm::ArrayRef<std::pair<mlir::Value, mlir::OpOperand *>> olds);

/// Builds the executable of one hg function: its ports, parameters and
/// states from the function's signature, then one pattern per op in order.
class ExecutableLowering {
public:
  /// paramsInPlace: see ConvertHgToHrt's params-in-place option.
  ExecutableLowering(mlir::func::FuncOp func, const SymbolicShapes &shapes,
                     const HgToHrtPatterns &patterns, bool paramsInPlace)
      : func_(func), shapes_(shapes), patterns_(patterns), b_(func),
        paramsInPlace_(paramsInPlace) {}

  mlir::LogicalResult run();
  /// Null until run() has created it.
  hrt::ExecutableOp executable() { return exe_; }

  // For the patterns.

  /// Inserts at the end of the executable.
  mlir::OpBuilder &builder() { return b_; }
  /// The buffer holding `v`; null for an absent optional operand.
  mlir::Value buffer(mlir::Value v) const {
    return v ? buffers_.lookup(v) : mlir::Value();
  }
  /// The buffer `result` is written to (its state, parameter or output port,
  /// else a new hrt.alloc), from now on buffer(result).
  mlir::Value resultBuffer(mlir::Value result);
  /// Appends the command CommandOp writing `op`'s one result into
  /// resultBuffer(result); `args` are the command's operands after it.
  template <typename CommandOp, typename... Args>
  mlir::LogicalResult command(mlir::Operation *op, Args &&...args) {
    b_.create<CommandOp>(op->getLoc(), resultBuffer(op->getResult(0)),
                         std::forward<Args>(args)...);
    return mlir::success();
  }
  /// Makes `buffer` hold `result` where no command computes it (a constant,
  /// a view).
  void bind(mlir::Value result, mlir::Value buffer) {
    buffers_[result] = buffer;
  }
  /// The buffer type `v` needs: its element type and symbolic shape.
  hrt::BufferType typeOf(mlir::Value v) const;

private:
  mlir::LogicalResult setSymbolLimits();
  mlir::LogicalResult lowerArguments();
  mlir::LogicalResult collectStateResults(mlir::func::ReturnOp ret);
  bool computesInPlace(llvm::ArrayRef<mlir::BlockArgument> olds, mlir::Value v);
  bool writesBack(unsigned i);
  mlir::LogicalResult createOutputs(mlir::func::ReturnOp ret);
  void copyToOutputs(mlir::func::ReturnOp ret);
  mlir::LogicalResult lowerOp(mlir::Operation *op);

  mlir::func::FuncOp func_;
  const SymbolicShapes &shapes_;
  const HgToHrtPatterns &patterns_;
  mlir::OpBuilder b_;
  hrt::ExecutableOp exe_;
  llvm::DenseMap<mlir::Value, mlir::Value> buffers_; // hg value -> buffer
  llvm::DenseMap<mlir::Value, mlir::Value> direct_;  // returned -> its port
  llvm::StringMap<mlir::Value> params_;
  llvm::SmallVector<mlir::Value> outputs_;     // per result; null: written back
  llvm::StringMap<mlir::Value> writtenStates_; // state name -> new value
  llvm::StringMap<mlir::Value> writtenParams_; // parameter name -> new value
  llvm::StringMap<mlir::Value> stateBuffers_;  // state name -> hrt.state
  // Values computed straight into the state or parameter they replace.
  llvm::DenseMap<mlir::Value, llvm::StringRef> inPlaceState_;
  llvm::DenseMap<mlir::Value, llvm::StringRef> inPlaceParam_;
  bool paramsInPlace_ = true;
};

} // namespace hybridc
