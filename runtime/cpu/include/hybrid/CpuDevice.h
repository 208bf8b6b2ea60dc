// The CPU device backend: host memory and the reference kernels of
// hybrid_kernels_cpu. The numerical oracle, and what CI runs.
#pragma once

#include "hybrid/Device.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace hybrid {

/// The peers of a collective (ops::Collective) on CPU devices, e.g. ranks
/// that are threads of one process (how partitioned executables are tested
/// on the CPU). The device holds one per communicator name an executable
/// declares; without one, a collective has a single rank and is a copy.
///
/// Ownership: shared by the device and whoever created it. Thread safety:
/// run() is called by the thread that runs the executable (one per rank).
class CpuCommunicator {
public:
  virtual ~CpuCommunicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Runs the collective `kind` from `in` (`inBytes`) to `out`
  /// (`outBytes`), elements of `dtype`; returns once `out` holds this
  /// rank's result. Throws hybrid::Error.
  virtual void run(CollectiveKind kind, const void *in, size_t inBytes,
                   void *out, size_t outBytes, DType dtype) = 0;
};

/// Streams run their work at once, in order, on the calling thread (so
/// events need no recording and waiting is free); memory is aligned host
/// memory. Collectives have one rank, each a copy, unless a communicator
/// is set for their name.
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
  void emaUpdate(const std::vector<EmaWeight> &weights, float beta,
                 Stream &stream) override;

  std::unique_ptr<PreparedCommand> prepare(const CommandDesc &command,
                                           const ExecutableDesc &exe) override;

  /// Runs the collectives of executables prepared from now on that name
  /// communicator `name` through `comm` (null: one rank again).
  void setCommunicator(const std::string &name,
                       std::shared_ptr<CpuCommunicator> comm);

private:
  std::mutex communicatorsMutex_; // guards communicators_
  std::map<std::string, std::shared_ptr<CpuCommunicator>> communicators_;
  std::unique_ptr<Stream> default_;
  size_t physicalBytes_ = SIZE_MAX; // the machine's memory, when known
  mutable std::mutex mutex_;        // guards stats_ and sizes_
  MemoryStats stats_;
  std::unordered_map<void *, size_t> sizes_;
  std::atomic<uint64_t> bytesCopied_{0}; // MemoryStats::bytesCopied
};

} // namespace hybrid
