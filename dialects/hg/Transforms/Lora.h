// What hg-lora records on the module (`hg.lora`) and the names it gives,
// read back by hg-lora-fused-generation and the bundle's serialiser.
#pragma once

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace hybridc::hg {

/// The module attribute hg-lora sets: a dictionary {rank, alpha, targets,
/// only_optimize, adapters: [{module, weight, lora_A, lora_B,
/// fan_in_fan_out}]}.
constexpr llvm::StringLiteral kLoraAttr = "hg.lora";
/// A parameter argument hg-autodiff gives no gradient (a frozen base
/// weight under only-optimize).
constexpr llvm::StringLiteral kFrozenAttr = "hg.frozen";

struct LoraAdapter {
  std::string module;       ///< "model.layers.0.self_attn.q_proj"
  std::string weight;       ///< "<module>.weight"
  std::string loraA;        ///< "base_model.model.<module>.lora_A.weight"
  std::string loraB;        ///< "base_model.model.<module>.lora_B.weight"
  bool fanInFanOut = false; ///< W is [in, out] (GPT-2's Conv1D)
};

struct LoraConfig {
  int64_t rank = 0;
  double alpha = 0;
  std::vector<std::string> targets;
  bool onlyOptimize = false;
  std::vector<LoraAdapter> adapters;
};

/// The module's `hg.lora`, or nullopt when it has none or it is malformed
/// (then `error`, when given, says why).
std::optional<LoraConfig> readLoraConfig(mlir::ModuleOp module,
                                         std::string *error = nullptr);

/// Whether a module path has a numeric component (a numbered block:
/// model.layers.3.mlp.up_proj): hg-lora's default targets.
bool isNumberedBlockPath(llvm::StringRef module);
/// PEFT's list semantics of target_modules: the module path is the target
/// or ends in "." + target.
bool matchesTarget(llvm::StringRef module, llvm::StringRef target);
/// "base_model.model.<module>.<which>.weight" (which: lora_A or lora_B), as
/// PEFT's get_peft_model_state_dict names an adapter's tensors.
std::string loraParamName(llvm::StringRef module, llvm::StringRef which);

} // namespace hybridc::hg
