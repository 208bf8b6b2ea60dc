// The CPU device backend: host memory and the reference kernels of
// hybrid_kernels_cpu. The numerical oracle, and what CI runs.
#pragma once

#include "hybrid/Device.h"

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace hybrid {

/// Streams run their work at once, in order, on the calling thread (so
/// events need no recording and waiting is free); memory is aligned host
/// memory. Collectives have one rank: each is a copy.
///
/// Ownership as for Device. Thread safety: allocate, deallocate and
/// memoryStats may be called from any thread; the kernel thread count is
/// process-wide (hybrid::cpu::setNumThreads).
class CpuDevice : public Device {
public:
  /// `threads` = kernel worker threads; 0 keeps the library's default.
  explicit CpuDevice(int threads = 0);
  ~CpuDevice() override;

  std::string name() const override { return "cpu"; }
  bool hostAddressable() const override { return true; }

  void *allocate(size_t bytes, size_t alignment = 256) override;
  void deallocate(void *ptr) override;
  MemoryStats memoryStats() const override;

  Stream &defaultStream() override;
  std::unique_ptr<Stream> createStream() override;
  std::unique_ptr<Event> createEvent() override;
  void record(Event &event, Stream &stream) override;
  void wait(Stream &stream, Event &event) override;
  void synchronize(Stream &stream) override;
  void synchronize() override;

  void copyHostToDevice(void *dst, const void *src, size_t bytes,
                        Stream &stream) override;
  void copyDeviceToHost(void *dst, const void *src, size_t bytes,
                        Stream &stream) override;
  void copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                          Stream &stream) override;
  void fillZero(void *dst, size_t bytes, Stream &stream) override;

  std::unique_ptr<PreparedCommand> prepare(const CommandDesc &command,
                                           const ExecutableDesc &exe) override;

private:
  std::unique_ptr<Stream> default_;
  size_t physicalBytes_ = SIZE_MAX; // the machine's memory, when known
  mutable std::mutex mutex_;        // guards stats_ and sizes_
  MemoryStats stats_;
  std::unordered_map<void *, size_t> sizes_;
};

} // namespace hybrid
