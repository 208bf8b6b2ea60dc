// `hybridc compile`'s LoRA options: adapters on named linears with PEFT's
// names (--lora-dim, --lora-alpha, --lora-targets), trained alone
// (--only-optimize-lora) and applied fused or unfused in generation
// (Options.h).
#include "Options.h"

#include <initializer_list>

namespace hybridc::tool {
namespace {

cl::opt<Count>
    loraDim("lora-dim",
            cl::desc("LoRA adapters of rank R (PEFT's r, DeepSpeed-Chat's "
                     "lora_dim) on the targeted linears: parameters "
                     "base_model.model.<module>.lora_A.weight [R, in] and "
                     "lora_B.weight [out, R], y = x W^T + alpha/R x A^T B^T"),
            cl::value_desc("R"), Range{1, int64_t(1) << 20, "a rank from 1"},
            inCompile);
cl::opt<double> loraAlpha(
    "lora-alpha",
    cl::desc("--lora-dim: PEFT's lora_alpha; the adapters' path is scaled "
             "by alpha / R (default 1: DeepSpeed-Chat's lora_scaling = 1, "
             "scale 1 / R)"),
    cl::value_desc("A"), cl::init(1.0), inCompile);
cl::list<std::string> loraTargets(
    "lora-targets",
    cl::desc("--lora-dim: the modules to adapt, PEFT's target_modules: a "
             "module whose path is NAME or ends in .NAME (default: every "
             "linear of a numbered block, the decoder layers)"),
    cl::value_desc("NAME,NAME"), cl::CommaSeparated, inCompile);
cl::opt<bool> onlyOptimizeLora(
    "only-optimize-lora",
    cl::desc("--lora-dim with --train: train the adapters only "
             "(DeepSpeed-Chat's only_optimize_lora): the other parameters "
             "get no gradient, optimizer state or update"),
    inCompile);
cl::opt<CompileOptions::LoraGeneration, false,
        NamedValueParser<CompileOptions::LoraGeneration>>
    loraGeneration(
        "lora-generation",
        cl::desc("--lora-dim: how @prefill/@decode apply the adapters"),
        cl::value_desc("MODE"),
        cl::values(
            clEnumValN(CompileOptions::LoraGeneration::Fused, "fused",
                       "merged into W by @lora_fuse before generating, taken "
                       "out by @lora_unfuse after (default; DeepSpeed's "
                       "hybrid engine)"),
            clEnumValN(CompileOptions::LoraGeneration::Unfused, "unfused",
                       "the adapters' GEMMs in every step; W untouched")),
        cl::init(CompileOptions::LoraGeneration::Fused), inCompile);

} // namespace

std::optional<std::string> loraOptionsError(bool train) {
  const cl::Option &targets = loraTargets; // a list is also its storage
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &loraAlpha, &targets, &onlyOptimizeLora, &loraGeneration})
    if (o->getNumOccurrences() && !loraDim.getNumOccurrences())
      return "--" + o->ArgStr.str() + " applies to --lora-dim";
  if (onlyOptimizeLora && !train)
    return std::string("--only-optimize-lora applies to --train");
  if (!(loraAlpha > 0) || !(loraAlpha < 1e30))
    return std::string("--lora-alpha must be > 0");
  for (const std::string &t : loraTargets)
    if (t.empty())
      return std::string("--lora-targets: an empty module name");
  return std::nullopt;
}

void applyLoraOptions(CompileOptions &options) {
  options.loraRank = loraDim.getNumOccurrences() ? loraDim.getValue().value : 0;
  options.loraAlpha = loraAlpha;
  options.loraTargets.assign(loraTargets.begin(), loraTargets.end());
  options.loraOnlyOptimize = onlyOptimizeLora;
  options.loraGeneration = loraGeneration;
}

} // namespace hybridc::tool
