// Timed forward calls, generation and training steps.
#include "hybrid/Benchmark.h"

#include <algorithm>
#include <chrono>

namespace hybrid {

namespace {

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now() - start)
      .count();
}

/// batch x seq of `shape`, 0 when it is not at least rank 2.
double tokensOf(const Shape &shape) {
  return shape.size() >= 2 ? static_cast<double>(shape[0]) * shape[1] : 0;
}

} // namespace

double ForwardTiming::tokensPerSecond() const {
  return bestMs > 0 ? tokensOf(batchShape) / (bestMs / 1000) : 0;
}

double ForwardTiming::residentTokensPerSecond() const {
  return residentMs > 0 ? tokensOf(batchShape) / (residentMs / 1000) : 0;
}

ForwardTiming timeForward(Engine &engine, const std::string &name,
                          const NamedTensors &inputs, int repeat) {
  Executable &exe = engine.executable(name);
  Device &device = engine.device();
  ForwardTiming timing;
  const bool timed = repeat > 0;
  timing.calls = timed ? repeat : 1;
  double total = 0;
  for (int r = 0; r < timing.calls + (timed ? 1 : 0); ++r) {
    const auto start = std::chrono::steady_clock::now();
    timing.outputs = exe.run(inputs);
    const double ms = msSince(start);
    if (timed && r == 0) {
      device.resetProfile();
      continue;
    }
    timing.bestMs = timing.bestMs == 0 ? ms : std::min(timing.bestMs, ms);
    total += ms;
  }
  timing.meanMs = total / timing.calls;
  if (timed) {
    const NamedTensors all = exe.withDefaults(inputs);
    std::unique_ptr<Stream> stream = device.createStream();
    for (int r = 0; r < repeat; ++r) {
      // The plan may reuse an input's slot once it is read: write it again.
      for (size_t i = 0; i < exe.inputNames().size(); ++i) {
        const HostTensor &t = all.at(exe.inputNames()[i]);
        device.copyHostToDevice(exe.input(i).data, t.data(), t.bytes(),
                                *stream);
      }
      device.synchronize(*stream);
      const auto start = std::chrono::steady_clock::now();
      exe.enqueue(*stream);
      device.synchronize(*stream);
      const double ms = msSince(start);
      timing.residentMs =
          timing.residentMs == 0 ? ms : std::min(timing.residentMs, ms);
    }
  }
  auto ids = inputs.find("input_ids");
  if (ids != inputs.end())
    timing.batchShape = ids->second.shape();
  else if (!inputs.empty())
    timing.batchShape = inputs.begin()->second.shape();
  return timing;
}

double GenerateTiming::decodeMsPerToken() const {
  return result.steps > 1 ? result.decodeMs / (result.steps - 1) : 0;
}

double GenerateTiming::decodeTokensPerSecond() const {
  return result.decodeMs > 0 ? static_cast<double>(batch) * (result.steps - 1) /
                                   (result.decodeMs / 1000)
                             : 0;
}

double GenerateTiming::endToEndTokensPerSecond() const {
  return totalMs() > 0
             ? static_cast<double>(batch) * result.steps / (totalMs() / 1000)
             : 0;
}

GenerateTiming timeGenerate(Engine &engine, const TokenBatch &prompts,
                            const GenerateConfig &config, int repeat) {
  GenerateTiming timing;
  timing.batch = prompts.rows();
  timing.promptLen = prompts.seq();
  timing.repeat = repeat;
  timing.result = engine.generate(prompts.inputIds, prompts.mask(), config);
  if (repeat > 0) {
    engine.device().resetProfile();
    for (int i = 0; i < repeat; ++i) {
      GenerateResult again =
          engine.generate(prompts.inputIds, prompts.mask(), config);
      GenerateResult &best = timing.result;
      if (i == 0 || again.prefillMs < best.prefillMs)
        best.prefillMs = again.prefillMs;
      if (i == 0 || again.decodeMs < best.decodeMs)
        best.decodeMs = again.decodeMs;
    }
  }
  timing.peakGiB = peakMemoryGiB(engine.device());
  return timing;
}

double TrainStepTiming::bestMs() const {
  return stepMs.empty() ? 0 : *std::min_element(stepMs.begin(), stepMs.end());
}

double TrainStepTiming::tokensPerSecond() const {
  return static_cast<double>(tokens) / (medianMs() / 1000);
}

double TrainStepTiming::flopsPerSecond() const {
  return flops.total() / (medianMs() / 1000);
}

TrainStepTiming timeTrainSteps(Engine &engine, const TokenBatch &batch,
                               const TrainStepHyperparameters &hyper,
                               int repeat) {
  Executable &step = engine.executable("train_step");
  NamedTensors inputs = batch.lossInputs();
  for (auto &[name, t] : hyper.inputs())
    inputs[name] = t;
  const NamedTensors all = step.withDefaults(inputs);
  std::vector<Shape> shapes;
  for (const std::string &name : step.inputNames())
    shapes.push_back(all.at(name).shape());
  step.bindShapes(shapes);
  const size_t lossPort = step.outputIndex("loss");
  if (step.output(lossPort).dtype != DType::F32)
    throw Error("train_step's loss is not f32");
  Device &device = engine.device();
  std::unique_ptr<Stream> stream = device.createStream();
  auto once = [&](float &loss) {
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < step.inputNames().size(); ++i) {
      const HostTensor &in = all.at(step.inputNames()[i]);
      device.copyHostToDevice(step.input(i).data, in.data(), in.bytes(),
                              *stream);
    }
    step.enqueue(*stream);
    device.copyDeviceToHost(&loss, step.output(lossPort).data, sizeof loss,
                            *stream);
    device.synchronize(*stream);
    return msSince(start);
  };
  TrainStepTiming timing;
  once(timing.firstLoss);
  device.resetProfile();
  for (int r = 0; r < repeat; ++r)
    timing.stepMs.push_back(once(timing.lastLoss));
  timing.flops = stepFlopsOf(engine.bundle(), step, batch.rows(), batch.seq());
  timing.tokens = batch.rows() * batch.seq();
  timing.peakGiB = peakMemoryGiB(device);
  return timing;
}

} // namespace hybrid
