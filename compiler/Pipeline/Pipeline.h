// The compilation pipeline as a list of named phases:
//   import  the hg module as the frontend built it
//   hg      after canonicalisation and fusion (what both lowerings start from)
//   hrt     lowered to hrt executables with a memory plan
//   bundle  serialised: the parameter table and the command lists
// Tools can stop after any phase to print its result.
#pragma once

#include "hybrid/BundleDesc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace hybridc {

enum class Phase { Import, Hg, Hrt, Bundle };

/// The phase named `name` ("import", "hg", "hrt", "bundle").
std::optional<Phase> parsePhase(llvm::StringRef name);

struct CompileOptions {
  bool fuse = true; ///< run the fusion passes (off: only canonicalise)
  /// Whether to add @prefill and @decode (KV cache, device-side sampling)
  /// to a language model's @forward (input_ids -> logits): Auto adds them
  /// when the model can run one token at a time and otherwise warns and
  /// keeps @forward alone; On makes that an error; Off skips them.
  enum class Generation { Auto, On, Off };
  Generation generation = Generation::Auto;
  /// What an HF config model's @forward ends in: the LM head (logits
  /// [batch, seq, vocab]) or DeepSpeed-Chat's value head (values [batch,
  /// seq] and scores [batch], the base model's parameter names plus
  /// v_head.weight: a critic or reward model). A value model has no
  /// generation executables. Other inputs keep the head they were written
  /// with; --head value is an error for them.
  enum class Head { CausalLm, Value };
  Head head = Head::CausalLm;
  /// Whether to add the training executables: for a language model
  /// @forward_loss (HF's causal-LM loss), @forward_loss_grad (its
  /// gradients), @train_step (gradients, then AdamW in place),
  /// @forward_backward, @step and @backward (from grad_logits); for a value
  /// model (head Value) @backward from grad_values and @step.
  bool train = false;
  /// With train: also DeepSpeed-Chat's PPO losses (hg-ppo-losses), each
  /// with its accumulation executable (@ppo_actor_forward_backward), the
  /// policy ratio clipped to [1 - clipLow, 1 + clipHigh].
  bool ppo = false;
  double clipLow = 0.2;
  double clipHigh = 0.2;
  /// A value model's PPO: the critic loss's value clip, and the experience
  /// maths' prompt length (0: none given), reward clip and GAE's gamma and
  /// lambda (hg-ppo-losses).
  /// With ppo, a language model: GRPO's loss too (@grpo_loss,
  /// @grpo_advantages): samples per prompt, the k3 KL's coefficient, per
  /// sequence (GRPO) or per token (DAPO) averaging, std-scaled advantages.
  bool grpo = false;
  int64_t groupSize = 1;
  double klBeta = 0.04;
  bool perSequence = true;
  bool scaleAdvantages = true;
  double cliprangeValue = 0.2;
  int64_t promptLength = 0;
  double clipRewardValue = 5.0;
  double gamma = 1.0;
  double lambda = 0.95;
  /// With train, a value model: also DeepSpeed-Chat's reward-model loss
  /// (step 2, hg-reward-loss): @reward_loss over 2B rows (the chosen
  /// answers, then the rejected ones; right padding) and its accumulation
  /// @reward_forward_backward.
  bool reward = false;
  /// LoRA adapters (hg-lora, in the hg phase): rank r (0: none), lora_alpha
  /// (the path is scaled by alpha / r), PEFT's target_modules (empty: every
  /// linear of a numbered block) and, with train, only the adapters trained
  /// (DeepSpeed-Chat's only_optimize_lora).
  int64_t loraRank = 0;
  double loraAlpha = 1.0;
  std::vector<std::string> loraTargets;
  bool loraOnlyOptimize = false;
  /// How @prefill/@decode apply the adapters: Fused generates on W + alpha
  /// / r x B A, merged in place by @lora_fuse before generation and
  /// taken out by @lora_unfuse after it (hg-lora-fused-generation;
  /// DeepSpeed's hybrid engine); Unfused runs the adapters' GEMMs in every
  /// step and never touches W.
  enum class LoraGeneration { Fused, Unfused };
  LoraGeneration loraGeneration = LoraGeneration::Fused;
  /// The training executables' update rule.
  enum class Optimizer { AdamW, Sgd };
  Optimizer optimizer = Optimizer::AdamW;
  /// Data parallelism (ZeRO, hrt-zero-partition): the ZeRO stage (0-3) and
  /// the ranks of the group; one rank keeps every executable as it is.
  int64_t zeroStage = 0;
  int64_t worldSize = 1;
  /// Stage 3: DeepSpeed's stage3_prefetch_bucket_size and
  /// stage3_max_reuse_distance, in parameter elements.
  int64_t prefetchBucketSize = 50000000;
  int64_t maxReuseDistance = 1000000000;
  /// Floating-point type of an HF config model's weights and activations
  /// ("float32", "bfloat16", "float16"; also "f32", "bf16", "f16"); empty:
  /// the config's torch_dtype (or dtype), else float32.
  std::string dtype;
  /// hg-fuse-norm-prologues in @decode: each linear normalises its own
  /// rows. Off by default: measured slower on an H200 (OPT-1.3B decode,
  /// batch 1: the skinny GEMM's prologue delays its weight stream; batch
  /// 32: each projection runs its own norm kernel), see bench/RESULTS.md.
  bool normPrologues = false;
};

