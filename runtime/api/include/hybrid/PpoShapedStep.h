// The PPO-shaped step, DESIGN §6's benchmark of an RLHF actor update.
//
// eval(), sampled generation after a batch of prompts, train(), causal-LM
// forward and backward over the prompts with what was generated in
// micro-batches (gradients accumulated), one optimizer step: the work and
// the mode switches of the update, each phase timed between device
// synchronisations.
#pragma once

#include "hybrid/Device.h"
#include "hybrid/Engine.h"
#include "hybrid/TokenDataset.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

struct PpoShapedStepConfig {
  int64_t newTokens = 256; ///< sampled per prompt (temperature 1, no stop)
  int64_t microBatch = 8;  ///< sequences per forward + backward
  float lr = 1e-6f;        ///< the bundle's optimizer, torch's defaults else
  bool releaseInferenceCache = false; ///< let the KV cache go for training
  bool cudaGraph = true;              ///< GenerateConfig::cudaGraph
};

/// What one step cost, phase by phase.
struct PpoStepCost {
  PhaseCost total, generate, train;
  PhaseCost switches;    ///< eval() and train() together
  int64_t newTokens = 0; ///< generated per prompt
  float loss = 0;        ///< mean over the micro-batches
};

/// Ownership: refers to an Engine it does not own (it must outlive the
/// step; its weights bound and its optimizer started) and owns its prompts.
/// Thread safety: one thread at a time, and none may use the engine
/// meanwhile.
class PpoShapedStep {
public:
  /// What the bundle lacks for the step, "" when nothing: "no
  /// prefill/decode executables (...)", "no training executables (...)",
  /// or both joined by " and ", each saying how to compile one that has
  /// them.
  static std::string missingExecutables(const Engine &engine);
  /// The most positions (prompt + new tokens) both the KV cache and the
  /// training pass of `bundle` take; 0 when neither is bounded.
  static int64_t positionLimit(const BundleDesc &bundle);

  /// Checks the bundle (missingExecutables), the prompts against the
  /// micro-batch and the positions against positionLimit; throws
  /// hybrid::Error saying which.
  PpoShapedStep(Engine &engine, TokenBatch prompts, PpoShapedStepConfig config);

  /// One step, sampling with `seed`.
  PpoStepCost run(uint64_t seed);

  Engine &engine() const { return *engine_; }

private:
  Engine *engine_;
  TokenBatch prompts_;
  PpoShapedStepConfig config_;
};

/// A warm-up step (GEMM plans, the decode graph's capture, first
/// allocations) and `repeat` timed ones, step i sampling with seed + i.
struct PpoStepTiming {
  std::vector<PpoStepCost> steps; ///< the warm-up first
  /// The timed steps' median by total time (of an even count, the slower
  /// middle one: a step that ran, with its phases); the warm-up when none
  /// was timed.
  PpoStepCost median() const;
  /// The most bytes the switches of one step allocated and copied.
  uint64_t maxSwitchBytes() const;
};
PpoStepTiming timePpoSteps(PpoShapedStep &step, uint64_t seed, int repeat);

} // namespace hybrid
