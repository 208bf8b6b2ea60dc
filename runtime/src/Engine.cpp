// The engine: one weight store, one state store and the executables that
// use them.
#include "hybrid/Engine.h"

#include "hybrid/Bundle.h"

#include <algorithm>
#include <cstdio>

namespace hybrid {

Engine Engine::create(std::shared_ptr<const BundleDesc> bundle,
                      std::shared_ptr<Device> device) {
  if (!bundle)
    throw Error("Engine::create: no bundle");
  if (!device)
    throw Error("Engine::create: no device");
  validateBundle(*bundle, "bundle '" + bundle->model + "'");
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
  auto endsWith = [&](const char *suffix) {
    std::string s(suffix);
    return path.size() >= s.size() &&
           path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (endsWith(".onnx"))
    weights_->bindFromOnnx(path);
  else {
    std::set<std::string> extra = allowedExtra;
    extra.insert(bundle_->tied.begin(), bundle_->tied.end());
    weights_->bindFromSafeTensors(path, extra);
  }
}

void Engine::initRandom(uint64_t seed) { weights_->initRandom(seed); }

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

HostTensor scalarTensor(float v) {
  return HostTensor::fromVector<float>({1}, {v});
}

} // namespace

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

/// input_ids and, when given, attention_mask, for an executable of `exe`'s
/// inputs (an error when it takes no mask).
NamedTensors tokenInputs(const Executable &exe, const HostTensor &inputIds,
                         const HostTensor *attentionMask) {
  NamedTensors inputs = {{"input_ids", inputIds}};
  if (attentionMask) {
    const auto &names = exe.inputNames();
    if (std::find(names.begin(), names.end(), "attention_mask") == names.end())
      throw Error(exe.name() + ": this bundle's model takes no "
                               "attention_mask");
    inputs["attention_mask"] = *attentionMask;
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
                              const HostTensor *attentionMask) {
  const auto start = std::chrono::steady_clock::now();
  if (!hasExecutable("forward_backward") || !hasExecutable("step"))
    throw Error("bundle '" + bundle_->model +
                "' has no training executables (compile it with hybridc "
                "--train)");
  Executable &fb = executable("forward_backward");
  NamedTensors out = fb.run(tokenInputs(fb, inputIds, attentionMask));
  ++microBatches_;
  trainSeconds_ += secondsSince(start);
  return out.at("loss").as<float>()[0];
}

StepResult Engine::step(const StepConfig &config) {
  const auto start = std::chrono::steady_clock::now();
  if (!hasExecutable("step"))
    throw Error("bundle '" + bundle_->model +
                "' has no training executables (compile it with hybridc "
                "--train)");
  if (microBatches_ == 0)
    throw Error("step: no gradients accumulated (call forwardBackward "
                "first)");
  if (!(config.lr >= 0) || !(config.beta1 >= 0 && config.beta1 < 1) ||
      !(config.beta2 >= 0 && config.beta2 < 1) || !(config.eps > 0) ||
      !(config.weightDecay >= 0) || !(config.maxGradNorm >= 0))
    throw Error("step: lr, weight decay and max_grad_norm must be >= 0, "
                "betas in [0, 1), eps > 0");
  Executable &s = executable("step");
  NamedTensors inputs = {
      {"lr", scalarTensor(config.lr)},
      {"beta1", scalarTensor(config.beta1)},
      {"beta2", scalarTensor(config.beta2)},
      {"eps", scalarTensor(config.eps)},
      {"weight_decay", scalarTensor(config.weightDecay)},
      {"max_grad_norm", scalarTensor(config.maxGradNorm)},
      {"grad_scale", scalarTensor(1.0f / static_cast<float>(microBatches_))}};
  NamedTensors out = s.run(inputs);
  StepResult result;
  result.gradNorm = out.at("grad_norm").as<float>()[0];
  result.microBatches = microBatches_;
  // The accumulators start again from zero: released, they come back
  // zero-filled with the next forwardBackward.
  for (size_t i = 0; i < states_->size(); ++i)
    if (states_->desc(i).name.rfind("opt.grad.", 0) == 0)
      states_->release(states_->desc(i).name);
  microBatches_ = 0;
  trainSeconds_ += secondsSince(start);
  return result;
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