/// Imports `path`: an .onnx file, a folder (or config.json) of a HuggingFace
/// model, or a module in MLIR text (.mlir: hg to compile from its start, or
/// hrt to serialise). `inputFiles`, when given, receives the files the
/// import read (the model file or config.json, and ONNX external data
/// files), which an output must not replace.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &context, const std::string &path,
            const CompileOptions &options = {},
            std::vector<std::string> *inputFiles = nullptr);

/// True when the module holds hrt executables (an .mlir file of hrt): the
/// hg phases are then skipped.
bool isHrtModule(mlir::ModuleOp module);

/// The passes of each phase, added to a pass manager on the module. The
/// run*Pipeline functions below run them for hybridc, and hybridc-opt
/// replays them as the pipelines registerPipelines() names, so both run
/// one definition.
void buildHgPipeline(mlir::OpPassManager &pm, const CompileOptions &options);
void buildTrainPipeline(mlir::OpPassManager &pm, const CompileOptions &options);
void buildGenerationPipeline(mlir::OpPassManager &pm,
                             const CompileOptions &options);
void buildHrtPipeline(mlir::OpPassManager &pm, const CompileOptions &options);
/// The phases from the import to the planned hrt module, in hybridc's
/// order: hg, train (options.train), generation (unless options.generation
/// is Off or options.head is Value), hrt. For a language model that can decode,
/// what hybridc compile runs.
void buildCompilePipeline(mlir::OpPassManager &pm,
                          const CompileOptions &options);

/// Registers the pipelines of hybridc's phases, with CompileOptions as
/// pipeline options: hybrid-hg-pipeline, hybrid-train-pipeline,
/// hybrid-generation-pipeline, hybrid-hrt-pipeline and hybrid-pipeline
/// (buildCompilePipeline). Registration is global: call it once.
void registerPipelines();

/// Canonicalises and fuses the hg module in place.
llvm::Error runHgPipeline(mlir::ModuleOp module, const CompileOptions &options);

/// Whether @forward has the shape hg-split-generation takes (input_ids
/// [batch, seq] -> logits [batch, seq, vocab]).
bool isLanguageModel(mlir::ModuleOp module);
/// Whether @forward is a value model's (input_ids [batch, seq] -> values
/// [batch, seq], the value head's).
bool isValueModel(mlir::ModuleOp module);

/// The inference lowering of @forward: @prefill and @decode over a KV
/// cache (hg-split-generation, hg-kv-cache), then cleanup. With `declined`,
/// a model the lowering cannot take is no error: the module is left as it
/// was and `declined` receives the diagnostics, one per line, instead of
/// the context's handler. options.normPrologues adds
/// hg-fuse-norm-prologues.
llvm::Error runGenerationPipeline(mlir::ModuleOp module,
                                  const CompileOptions &options = {},
                                  std::string *declined = nullptr);

/// The training lowering of a language model's @forward: hg-causal-lm-loss,
/// hg-autodiff (with fp16 loss scaling when a parameter is f16), hg-adamw
/// or hg-sgd (options.optimizer), then cleanup. For a value model
/// (options.head Value) no loss yet: hg-autodiff cotangent=values, and the
/// optimizer executables over its @forward_vjp (@backward, @step).
llvm::Error runTrainPipeline(mlir::ModuleOp module,
                             const CompileOptions &options = {});

/// Lowers the hg functions to hrt executables, partitions them over the
/// data-parallel group (options.worldSize > 1) and plans their memory.
llvm::Error runHrtPipeline(mlir::ModuleOp module,
                           const CompileOptions &options = {});

/// Serialises the planned hrt executables into a bundle.
llvm::Expected<hybrid::BundleDesc> lowerToBundle(mlir::ModuleOp module);

} // namespace hybridc
