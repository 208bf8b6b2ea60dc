// HF config frontend: builds the hg graph of a HuggingFace decoder-only model
// directly from its config.json (weights are bound at load time).
#pragma once

#include "frontends/hf/HfConfig.h"

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
/// either way. `head` chooses what @forward ends in: the LM head (logits,
/// HF's causal-LM parameter names) or a value head (see
/// DecoderBuilder::finishWithValueHead: values and scores, the base
/// model's parameter names plus v_head.weight).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importHfConfig(mlir::MLIRContext &context, llvm::StringRef dir,
               llvm::StringRef dtype = {},
               ModelHead head = ModelHead::CausalLm);

/// The model_type values importHfConfig understands.
llvm::ArrayRef<llvm::StringRef> supportedModelTypes();

} // namespace hybridc::hf
