// A loaded executable: a bundle's static command list bound to a device, its
// kernels resolved and its memory plan ready to evaluate for each call.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"
#include "hybrid/HostTensor.h"
#include "hybrid/WeightStore.h"

#include <memory>
#include <string>
#include <vector>

namespace hybrid {

/// Loading resolves every command's kernel once (an unknown kernel is a
/// hybrid::Error naming it and its loc), converts attributes once, uploads
/// the constants the executable uses and flattens the symbolic memory plan.
///
/// A call binds the symbols from the inputs' shapes (a dimension that is
/// exactly one symbol binds it; every other dimension must then match),
/// evaluates every buffer's shape and workspace offset (only when the symbol
/// values differ from the previous call's), grows the workspace if needed
/// (it is kept between calls), allocates the outputs and runs the commands
/// in order. No name is looked up per command.
///
/// Ownership: shares the bundle and the device; reads parameters from a
/// WeightStore the caller keeps alive (and bound) while the executable runs;
/// owns its workspace, constants and prepared commands. Thread safety: run()
/// must not be called concurrently on one Executable (it reuses its
/// workspace); const accessors may be.
class Executable {
public:
  Executable(std::shared_ptr<const BundleDesc> bundle, size_t index,
             std::shared_ptr<Device> device, const WeightStore &weights);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const std::string &name() const;
  const ExecutableDesc &desc() const;
  const std::vector<std::string> &inputNames() const;
  const std::vector<std::string> &outputNames() const;
  /// "input_ids: i64 [batch,seq]" style description of input or output port i.
  std::string describeInput(size_t i) const;
  std::string describeOutput(size_t i) const;

  /// Runs with inputs by name (exactly the executable's inputs) and returns
  /// the outputs by name, in host memory. Throws hybrid::Error for a
  /// missing, unexpected or mis-shaped input, a wrong dtype, an unbound
  /// symbol, or a failing kernel (naming the command).
  NamedTensors run(const NamedTensors &inputs);
  /// The same with inputs and outputs in port order.
  std::vector<HostTensor> run(const std::vector<HostTensor> &inputs);

  /// The symbol values the plan was last evaluated for (empty before the
  /// first call), in the order of desc().symbols.
  const std::vector<int64_t> &symbolValues() const;
  /// Bytes of workspace currently allocated.
  size_t workspaceCapacity() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace hybrid
