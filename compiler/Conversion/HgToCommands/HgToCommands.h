// Lowering of an hg function to a runtime executable: a static command list
// (one kernel call per remaining hg op; reshapes become aliases) with a
// compile-time memory plan in symbolic sizes.
#pragma once

#include "hybrid/BundleDesc.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Error.h"

namespace hybridc {

/// Appends the executable for `func` to `bundle` (named after the function),
/// adding its parameters (arguments tagged hg.param) to the bundle's
/// parameter table when not already there, and its constants.
llvm::Error lowerToExecutable(mlir::func::FuncOp func,
                              hybrid::BundleDesc &bundle);

} // namespace hybridc
