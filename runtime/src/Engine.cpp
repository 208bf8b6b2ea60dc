// The engine: one weight store, one state store and the executables that
// use them.
#include "hybrid/Engine.h"

#include "hybrid/Bundle.h"

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

DeviceTensor Engine::state(const std::string &name) {
  return states_->tensor(name);
}

void Engine::allocateState(const std::string &name, const Shape &shape) {
  states_->allocate(name, shape);
}

void Engine::releaseState(const std::string &name) { states_->release(name); }

void Engine::synchronize() { device_->synchronize(); }

} // namespace hybrid
