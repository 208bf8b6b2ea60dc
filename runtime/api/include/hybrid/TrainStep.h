// One run of a bundle's fused training step, with its outputs to compare.
//
// @train_step (a bundle compiled with hybridc --train) runs forward,
// backward and the optimizer update in one executable; its hyperparameters
// are inputs of the call. runTrainStep uses the engine from the calling
// thread only, as Engine requires.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/TokenDataset.h"

#include <optional>

namespace hybrid {

/// @train_step's hyperparameters; the ones not given keep the executable's
/// defaults (torch.optim.AdamW's, lr 1e-3; torch.optim.SGD's).
struct TrainStepHyperparameters {
  std::optional<float> lr, eps, weightDecay; ///< eps: AdamW
  std::optional<float> beta1, beta2;         ///< AdamW
  std::optional<float> momentum, dampening;  ///< SGD
  std::optional<bool> nesterov;              ///< SGD

  /// The ones given, as @train_step takes them: f32 [1] inputs by name.
  NamedTensors inputs() const;
};

/// What one @train_step call gives.
struct TrainStepOutputs {
  /// loss [1], grad.<parameter> per trainable parameter, logits_after
  /// (forward on the same batch after the update) and, for bf16 / f16
  /// weights, opt.master.<parameter> (the f32 masters after the update).
  NamedTensors tensors;
  double ms = 0; ///< the step's wall time, host copies included
  float loss() const { return tensors.at("loss").as<float>()[0]; }
};

/// Runs @train_step once on `batch` with `hyper`, updating the weights in
/// place. bf16 / f16 weights need the optimizer started
/// (Engine::initOptimizer) since they were bound. Throws hybrid::Error when
/// the bundle has no train_step or the batch does not fit it.
TrainStepOutputs runTrainStep(Engine &engine, const TokenBatch &batch,
                              const TrainStepHyperparameters &hyper);

} // namespace hybrid
