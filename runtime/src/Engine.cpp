// The engine: one weight store, one state store and the executables that
// use them.
#include "hybrid/Engine.h"

#include "hybrid/AttentionMask.h"

#include "hybrid/Bundle.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <limits>

namespace hybrid {

namespace {

HostTensor scalarTensor(float v) {
  return HostTensor::fromVector<float>({1}, {v});
}

} // namespace

Engine Engine::create(std::shared_ptr<const BundleDesc> bundle,
                      std::shared_ptr<Device> device) {
  if (!bundle)
    throw Error("Engine::create: no bundle");
  if (!device)
    throw Error("Engine::create: no device");
  validateBundle(*bundle, "bundle '" + bundle->model + "'");
  // Collectives over several ranks need one process per rank and a
  // communicator between them (NCCL), which this runtime does not have yet.
  if (bundle->worldSize != 1)
    throw Error("bundle '" + bundle->model + "' was compiled for " +
                std::to_string(bundle->worldSize) +
                " data-parallel ranks (ZeRO stage " +
                std::to_string(bundle->zeroStage) +
                "); this runtime runs a single process: compile it with "
                "--world-size 1");
  Engine engine;
  engine.bundle_ = std::move(bundle);
  engine.device_ = std::move(device);
  engine.weights_ =
      std::make_unique<WeightStore>(engine.bundle_->params, engine.device_);
  engine.states_ =
      std::make_unique<StateStore>(engine.bundle_->states, engine.device_);
  for (size_t i = 0; i < engine.bundle_->executables.size(); ++i)
    engine.executables_.push_back(std::make_unique<Executable>(
        engine.bundle_, i, engine.device_, *engine.weights_, *engine.states_));
  for (const ExecutableDesc &e : engine.bundle_->executables)
    if (e.name == "step")
      engine.trainPlan_ = trainPlanOf(*engine.bundle_);
  for (const ExecutableDesc &e : engine.bundle_->executables)
    if (e.name == "init_optimizer")
      for (const StateUse &use : e.states)
        if (use.access == Access::ReadWrite)
          engine.optimizerStart_.push_back(
              engine.bundle_->states.at(use.state).name);
  return engine;
}

Engine Engine::create(BundleDesc bundle, std::shared_ptr<Device> device) {
  return create(std::make_shared<const BundleDesc>(std::move(bundle)),
                std::move(device));
}

Engine::Engine(Engine &&) noexcept = default;
Engine &Engine::operator=(Engine &&) noexcept = default;
Engine::~Engine() = default;

void Engine::loadWeights(const std::string &path,
                         const std::set<std::string> &allowedExtra) {
  CheckpointBinding binding;
  binding.allowedExtra = allowedExtra;
  loadWeights(path, binding);
}

void Engine::loadWeights(const std::string &path,
                         const CheckpointBinding &binding) {
  auto endsWith = [&](const char *suffix) {
    std::string s(suffix);
    return path.size() >= s.size() &&
           path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (endsWith(".onnx")) {
    if (!binding.prefix.empty() || !binding.zeroIfMissing.empty())
      throw Error(path + ": a weights prefix and parameters starting at zero "
                         "apply to safetensors checkpoints, not ONNX models");
    weights_->bindFromOnnx(path);
  } else {
    CheckpointBinding full = binding;
    full.allowedExtra.insert(bundle_->tied.begin(), bundle_->tied.end());
    full.allowedExtra.insert(bundle_->checkpointExtras.begin(),
                             bundle_->checkpointExtras.end());
    full.parameterPrefixes.insert(full.parameterPrefixes.end(),
                                  bundle_->checkpointPrefixes.begin(),
                                  bundle_->checkpointPrefixes.end());
    // A base model's checkpoint has no adapters: those it lacks start as
    // PEFT starts them (a checkpoint saved from this bundle has them).
    for (const LoraAdapterDesc &a : bundle_->lora.adapters) {
      full.zeroIfMissing.insert(a.loraA);
      full.zeroIfMissing.insert(a.loraB);
    }
    std::vector<std::string> zeroed = weights_->bindFromSafeTensors(path, full);
    std::set<std::string> fresh;
    for (const LoraAdapterDesc &a : bundle_->lora.adapters)
      if (std::count(zeroed.begin(), zeroed.end(), a.loraA) ||
          std::count(zeroed.begin(), zeroed.end(), a.loraB))
        fresh.insert(a.module);
    if (!fresh.empty())
      initAdapters(0, fresh);
  }
  releaseOptimizerStart();
}

void Engine::initRandom(uint64_t seed) {
  weights_->initRandom(seed);
  releaseOptimizerStart();
}

bool Engine::optimizerStarted() const {
  for (const std::string &name : optimizerStart_)
    if (!states_->allocated(name))
      return false;
  return true;
}

void Engine::releaseOptimizerStart() {
  for (const std::string &name : optimizerStart_)
    states_->release(name);
}

void Engine::initOptimizer(const LossScaleConfig &config) {
  if (!hasExecutable("init_optimizer"))
    return;
  if (!(config.initialScale > 0) ||
      !(config.initialScale <= std::numeric_limits<float>::max()))
    throw Error("initOptimizer: the initial loss scale must be a positive "
                "f32");
  if (config.hysteresis < 1)
    throw Error("initOptimizer: the hysteresis must be >= 1");
  Executable &e = executable("init_optimizer");
  NamedTensors inputs = {
      {"initial_loss_scale", scalarTensor(config.initialScale)},
      {"hysteresis", scalarTensor(static_cast<float>(config.hysteresis))}};
  // Only f16 bundles take them: the others start masters only.
  NamedTensors taken;
  for (const std::string &name : e.inputNames())
    taken[name] = inputs.at(name);
  e.run(taken);
}

bool Engine::hasExecutable(const std::string &name) const {
  for (const auto &e : executables_)
    if (e->name() == name)
      return true;
  return false;
}

Executable &Engine::executable(const std::string &name) {
  for (const auto &e : executables_)
    if (e->name() == name)
      return *e;
  std::string names;
  for (const auto &e : executables_)
    names += (names.empty() ? "" : ", ") + e->name();
  throw Error("bundle '" + bundle_->model + "' has no executable '" + name +
              "' (it has: " + (names.empty() ? "none" : names) + ")");
}

std::vector<std::string> Engine::executableNames() const {
  std::vector<std::string> names;
  for (const auto &e : executables_)
    names.push_back(e->name());
  return names;
}

NamedTensors Engine::forward(const NamedTensors &inputs) {
  return executable("forward").run(inputs);
}

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

void Engine::setLog(std::function<void(const std::string &)> log) {
  log_ = std::move(log);
}

void Engine::train() { training_ = true; }

void Engine::eval() {
  const auto now = std::chrono::steady_clock::now();
  if (evaluated_) {
    const double e2e = std::chrono::duration<double>(now - lastEval_).count();
    const double others = e2e - generateSeconds_ - trainSeconds_;
    allSamples_ += static_cast<double>(generatedSamples_);
    allSeconds_ += e2e;
    auto share = [&](double t) { return e2e > 0 ? 100 * t / e2e : 0.0; };
    char line[512];
    std::snprintf(
        line, sizeof line,
        "|E2E latency=%.2fs |Gather latency=0.00s (0.00%%) |Generate "
        "time=%.2fs (%.2f%%) |Training time=%.2fs (%.2f%%) |Others=%.2f "
        "(%.2f%%)|CurSamplesPerSec=%.2f |AvgSamplesPerSec=%.2f "
        "|Generated tokens/s=%.0f",
        e2e, generateSeconds_, share(generateSeconds_), trainSeconds_,
        share(trainSeconds_), others, share(others),
        e2e > 0 ? generatedSamples_ / e2e : 0.0,
        allSeconds_ > 0 ? allSamples_ / allSeconds_ : 0.0,
        generateSeconds_ > 0 ? generatedTokens_ / generateSeconds_ : 0.0);
    if (log_)
      log_(line);
    else
      std::fprintf(stderr, "%s\n", line);
  }
  evaluated_ = true;
  lastEval_ = now;
  generateSeconds_ = trainSeconds_ = 0;
  generatedSamples_ = generatedTokens_ = 0;
  training_ = false;
}

namespace {

/// input_ids, `inputs` and, when given, attention_mask and labels, for an
/// executable of `exe`'s inputs (an error when it takes no mask or labels).
NamedTensors tokenInputs(const Executable &exe, const HostTensor &inputIds,
                         const HostTensor *attentionMask,
                         NamedTensors inputs = {},
                         const HostTensor *labels = nullptr) {
  inputs["input_ids"] = inputIds;
  const auto &names = exe.inputNames();
  auto takes = [&](const char *name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (attentionMask) {
    if (!takes("attention_mask"))
      throw Error(exe.name() + ": this bundle's model takes no "
                               "attention_mask");
    checkAttentionMask(*attentionMask, inputIds.shape(), exe.name());
    inputs["attention_mask"] = *attentionMask;
  }
  if (labels) {
    if (!takes("labels"))
      throw Error(exe.name() + ": this bundle's loss takes no labels "
                               "(compile it again with hybridc --train)");
    inputs["labels"] = *labels;
  }
  return exe.withDefaults(inputs);
}

} // namespace

HostTensor Engine::logprobs(const HostTensor &inputIds,
                            const HostTensor *attentionMask) {
  if (!hasExecutable("logprobs"))
    throw Error("bundle '" + bundle_->model +
                "' has no logprobs executable (compile it with hybridc "
                "--train)");
  Executable &e = executable("logprobs");
  return e.run(tokenInputs(e, inputIds, attentionMask)).at("logprobs");
}

float Engine::forwardBackward(const HostTensor &inputIds,
                              const HostTensor *attentionMask,
                              const HostTensor *labels) {
  const auto start = std::chrono::steady_clock::now();
  if (!hasExecutable("forward_backward") || !hasExecutable("step"))
    throw Error("bundle '" + bundle_->model +
                "' has no training executables (compile it with hybridc "
                "--train)");
  if (!optimizerStarted())
    initOptimizer();
  Executable &fb = executable("forward_backward");
  NamedTensors out =
      fb.run(tokenInputs(fb, inputIds, attentionMask, {}, labels));
  ++microBatches_;
  trainSeconds_ += secondsSince(start);
  return out.at("loss").as<float>()[0];
}

float Engine::accumulate(const std::string &name, const NamedTensors &inputs,
                         NamedTensors *outputs) {
  const auto start = std::chrono::steady_clock::now();
  if (!hasExecutable(name) || !hasExecutable("step")) {
    std::string known;
    for (const std::string &e : executableNames())
      if (e.size() > 16 && e.rfind("_forward_backward") == e.size() - 17)
        known += (known.empty() ? "" : ", ") + e;
    throw Error("bundle '" + bundle_->model + "' has no executable '" + name +
                "' to train with (" +
                (known.empty() ? std::string("it has no other loss; compile "
                                             "with hybridc --train --ppo")
                               : "it has " + known) +
                ")");
  }
  if (!optimizerStarted())
    initOptimizer();
  Executable &e = executable(name);
  NamedTensors out = e.run(e.withDefaults(inputs));
  ++microBatches_;
  trainSeconds_ += secondsSince(start);
  const float loss = out.at("loss").as<float>()[0];
  if (outputs)
    *outputs = std::move(out);
  return loss;
}

std::string Engine::backwardCotangent() const {
  for (const ExecutableDesc &e : bundle_->executables)
    if (e.name == "backward")
      for (const PortDesc &port : e.inputs)
        if (port.name.rfind("grad_", 0) == 0)
          return port.name;
  return {};
}

void Engine::backward(const HostTensor &inputIds, const HostTensor &cotangent,
                      const HostTensor *attentionMask) {
  const auto start = std::chrono::steady_clock::now();
  if (!hasExecutable("backward") || !hasExecutable("step"))
    throw Error("bundle '" + bundle_->model +
                "' has no backward executable (compile it with hybridc "
                "--train)");
  Executable &bw = executable("backward");
  // The cotangent's shape: input_ids' [batch, seq] and, for the logits,
  // the vocabulary.
  const std::string name = backwardCotangent();
  const ExecutableDesc &desc = bw.desc();
  const SymShape &port =
      desc.buffers.at(desc.inputs.at(bw.inputIndex(name)).buffer).shape;
  assert(port.size() >= 2 && "a cotangent is [batch, seq, ...]");
  const Shape &ids = inputIds.shape();
  if (ids.size() != 2)
    throw Error("backward: input_ids must be i64 [batch, seq], got " +
                shapeToString(ids));
  Shape expected = {ids[0], ids[1]};
  for (size_t d = 2; d < port.size(); ++d) {
    assert(port[d].constant() && "a cotangent's trailing dims are static");
    expected.push_back(*port[d].constant());
  }
  const std::string output = name.substr(5);
  if (cotangent.dtype() != DType::F32 || cotangent.shape() != expected)
    throw Error("backward: " + name + " must be f32 " +
                shapeToString(expected) + " (the " + output + " of input_ids " +
                shapeToString(ids) + "), got " + dtypeName(cotangent.dtype()) +
                " " + shapeToString(cotangent.shape()));
  if (!optimizerStarted())
    initOptimizer();
  bw.run(tokenInputs(bw, inputIds, attentionMask, {{name, cotangent}}));
  ++microBatches_;
  trainSeconds_ += secondsSince(start);
}

namespace {

const char *optimizerName(Optimizer o) {
  return o == Optimizer::Sgd ? "SGD" : "AdamW";
}

/// Throws for hyperparameters out of range (torch's and DeepSpeed's).
void checkStepConfig(const StepConfig &c, bool lossScaled) {
  const bool nonNegative =
      c.lr >= 0 && c.weightDecay >= 0 && c.maxGradNorm >= 0;
  if (c.optimizer == Optimizer::AdamW &&
      (!nonNegative || !(c.beta1 >= 0 && c.beta1 < 1) ||
       !(c.beta2 >= 0 && c.beta2 < 1) || !(c.eps > 0)))
    throw Error("step: lr, weight decay and max_grad_norm must be >= 0, "
                "betas in [0, 1), eps > 0");
  if (c.optimizer == Optimizer::Sgd) {
    if (!nonNegative || !(c.momentum >= 0) || !(c.dampening >= 0))
      throw Error("step: lr, weight decay, max_grad_norm, momentum and "
                  "dampening must be >= 0");
    if (c.nesterov && (c.momentum <= 0 || c.dampening != 0))
      throw Error("step: Nesterov momentum needs a momentum > 0 and zero "
                  "dampening");
  }
  const LossScaleConfig &l = c.lossScale;
  if (lossScaled && (l.window < 1 || l.hysteresis < 1 || !(l.minScale > 0)))
    throw Error("step: the loss scale's window and hysteresis must be >= 1 "
                "and its minimum > 0");
}

} // namespace

StepResult Engine::step(const StepConfig &config) {
  const auto start = std::chrono::steady_clock::now();
  if (!hasExecutable("step"))
    throw Error("bundle '" + bundle_->model +
                "' has no training executables (compile it with hybridc "
                "--train)");
  if (microBatches_ == 0)
    throw Error("step: no gradients accumulated (call forwardBackward or "
                "backward first)");
  const TrainPlan &plan = trainPlan_;
  if (config.optimizer != plan.optimizer)
    throw Error(std::string("step: the bundle was compiled for ") +
                optimizerName(plan.optimizer) + ", not " +
                optimizerName(config.optimizer));
  Executable &s = executable("step");
  const std::vector<std::string> &names = s.inputNames();
  const bool lossScaled =
      std::find(names.begin(), names.end(), "loss_scale_window") != names.end();
  checkStepConfig(config, lossScaled);
  if (!optimizerStarted())
    initOptimizer(config.lossScale);
  NamedTensors inputs = {
      {"lr", scalarTensor(config.lr)},
      {"weight_decay", scalarTensor(config.weightDecay)},
      {"max_grad_norm", scalarTensor(config.maxGradNorm)},
      {"grad_scale", scalarTensor(1.0f / static_cast<float>(microBatches_))}};
  if (plan.optimizer == Optimizer::Sgd) {
    inputs["momentum"] = scalarTensor(config.momentum);
    inputs["dampening"] = scalarTensor(config.dampening);
    inputs["nesterov"] = scalarTensor(config.nesterov ? 1.0f : 0.0f);
  } else {
    inputs["beta1"] = scalarTensor(config.beta1);
    inputs["beta2"] = scalarTensor(config.beta2);
    inputs["eps"] = scalarTensor(config.eps);
  }
  const LossScaleConfig &l = config.lossScale;
  if (lossScaled) {
    inputs["dynamic_loss_scale"] = scalarTensor(l.dynamic ? 1.0f : 0.0f);
    inputs["loss_scale_window"] = scalarTensor(static_cast<float>(l.window));
    inputs["hysteresis"] = scalarTensor(static_cast<float>(l.hysteresis));
    inputs["min_loss_scale"] = scalarTensor(l.minScale);
  }
  NamedTensors out = s.run(inputs);
  StepResult result;
  result.gradNorm = out.at("grad_norm").as<float>()[0];
  result.microBatches = microBatches_;
  // 0: no overflow; 1: the hysteresis absorbed one; 2: the scale shifted.
  const float overflow = lossScaled ? out.at("overflow").as<float>()[0] : 0;
  if (lossScaled) {
    result.overflow = overflow != 0;
    result.lossScale = out.at("loss_scale").as<float>()[0];
    result.nextLossScale = out.at("next_loss_scale").as<float>()[0];
    result.hysteresisLeft =
        static_cast<int64_t>(out.at("hysteresis_left").as<float>()[0]);
  }
  // The accumulators start again from zero: released, they come back
  // zero-filled with the next forwardBackward.
  for (size_t i = 0; i < states_->size(); ++i)
    if (states_->desc(i).name.rfind("opt.grad.", 0) == 0)
      states_->release(states_->desc(i).name);
  microBatches_ = 0;
  trainSeconds_ += secondsSince(start);
  // DeepSpeed's DynamicLossScaler ends the run here: nothing can be lowered.
  if (overflow == 2 && l.dynamic && result.lossScale <= l.minScale)
    throw Error("step: the gradients overflow at the minimum loss scale (" +
                std::to_string(l.minScale) +
                "): it cannot be lowered further (the step was skipped)");
  return result;
}

std::vector<std::string> Engine::emaStateNames() const {
  std::vector<std::string> names;
  if (emaEnabled())
    for (const ParamDesc &p : bundle_->params)
      names.push_back("ema." + p.name);
  return names;
}

void Engine::enableEma(float beta) {
  if (!(beta >= 0.0f && beta <= 1.0f))
    throw Error("enableEma: beta " + std::to_string(beta) +
                " is outside [0, 1]");
  if (!weights_->bound())
    throw Error("enableEma: bind the weights first (the average starts from "
                "them)");
  for (size_t i = 0; i < weights_->size(); ++i) {
    const std::string name = "ema." + weights_->name(i);
    if (!states_->find(name))
      states_->add({name, DType::F32, std::nullopt});
    // Zero-filled; lerp with beta 0 then writes the weight itself.
    states_->release(name);
    states_->allocate(name, weights_->shape(i));
  }
  emaBeta_ = 0.0f;
  updateEma();
  emaBeta_ = beta;
}

void Engine::updateEma() {
  if (!emaEnabled())
    throw Error("updateEma: no moving average (call enableEma first)");
  std::vector<EmaWeight> weights;
  weights.reserve(weights_->size());
  for (size_t i = 0; i < weights_->size(); ++i) {
    DeviceTensor ema = states_->tensor("ema." + weights_->name(i));
    weights.push_back({static_cast<float *>(ema.data), weights_->data(i),
                       weights_->dtype(i), numElements(ema.shape)});
  }
  device_->emaUpdate(weights, emaBeta_, device_->defaultStream());
}

DeviceTensor Engine::state(const std::string &name) {
  return states_->tensor(name);
}

void Engine::allocateState(const std::string &name, const Shape &shape) {
  states_->allocate(name, shape);
}

void Engine::releaseState(const std::string &name) { states_->release(name); }

void Engine::synchronize() { device_->synchronize(); }

} // namespace hybrid
