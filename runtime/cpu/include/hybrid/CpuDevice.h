// The CPU device backend: host memory and the float32 reference kernels of
// hybrid_kernels_cpu. The numerical oracle, and what CI runs.
#pragma once

#include "hybrid/Device.h"

namespace hybrid {

/// Ownership and thread safety as for Device. The kernel thread count is
/// process-wide (hybrid::cpu::setNumThreads).
class CpuDevice : public Device {
public:
  /// `threads` = kernel worker threads; 0 keeps the library's default.
  explicit CpuDevice(int threads = 0);

  std::string name() const override { return "cpu"; }
  bool hostAddressable() const override { return true; }
  void *allocate(size_t bytes, size_t alignment = 64) override;
  void deallocate(void *ptr) override;
  void copyHostToDevice(void *dst, const void *src, size_t bytes) override;
  void copyDeviceToHost(void *dst, const void *src, size_t bytes) override;
  void copyDeviceToDevice(void *dst, const void *src, size_t bytes) override;
  void fillZero(void *dst, size_t bytes) override;
  void synchronize() override {}
  std::unique_ptr<PreparedCommand> prepare(const CommandDesc &command,
                                           const ExecutableDesc &exe) override;
};

} // namespace hybrid
