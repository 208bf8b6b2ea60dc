// Timed runs of an engine's work, measured as the benchmarks report them.
//
// Calls of an executable (at the host edge and device-resident), generation
// (prefill, decode) and the fused training step (with its FLOPs). A timed
// run starts with an untimed warm-up call (GEMM plans, first allocations,
// a decode graph's capture) and then resets the device's profile, so that a
// profile covers the timed calls only. Every function uses the engine as
// Engine requires: from one thread at a time.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/Metrics.h"
#include "hybrid/TokenDataset.h"
#include "hybrid/TrainStep.h"

#include <string>
#include <vector>

namespace hybrid {

/// Calls of one executable.
struct ForwardTiming {
  NamedTensors outputs;          ///< of the last call
  int calls = 1;                 ///< timed calls
  double bestMs = 0, meanMs = 0; ///< host edge included: inputs in, outputs out
  /// The best device-resident call: inputs written before the clock starts,
  /// outputs left on the device (what the executable itself costs); 0 for a
  /// single call.
  double residentMs = 0;
  /// input_ids' shape (else the first input's): [batch, seq] for a language
  /// model.
  Shape batchShape;
  /// batch x seq per second of the best call (of the best resident one);
  /// 0 when batchShape is not at least [batch, seq].
  double tokensPerSecond() const;
  double residentTokensPerSecond() const;
};

/// Runs executable `name` on `inputs`. repeat 0: one call, timed, with no
/// warm-up (what a one-off call costs). repeat N: a warm-up, N timed calls
/// (best and mean), then N device-resident calls. Throws hybrid::Error as
/// Executable::run does.
ForwardTiming timeForward(Engine &engine, const std::string &name,
                          const NamedTensors &inputs, int repeat);

/// Generation from one batch of prompts.
struct GenerateTiming {
  /// The first call's result; with repeat, its prefillMs and decodeMs are
  /// the best of the timed calls' (each phase on its own).
  GenerateResult result;
  int64_t batch = 0, promptLen = 0;
  int repeat = 0;     ///< timed calls after the first; 0 when untimed
  double peakGiB = 0; ///< the device's memory high-water mark after them
  double decodeMsPerToken() const;      ///< per decode step
  double decodeTokensPerSecond() const; ///< the batch's, decode steps only
  double totalMs() const { return result.prefillMs + result.decodeMs; }
  /// End to end as HF's generate() is timed: every new token of the batch
  /// (the first comes from the prefill) over prefill + decode.
  double endToEndTokensPerSecond() const;
};

/// Engine::generate on `prompts`; with repeat R, R more calls whose best
/// times replace the first's. Throws hybrid::Error as generate does.
GenerateTiming timeGenerate(Engine &engine, const TokenBatch &prompts,
                            const GenerateConfig &config, int repeat);

/// Fused training steps (@train_step) on one batch.
struct TrainStepTiming {
  std::vector<double> stepMs; ///< the timed steps
  float firstLoss = 0;        ///< the warm-up step's loss
  float lastLoss = 0;         ///< the last step's
  StepFlops flops;
  int64_t tokens = 0; ///< per step: batch x seq
  double peakGiB = 0; ///< the device's memory high-water mark after them
  double medianMs() const { return medianOf(stepMs); }
  double bestMs() const;
  double tokensPerSecond() const; ///< at the median step
  double flopsPerSecond() const;  ///< model FLOPs at the median step
  /// Model FLOPs utilisation against `peakFlops` FLOP/s.
  double mfu(double peakFlops) const { return flopsPerSecond() / peakFlops; }
};

/// A warm-up step, then `repeat` timed steps of @train_step, each as a
/// training loop runs it: the batch (and `hyper`) written to the device,
/// the step, the loss read back; the gradients stay on the device. The
/// weights change with every step; bf16 / f16 weights need the optimizer
/// started (Engine::initOptimizer). Throws hybrid::Error when the bundle
/// has no train_step or its loss is not f32.
TrainStepTiming timeTrainSteps(Engine &engine, const TokenBatch &batch,
                               const TrainStepHyperparameters &hyper,
                               int repeat);

} // namespace hybrid
