// The CUDA device's caching allocator: cudaMalloc'd blocks kept in a cache
// by size when callers free them, so steady-state allocation never reaches
// the driver (which would also synchronise the device on cudaFree).
#pragma once

#include "hybrid/CudaDevice.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hybrid::cudabackend {

/// Blocks are never split: a request is rounded (512 bytes up to 1 MiB,
/// 2 MiB above) and served by the smallest cached block of its class that
/// is at least that big and wastes at most a quarter of it (small blocks
/// never serve large requests nor the other way round), else by a new
/// cudaMalloc. cudaMalloc's 256-byte alignment covers the default; larger
/// alignments over-allocate and offset the returned address.
///
/// A freed block may still be read or written by work enqueued before the
/// free, on any stream. It waits in `pending_` until the device has been
/// synchronised after the free (deviceSynchronized(), or a synchronisation
/// the allocator makes itself when a request needs a pending block), and
/// only then becomes reusable.
///
/// Ownership: owned by one CudaDevice; owns every block. Thread safety: all
/// methods may be called from any thread (one mutex).
class CachingAllocator {
public:
  CachingAllocator(int ordinal, std::string device);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  void *allocate(size_t bytes, size_t alignment);
  void deallocate(void *ptr);
  size_t trim();

  /// A ticket to take before a device-wide synchronisation; pass it to
  /// deviceSynchronized() after, which makes every block freed before the
  /// ticket reusable.
  uint64_t syncTicket() const;
  void deviceSynchronized(uint64_t ticket);

  MemoryStats stats() const;
  CudaCacheStats cacheStats() const;

  /// The size a request of `bytes` takes from the cache (for tests).
  static size_t roundSize(size_t bytes);

  static constexpr size_t kSmallLimit = size_t(1) << 20;
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kLargeRound = size_t(2) << 20;

private:
  struct Live {
    void *base;
    size_t blockBytes;
    size_t requested;
  };
  struct Pending {
    void *base;
    size_t blockBytes;
    uint64_t freeSeq;
  };

  void *takeCachedLocked(size_t &blockBytes);
  bool pendingFitsLocked(size_t blockBytes) const;
  void synchronizeLocked();
  size_t trimLocked();
  [[noreturn]] void outOfMemory(size_t bytes, size_t blockBytes,
                                size_t released, size_t inUse);

  int ordinal_;
  std::string device_;
  mutable std::mutex mutex_;              // guards everything below
  std::multimap<size_t, void *> cached_;  // block bytes -> base; reusable
  std::vector<Pending> pending_;          // freed, maybe still in use
  std::unordered_map<void *, Live> live_; // by the address handed out
  uint64_t nextFreeSeq_ = 0;
  MemoryStats stats_;
  CudaCacheStats cache_;
};

} // namespace hybrid::cudabackend
