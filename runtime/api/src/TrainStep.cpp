// One fused training step with its gradients, logits after and masters.
#include "hybrid/TrainStep.h"

#include "hybrid/EngineState.h"

#include <chrono>

namespace hybrid {

NamedTensors TrainStepHyperparameters::inputs() const {
  NamedTensors named;
  auto scalar = [&](const char *name, std::optional<float> v) {
    if (v)
      named[name] = HostTensor::fromVector<float>({1}, {*v});
  };
  scalar("lr", lr);
  scalar("eps", eps);
  scalar("weight_decay", weightDecay);
  scalar("beta1", beta1);
  scalar("beta2", beta2);
  scalar("momentum", momentum);
  scalar("dampening", dampening);
  if (nesterov)
    scalar("nesterov", *nesterov ? 1.0f : 0.0f);
  return named;
}

TrainStepOutputs runTrainStep(Engine &engine, const TokenBatch &batch,
                              const TrainStepHyperparameters &hyper) {
  Executable &step = engine.executable("train_step");
  NamedTensors inputs = batch.lossInputs();
  for (auto &[name, t] : hyper.inputs())
    inputs[name] = t;
  TrainStepOutputs out;
  const auto start = std::chrono::steady_clock::now();
  out.tensors = step.run(step.withDefaults(inputs));
  out.ms = std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
               .count();
  // The logits after the step, on the same weights the step wrote.
  NamedTensors after =
      engine.forward(engine.executable("forward").withDefaults(batch.inputs()));
  out.tensors["logits_after"] = after.at("logits");
  for (auto &[name, t] : masterWeights(engine))
    out.tensors[name] = t;
  return out;
}

} // namespace hybrid
