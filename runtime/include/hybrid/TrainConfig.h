// A DeepSpeed-style JSON training configuration (DESIGN §2.9): the keys
// hybridc honours, with DeepSpeed's defaults, the batch-size triangle
// checked as DeepSpeed checks it, the learning-rate schedules (WarmupLR,
// WarmupDecayLR, WarmupCosineLR) as DeepSpeed defines them, and the check
// of a config against what a bundle's training executables were compiled
// for (optimizer, precision).
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Generation.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

struct SchedulerConfig {
  enum class Kind {
    None,
    WarmupLR,
    WarmupDecayLR,
    WarmupCosineLR
  } kind = Kind::None;
  double warmupMinLr = 0.0;      ///< WarmupLR, WarmupDecayLR
  double warmupMaxLr = 0.001;    ///< WarmupLR, WarmupDecayLR
  int64_t warmupNumSteps = 1000; ///< at least 2, as DeepSpeed clamps it
  bool linearWarmup = false;     ///< warmup_type "linear" (default "log")
  int64_t totalNumSteps = 0;     ///< WarmupDecayLR, WarmupCosineLR
  double warmupMinRatio = 0.0;   ///< WarmupCosineLR: of the optimizer's lr
  double cosMinRatio = 0.0001;   ///< WarmupCosineLR: of the optimizer's lr
};

struct TrainConfig {
  int64_t trainBatchSize = 0; ///< sequences per optimizer step
  int64_t microBatchSize = 0; ///< sequences per forward_backward
  int64_t gradientAccumulationSteps = 0;
  /// The optimizer (AdamW or SGD) and its params; maxGradNorm =
  /// gradient_clipping; lossScale = the fp16 block.
  StepConfig optimizer;
  SchedulerConfig scheduler;
  /// The weights' precision: F16 with fp16.enabled, BF16 with
  /// bf16.enabled, else F32 (the bundle's must agree: checkTrainConfig).
  DType precision = DType::F32;
  /// zero_optimization.stage (0-3). One process is one rank: at world size
  /// 1 every stage trains as stage 0 (nothing to partition), as DeepSpeed
  /// on one GPU; a bundle partitioned for more ranks (hybridc
  /// --zero-stage/--world-size) needs the multi-rank runtime.
  int64_t zeroStage = 0;
  int64_t stepsPerPrint = 10;
  /// The hybrid_engine block, as generate() options (max_out_tokens,
  /// release_inference_cache, enable_cuda_graph).
  bool hybridEngine = false;
  GenerateConfig generation;
};

/// Parses `text` (JSON). World size 1: train_batch_size = micro batch x
/// accumulation steps; any two of the three give the third, all three
/// must agree, one alone is taken with the others at 1 (DeepSpeed's
/// rules). Keys hybridc does not know are returned in `unknown`, one line
/// each ("zero_optimization.foo"), not ignored silently; values it cannot
/// honour (a ZeRO stage past 3, an optimizer other than AdamW and SGD,
/// inference_tp_size > 1, fp16 and bf16 both enabled, ...) and invalid
/// values throw one hybrid::Error naming the key.
TrainConfig parseTrainConfig(const std::string &text,
                             std::vector<std::string> *unknown = nullptr);

/// What a bundle's training executables were compiled for: the update
/// rule (@step's inputs) and the precision of the weights they train (the
/// parameters @step updates through f32 masters; f16 with the loss
/// scaled).
struct TrainPlan {
  Optimizer optimizer = Optimizer::AdamW;
  DType precision = DType::F32;
};

/// The plan of `bundle`'s @step; throws hybrid::Error when it has none.
TrainPlan trainPlanOf(const BundleDesc &bundle);

/// Throws one hybrid::Error naming the config key that disagrees with
/// `plan` (optimizer.type, fp16.enabled, bf16.enabled) and how to compile
/// a bundle that agrees.
void checkTrainConfig(const TrainConfig &config, const TrainPlan &plan);

/// The learning rate of optimizer step `step` (0 for the first) under the
/// schedule, or `lr` without one. WarmupLR: min + (max - min) * gamma with
/// gamma = log(step + 1) / log(warmup_num_steps) ("log") or step /
/// warmup_num_steps ("linear") during the warmup, 1 after;
/// WarmupDecayLR: then gamma = max(0, (total - step) / max(1, total -
/// warmup)). WarmupCosineLR: lr * ratio, ratio = warmup_min_ratio + (1 -
/// warmup_min_ratio) * gamma during the warmup, then cos_min_ratio + (1 -
/// cos_min_ratio) * (1 + cos(pi * p)) / 2 with p = min(1, (step - warmup +
/// 1) / max(1, total - warmup)).
double learningRate(const SchedulerConfig &schedule, double lr, int64_t step);

} // namespace hybrid
