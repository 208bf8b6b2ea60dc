// A DeepSpeed-style JSON training configuration (DESIGN §2.9): the keys
// hybridc honours, with DeepSpeed's defaults, the batch-size triangle
// checked as DeepSpeed checks it, and the learning-rate schedules
// (WarmupLR, WarmupDecayLR) as DeepSpeed defines them.
#pragma once

#include "hybrid/Generation.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

struct SchedulerConfig {
  enum class Kind { None, WarmupLR, WarmupDecayLR } kind = Kind::None;
  double warmupMinLr = 0.0;
  double warmupMaxLr = 0.001;
  int64_t warmupNumSteps = 1000; ///< at least 2, as DeepSpeed clamps it
  bool linearWarmup = false;     ///< warmup_type "linear" (default "log")
  int64_t totalNumSteps = 0;     ///< WarmupDecayLR
};

struct TrainConfig {
  int64_t trainBatchSize = 0; ///< sequences per optimizer step
  int64_t microBatchSize = 0; ///< sequences per forward_backward
  int64_t gradientAccumulationSteps = 0;
  StepConfig optimizer; ///< AdamW's lr, betas, eps, weight decay;
                        ///< maxGradNorm = gradient_clipping
  SchedulerConfig scheduler;
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
/// honour (fp16/bf16 enabled, ZeRO stage > 0, an optimizer other than
/// AdamW, inference_tp_size > 1, ...) and invalid values throw one
/// hybrid::Error naming the key.
TrainConfig parseTrainConfig(const std::string &text,
                             std::vector<std::string> *unknown = nullptr);

/// The learning rate of optimizer step `step` (0 for the first) under the
/// schedule, or `lr` without one. WarmupLR: min + (max - min) * gamma with
/// gamma = log(step + 1) / log(warmup_num_steps) ("log") or step /
/// warmup_num_steps ("linear") during the warmup, 1 after;
/// WarmupDecayLR: then gamma = max(0, (total - step) / max(1, total -
/// warmup)).
double learningRate(const SchedulerConfig &schedule, double lr, int64_t step);

} // namespace hybrid
