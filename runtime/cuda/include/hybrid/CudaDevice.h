// The CUDA device backend: one GPU's memory (a caching allocator, or CUDA's
// stream-ordered pool with HYBRID_CUDA_ALLOCATOR=async), streams,
// events, pinned-staged host copies, and commands bound to the kernels of
// kernels/cuda. Plain C++ over the CUDA runtime API; this header keeps CUDA's
// own headers out, so code using it compiles without them.
#pragma once

#include "hybrid/Device.h"

#include <cstdint>
#include <memory>
#include <string>

// Opaque CUDA handles (cudaStream_t is CUstream_st *).
struct CUstream_st;

namespace hybrid {

/// What the CUDA device's allocator holds besides what callers use (those
/// figures are MemoryStats). With HYBRID_CUDA_ALLOCATOR=async the driver's
/// figures are the pool's: reserved memory, requests that grew it, trims
/// that shrank it.
struct CudaCacheStats {
  size_t reservedBytes = 0;       ///< held from the driver (in use + cached)
  size_t cachedBytes = 0;         ///< held from the driver, not handed out
  size_t peakReservedBytes = 0;   ///< the most held from the driver at once
  uint64_t driverAllocations = 0; ///< cudaMalloc calls that succeeded
  uint64_t driverFrees = 0;       ///< cudaFree calls
  uint64_t cacheHits = 0;         ///< allocate() served from the cache
};

/// The peers of a collective (ops::Collective). The device holds one per
/// communicator name an executable declares; without one, a collective has
/// a single rank and is a device-to-device copy. NCCL communicators
/// implement this later (one process per GPU, torchrun-style environment).
///
/// Ownership: shared by the device and whoever created it. Thread safety:
/// run() is called by one host thread at a time per stream.
class CudaCommunicator {
public:
  virtual ~CudaCommunicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Enqueues the collective `kind` from `in` (`inBytes`) to `out`
  /// (`outBytes`), elements of `dtype`, on `stream`. Throws hybrid::Error.
  virtual void run(CollectiveKind kind, const void *in, size_t inBytes,
                   void *out, size_t outBytes, DType dtype,
                   CUstream_st *stream) = 0;
};

/// One CUDA device ("cuda:N").
///
/// Memory: every allocation of every engine and executable on the device
/// goes through one allocator, chosen when the device is made by
/// HYBRID_CUDA_ALLOCATOR: "caching" (the default) or "async". The caching
/// allocator rounds requests (to 512 bytes up to 1 MiB, to 2 MiB above)
/// and serves them from cudaMalloc'd blocks that deallocate() returns to a
/// cache rather than to the driver, best fit by size. "async" serves them
/// from a stream-ordered memory pool of the device's own
/// (cudaMallocFromPoolAsync), which keeps what it reserved until trim().
/// With either, a block freed while the device may still be using it is
/// reused only after a device synchronisation (the allocator does one when
/// it needs such a block), so freeing memory enqueued work still reads is
/// safe; trim() gives what is held and not handed out back to the driver,
/// and an allocation the driver refuses trims and retries before it fails
/// with a hybrid::Error naming the size, the failed call and the device's
/// free and total memory. MemoryStats count what callers hold (requested
/// bytes), the same figures whichever the allocator; what it holds from
/// the driver is cacheStats(). With HYBRID_CUDA_ALLOCATOR_REPORT=1 the
/// device prints both peaks to stderr when it is destroyed.
///
/// Streams are non-blocking CUDA streams (the device's default stream is
/// its own, never the legacy NULL stream); events are created without
/// timing. record/wait/synchronize are cudaEventRecord,
/// cudaStreamWaitEvent and cudaStreamSynchronize / cudaDeviceSynchronize.
///
/// Host copies go through pinned staging buffers the device owns:
/// copyHostToDevice has read `src` when it returns (the caller may reuse or
/// free it at once; the copy to the device is still enqueued), and
/// copyDeviceToHost writes `dst` when the stream reaches the copy, so `dst`
/// must stay valid until then (synchronize). A staging buffer is reused
/// only once its last copy completed (an event says when); when every one
/// is busy the call waits for the oldest. Copies from or to host memory are
/// for the host edge, not for stream capture.
///
/// Commands run the kernels of kernels/cuda (cuda::findKernel), sharing one
/// cuda::Context (cuBLASLt handle, properties) made for the device at
/// construction. An op without a CUDA kernel fails in prepare(), naming the
/// op and the command's loc. Errors of CUDA calls are hybrid::Error naming
/// the device, the call and CUDA's error string, on one line.
///
/// With HYBRID_CUDA_PROFILE=1 in the environment, every kernel command is
/// timed on the GPU (two events around it, waited for) and the device
/// prints the time per op and shapes to stderr when it is destroyed; graphs
/// are off then.
///
/// Every entry point makes the device current for its CUDA calls and
/// restores the caller's current device, so a thread may use another
/// device in between.
///
/// Ownership as for Device (shared). Thread safety: allocate, deallocate,
/// memoryStats, cacheStats, trim and the copies may be called from several
/// threads; kernel launches through prepared commands are serialised on the
/// device's context; a stream is used by one thread at a time.
class CudaDevice : public Device {
public:
  /// Selects device `ordinal`. Throws hybrid::Error when there is no CUDA
  /// device (naming why: no driver, no GPU), no such ordinal, or
  /// HYBRID_CUDA_ALLOCATOR names no allocator.
  explicit CudaDevice(int ordinal = 0);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  /// How many CUDA devices this process sees (0 without a driver or GPU).
  /// When 0 and `why` is given, it says why, in CUDA's words.
  static int deviceCount(std::string *why = nullptr);

