// Symbolic shape rules of the hg ops: each result dim as a polynomial
// (hybrid::SymExpr) in a function's dynamic dimensions. The one copy of the
// rules, used by the lowering (SymbolicShapes) and the fusion passes
// (ValueShapes).
#pragma once

#include "hybrid/SymExpr.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/LogicalResult.h"

#include <string>
#include <vector>

namespace hybridc::hg {

/// The shape of argument `argIndex` of `func`: static dims from its type,
/// dynamic ones parsed from their names in the argument's `hg.dims`
/// (`"batch"`, `"2*seq"`). Names not yet in `symbols` are appended, so
/// visiting the arguments in order numbers the symbols as they first appear.
/// Fails, saying why in `why` when given, when the argument is not a ranked
/// tensor or a dynamic dim has no well-formed name.
llvm::FailureOr<hybrid::SymShape>
inferArgumentSymbolicShape(mlir::func::FuncOp func, unsigned argIndex,
                           std::vector<std::string> &symbols,
                           std::string *why = nullptr);

/// The shape of the single result of `op` from its operands' shapes (one
/// per operand) and its attributes, whose symbolic sizes may name only
/// `symbols`. The result type's static dims are checked against the rule and
/// replace any polynomial it gives for them. Fails, saying why in `why` when
/// given, when the shape is not the same polynomial for every binding of the
/// symbols (e.g. a slice bound that may fall outside a symbolic dim) or `op`
/// is not an hg op with one result.
llvm::FailureOr<hybrid::SymShape> inferSymbolicShape(
    mlir::Operation *op, llvm::ArrayRef<hybrid::SymShape> operandShapes,
    const std::vector<std::string> &symbols, std::string *why = nullptr);

/// The shapes of every result of `op`, as inferSymbolicShape gives the
/// one of a single-result op; also for the ops with several results
/// (hg.sample_step, hg.adamw_update, hg.attention_grad, hg.layer_norm_grad).
llvm::FailureOr<llvm::SmallVector<hybrid::SymShape>> inferSymbolicShapes(
    mlir::Operation *op, llvm::ArrayRef<hybrid::SymShape> operandShapes,
    const std::vector<std::string> &symbols, std::string *why = nullptr);

} // namespace hybridc::hg
