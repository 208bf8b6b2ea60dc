// Pinned host staging for the CUDA device's host copies: the caller's
// memory may be ordinary pageable memory and a copy still only enqueues
// (cudaMemcpyAsync from pageable memory would wait for the stream).
#pragma once

#include <cuda_runtime.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hybrid::cudabackend {

/// Two pools of pinned buffers, made on demand up to a limit: small ones
/// (64 KiB) for copies that fit them, so token ids and other small inputs
/// do not hold large buffers, and large ones (8 MiB) that big copies go
/// through chunk by chunk. Each buffer has an event recorded after its
/// last copy (and, towards the host, after the host function that copies
/// it out), and is handed out again only once that event completed; when
/// every buffer of a pool is busy, the oldest is waited for.
///
/// toDevice reads `src` before it returns. toHost writes `dst` from a host
/// function the stream runs after the copy (cudaLaunchHostFunc), so `dst`
/// must stay valid until the stream has passed it.
///
/// Ownership: owned by one CudaDevice; owns the pinned memory and events.
/// Thread safety: toDevice and toHost may be called from several threads.
class HostStaging {
public:
  HostStaging(int ordinal, std::string device);
  /// Waits for copies still in flight, then frees the buffers.
  ~HostStaging();
  HostStaging(const HostStaging &) = delete;
  HostStaging &operator=(const HostStaging &) = delete;

  void toDevice(void *dst, const void *src, size_t bytes, cudaStream_t stream);
  void toHost(void *dst, const void *src, size_t bytes, cudaStream_t stream);

  /// Pinned bytes held (for tests).
  size_t pinnedBytes() const;

  static constexpr size_t kSmallBytes = size_t(64) << 10;
  static constexpr size_t kSmallCount = 64;
  static constexpr size_t kLargeBytes = size_t(8) << 20;
  static constexpr size_t kLargeCount = 32;

private:
  struct Buffer {
    void *host = nullptr;
    size_t bytes = 0;
    cudaEvent_t done = nullptr;
    bool held = false;     // a thread is filling or enqueueing it
    bool recorded = false; // `done` marks its last use
    uint64_t order = 0;    // when it was last released, for "oldest"
    // The copy-out a pending host function does (towards the host).
    void *copyTo = nullptr;
    size_t copyBytes = 0;
  };
  struct Pool {
    size_t bufferBytes, maxBuffers;
    std::vector<std::unique_ptr<Buffer>> buffers;
  };

  Buffer *acquire(Pool &pool);
  void release(Buffer *buffer, bool recorded);
  static void copyOut(void *buffer);

  int ordinal_;
  std::string device_;
  mutable std::mutex mutex_; // guards the pools' bookkeeping
  std::condition_variable released_;
  Pool small_{kSmallBytes, kSmallCount, {}};
  Pool large_{kLargeBytes, kLargeCount, {}};
  uint64_t order_ = 0;
};

} // namespace hybrid::cudabackend
