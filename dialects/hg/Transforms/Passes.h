// Declarations and registration of the hg passes (Passes.td), and the
// pipelines built from them.
#pragma once

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include <memory>

namespace hybridc::hg {

#define GEN_PASS_DECL
#include "dialects/hg/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "dialects/hg/Transforms/Passes.h.inc"

/// Cleans up and fuses a freshly imported module (ONNX or HF): canonicalize
/// and CSE, the fusion passes (norms, activations, rotary, attention,
/// linear), then CSE and canonicalize again. `pm` runs on the module.
void buildOnnxCleanupPipeline(mlir::OpPassManager &pm);

} // namespace hybridc::hg
