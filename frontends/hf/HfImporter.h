// HF config frontend: builds the hg graph of a HuggingFace decoder-only model
// directly from its config.json (weights are bound at load time).
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace hybridc::hf {

/// `dir` is a folder holding config.json (a path to the config.json file
/// itself is accepted too). Unknown model_type or a missing key is a
/// one-line llvm::Error naming it. Weights and activations take the
/// floating-point type `dtype` when given ("bfloat16", "bf16", ...), else
/// the config's torch_dtype (or dtype), else float32; logits are float32
/// either way.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importHfConfig(mlir::MLIRContext &context, llvm::StringRef dir,
               llvm::StringRef dtype = {});

/// The model_type values importHfConfig understands.
llvm::ArrayRef<llvm::StringRef> supportedModelTypes();

} // namespace hybridc::hf
