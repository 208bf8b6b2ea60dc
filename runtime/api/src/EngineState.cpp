// Host copies of engine state, selected by the optimizer's naming of it.
#include "hybrid/EngineState.h"

namespace hybrid {

namespace {

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// Every allocated state whose name starts with `prefix` (and not with
/// `except`, when given), renamed by `rename`.
template <typename Rename>
NamedTensors statesWithPrefix(Engine &engine, const std::string &prefix,
                              const std::string &except, Rename rename) {
  NamedTensors out;
  StateStore &states = engine.states();
  for (size_t i = 0; i < states.size(); ++i) {
    const std::string &name = states.desc(i).name;
    if (!startsWith(name, prefix) ||
        (!except.empty() && startsWith(name, except)) ||
        !states.allocated(name))
      continue;
    out[rename(name)] = copyStateToHost(engine, name);
  }
  return out;
}

} // namespace

HostTensor copyStateToHost(Engine &engine, const std::string &name) {
  DeviceTensor t = engine.state(name);
  HostTensor host = HostTensor::allocate(t.dtype, t.shape);
  Device &device = engine.device();
  device.copyDeviceToHost(host.data(), t.data, t.bytes(),
                          device.defaultStream());
  device.synchronize(device.defaultStream());
  return host;
}

void copyStateFromHost(Engine &engine, const std::string &name,
                       const HostTensor &value) {
  const std::optional<size_t> index = engine.states().find(name);
  if (!index)
    throw Error("bundle '" + engine.bundle().model + "' has no state '" + name +
                "'");
  const DType dtype = engine.states().desc(*index).dtype;
  if (value.dtype() != dtype)
    throw Error("state '" + name + "' is " + dtypeName(dtype) + ", not " +
                dtypeName(value.dtype()));
  engine.allocateState(name, value.shape());
  DeviceTensor t = engine.state(name);
  Device &device = engine.device();
  device.copyHostToDevice(t.data, value.data(), value.bytes(),
                          device.defaultStream());
  device.synchronize(device.defaultStream());
}

NamedTensors emaWeights(Engine &engine) {
  return statesWithPrefix(engine, "ema.", "", [](const std::string &name) {
    return name.substr(4);
  });
}

NamedTensors accumulatedGradients(Engine &engine) {
  const std::string prefix = "opt.grad.";
  return statesWithPrefix(engine, prefix, "", [&](const std::string &name) {
    return "grad." + name.substr(prefix.size());
  });
}

NamedTensors masterWeights(Engine &engine) {
  return statesWithPrefix(engine, "opt.master.", "",
                          [](const std::string &name) { return name; });
}

NamedTensors optimizerState(Engine &engine) {
  return statesWithPrefix(engine, "opt.", "opt.grad.",
                          [](const std::string &name) { return name; });
}

} // namespace hybrid
