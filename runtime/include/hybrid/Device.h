// Device backends: where an executable's memory lives and how its commands
// run. The CPU backend (CpuDevice.h) is the reference; a CUDA backend
// implements the same interface.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace hybrid {

/// A buffer as a backend sees it during one call: a device address and a
/// concrete shape.
struct BufferView {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
};

/// One command of an executable, bound to a backend kernel. Built once at
/// load time by Device::prepare; run many times.
///
/// Ownership: owned by the executable that prepared it. Thread safety: run()
/// is called by one thread at a time.
class PreparedCommand {
public:
  virtual ~PreparedCommand() = default;
  /// Runs the kernel on the executable's buffers for this call. `buffers` is
  /// indexed by buffer number (the command's operands and results index
  /// it). `shapesChanged` is false when every shape equals
  /// the previous call's, so the command may keep what it derived from them.
  /// Throws hybrid::Error (without command context; the caller adds it).
  virtual void run(const std::vector<BufferView> &buffers,
                   bool shapesChanged) = 0;
};

/// A device backend.
///
/// Ownership: shared (std::shared_ptr) by the weight store, executables and
/// engines that use it; memory it hands out must be returned with
/// deallocate() to the same device. Thread safety: allocate/deallocate/copy
/// may be called from several threads; prepared commands are run by one
/// thread at a time.
class Device {
public:
  virtual ~Device() = default;

  /// "cpu", "cuda:0", ...
  virtual std::string name() const = 0;
  /// True when device memory is ordinary host memory (the CPU backend):
  /// callers may then read and write it directly and skip staging copies.
  virtual bool hostAddressable() const = 0;

  /// `bytes` of device memory aligned to `alignment` (a power of two, at
  /// least 64 is used). Throws hybrid::Error when out of memory. Zero bytes
  /// still returns a distinct, valid address.
  virtual void *allocate(size_t bytes, size_t alignment = 64) = 0;
  virtual void deallocate(void *ptr) = 0;

  virtual void copyHostToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyDeviceToHost(void *dst, const void *src, size_t bytes) = 0;
  virtual void copyDeviceToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual void fillZero(void *dst, size_t bytes) = 0;
  /// Waits until all work issued so far has finished.
  virtual void synchronize() = 0;

  /// Resolves the kernel of `command` (of executable `exe`) and converts its
  /// attributes, once. Throws hybrid::Error naming the kernel and the
  /// command's loc when this backend has no such kernel.
  virtual std::unique_ptr<PreparedCommand>
  prepare(const CommandDesc &command, const ExecutableDesc &exe) = 0;
};

/// Device memory released on destruction (move-only).
class DeviceAllocation {
public:
  DeviceAllocation() = default;
  DeviceAllocation(std::shared_ptr<Device> device, size_t bytes,
                   size_t alignment = 64)
      : device_(std::move(device)), bytes_(bytes),
        ptr_(device_->allocate(bytes, alignment)) {}
  DeviceAllocation(DeviceAllocation &&o) noexcept { *this = std::move(o); }
  DeviceAllocation &operator=(DeviceAllocation &&o) noexcept {
    if (this != &o) {
      reset();
      device_ = std::move(o.device_);
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  DeviceAllocation(const DeviceAllocation &) = delete;
  DeviceAllocation &operator=(const DeviceAllocation &) = delete;
  ~DeviceAllocation() { reset(); }

  void *get() const { return ptr_; }
  size_t size() const { return bytes_; }
  void reset() {
    if (ptr_)
      device_->deallocate(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }

private:
  std::shared_ptr<Device> device_;
  size_t bytes_ = 0;
  void *ptr_ = nullptr;
};

} // namespace hybrid
