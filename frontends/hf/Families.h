// One importer per HuggingFace model family: reads the family's
// hyper-parameters from the config and builds its @forward graph.
#pragma once

#include "frontends/hf/HfConfig.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

namespace hybridc::hf {

using ImportResult = llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>;

ImportResult importBloom(mlir::MLIRContext &context, HfConfig &config);
ImportResult importGpt2(mlir::MLIRContext &context, HfConfig &config);
ImportResult importGptNeoX(mlir::MLIRContext &context, HfConfig &config);
/// llama, mistral and qwen2 (told apart by config.modelType()).
ImportResult importLlama(mlir::MLIRContext &context, HfConfig &config);
ImportResult importOpt(mlir::MLIRContext &context, HfConfig &config);
ImportResult importPhi3(mlir::MLIRContext &context, HfConfig &config);

} // namespace hybridc::hf
