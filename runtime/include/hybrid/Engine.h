// The engine: a bundle's executables on one device, sharing one weight store.
// Minimal for now: load weights and run "forward".
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"
#include "hybrid/Executable.h"
#include "hybrid/HostTensor.h"
#include "hybrid/WeightStore.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hybrid {

/// Ownership: an Engine shares the bundle and the device (several engines
/// may share both: actor, critic, reference...) and owns its weight store
/// and loaded executables. Movable, not copyable; addresses of weights()
/// and executable() stay valid across moves.
///
/// Thread safety: an Engine is used by one thread at a time. Different
/// engines may run concurrently on the CPU device (kernel threads are
/// process-wide).
class Engine {
public:
  /// Validates the bundle and loads all of its executables on `device`
  /// (resolving every kernel: an unknown one fails here, not mid-run). The
  /// weights start unbound. Throws hybrid::Error.
  static Engine create(std::shared_ptr<const BundleDesc> bundle,
                       std::shared_ptr<Device> device);
  static Engine create(BundleDesc bundle, std::shared_ptr<Device> device);

  Engine(Engine &&) noexcept;
  Engine &operator=(Engine &&) noexcept;
  ~Engine();

  /// Binds the weights from `path`: an .onnx model (its initializers), or a
  /// safetensors checkpoint (file, folder with model.safetensors, or a
  /// sharded checkpoint's index). `allowedExtra` lists checkpoint tensors
  /// that may be present without being parameters (safetensors only), in
  /// addition to the bundle's tied names.
  void loadWeights(const std::string &path,
                   const std::set<std::string> &allowedExtra = {});
  /// Deterministic demo weights (see WeightStore::initRandom).
  void initRandom(uint64_t seed);

  /// Runs the "forward" executable: inputs by name (e.g. input_ids i64
  /// [batch, seq]) to outputs by name (e.g. logits f32 [batch, seq, vocab]).
  NamedTensors forward(const NamedTensors &inputs);

  const BundleDesc &bundle() const { return *bundle_; }
  Device &device() const { return *device_; }
  WeightStore &weights() { return *weights_; }
  const WeightStore &weights() const { return *weights_; }
  /// The executable named `name`; throws hybrid::Error listing the
  /// available ones when absent.
  Executable &executable(const std::string &name);
  bool hasExecutable(const std::string &name) const;

private:
  Engine() = default;
  std::shared_ptr<const BundleDesc> bundle_;
  std::shared_ptr<Device> device_;
  std::unique_ptr<WeightStore> weights_;
  std::vector<std::unique_ptr<Executable>> executables_;
};

} // namespace hybrid