  std::string name() const override;
  bool hostAddressable() const override { return false; }
  int ordinal() const { return ordinal_; }

  void *allocate(size_t bytes, size_t alignment = 256) override;
  void deallocate(void *ptr) override;
  MemoryStats memoryStats() const override;
  CudaCacheStats cacheStats() const;
  /// The allocator in use: "caching" or "async" (HYBRID_CUDA_ALLOCATOR).
  std::string allocatorKind() const;
  /// Gives every cached block (the pool's unused reservation) back to the
  /// driver, waiting for the device first if some were freed while it may
  /// have been busy. Returns the bytes released.
  size_t trim();

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
  /// Overlapping ranges are copied as memmove would.
  void copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                          Stream &stream) override;
  void fillZero(void *dst, size_t bytes, Stream &stream) override;
  void emaUpdate(const std::vector<EmaWeight> &weights, float beta,
                 Stream &stream) override;

  /// CUDA graphs: stream capture in thread-local mode, instantiated once;
  /// launch is cudaGraphLaunch. Not while HYBRID_CUDA_PROFILE times every
  /// kernel (that waits after each launch).
  bool supportsGraphs() const override;
  void resetProfile() override;
  std::unique_ptr<Graph> capture(Stream &stream,
                                 const std::function<void()> &enqueue) override;
  /// Step tuning of the GEMM plans the captured work uses
  /// (runtime/cuda/src/StepTuner.h); off with HYBRID_CUDA_STEP_TUNE=0.
  std::unique_ptr<Graph> captureTuned(Stream &stream,
                                      const std::function<void()> &enqueue,
                                      const StepState &state) override;
  void launch(Graph &graph, Stream &stream) override;
  /// Options step tuning has timed in captured steps so far (for tests and
  /// logs; 0 with HYBRID_CUDA_STEP_TUNE=0).
  size_t stepTuningTrials() const;

  std::unique_ptr<PreparedCommand> prepare(const CommandDesc &command,
                                           const ExecutableDesc &exe) override;

  /// Collectives of executables naming communicator `name` go to `comm`
  /// (set before loading them; null removes it).
  void setCommunicator(const std::string &name,
                       std::shared_ptr<CudaCommunicator> comm);

  /// The cudaStream_t behind a stream of this device (graph capture,
  /// interop). Throws hybrid::Error for a stream of another backend.
  static CUstream_st *nativeStream(Stream &stream);

private:
  struct Impl;
  int ordinal_;
  std::unique_ptr<Impl> impl_;
};

/// The operands of `command` (bit i: operand i) that its kernel may read
/// before the kernel before it on the stream has finished
/// (cuda::CudaCall::settledOperands): constants, and parameters of an
/// executable that only reads them, except on the first kernel of the
/// command's stream in `exe` (the kernel before that one may belong to
/// another executable, e.g. an optimizer step writing the parameters;
/// every later kernel starts after the first one's wait has seen it
/// finish). `exe` is valid (its alias chains are followed) and `command`
/// is an element of exe.commands (for any other reference nothing is
/// settled).
uint32_t settledOperands(const CommandDesc &command, const ExecutableDesc &exe);

} // namespace hybrid
