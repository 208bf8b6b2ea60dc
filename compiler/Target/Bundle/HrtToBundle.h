// The last phase: planned hrt executables -> the bundle (hybrid::BundleDesc,
// written to a .hyb file by hybrid_bundle). The command list holds exactly
// what the hrt module says: typed ops, buffers with symbolic shapes and
// offsets, ports, parameter and state tables, streams and events.
#pragma once

#include "hybrid/BundleDesc.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace hybridc {

/// Serialises every hrt.executable of `module` (each must be planned by
/// hrt-plan-memory). Parameters are shared by name across executables, as
/// are state buffers; a name used with two dtypes or shapes is an error.
/// Module attributes hg.model, hg.source, hg.tied, hg.checkpoint_prefixes
/// and hg.checkpoint_extras travel too.
llvm::Expected<hybrid::BundleDesc> translateHrtToBundle(mlir::ModuleOp module);

} // namespace hybridc
