// Where a CUDA device's memory comes from, behind one interface: what both
// implementations (CachingAllocator, AsyncPoolAllocator) must keep, and the
// choice between them (HYBRID_CUDA_ALLOCATOR).
#pragma once

#include "hybrid/CudaDevice.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hybrid::cudabackend {

/// A piece of device memory as an implementation obtained it.
struct Block {
  void *base = nullptr;
  size_t bytes = 0;
};

/// The contract the runtime relies on, kept here once: `allocate` hands out
/// at least the bytes asked for at the alignment asked for (a power of two;
/// at least 256), a distinct address even for zero bytes; MemoryStats count
/// the bytes callers asked for (so hybrid-run's peak means the same whatever
/// the implementation); a block freed while work enqueued before the free
/// may still use it waits in `pending_` until a device synchronisation
/// (deviceSynchronized(), or one the allocator makes itself) and only then
/// goes back to the implementation (reuseLocked); out of memory is one
/// hybrid::Error naming the size, the call that failed and the device's
/// free memory (outOfMemory), thrown once a trim and a retry failed.
///
/// Implementations say where blocks come from (obtainLocked), what becomes
/// of blocks callers no longer use (reuseLocked, trimLocked) and how much
/// they hold from CUDA (reservedLocked).
///
/// Ownership: owned by one CudaDevice; owns every block. Thread safety:
/// every public method may be called from any thread (one mutex, which the
/// *Locked methods expect held).
class DeviceAllocator {
public:
  DeviceAllocator(int ordinal, std::string device);
  virtual ~DeviceAllocator() = default;
  DeviceAllocator(const DeviceAllocator &) = delete;
  DeviceAllocator &operator=(const DeviceAllocator &) = delete;

  /// "caching" or "async", as HYBRID_CUDA_ALLOCATOR names it.
  virtual const char *kind() const = 0;

  void *allocate(size_t bytes, size_t alignment);
  void deallocate(void *ptr);
  /// Gives what is held but not handed out back to CUDA (waiting for the
  /// device first when freed blocks are pending). Returns the bytes
  /// released.
  size_t trim();

  /// A ticket to take before a device-wide synchronisation; pass it to
  /// deviceSynchronized() after, which makes every block freed before the
  /// ticket reusable.
  uint64_t syncTicket() const;
  void deviceSynchronized(uint64_t ticket);

  MemoryStats stats() const;
  CudaCacheStats cacheStats() const;

protected:
  /// A block of at least `bytes` (a 256-byte aligned base). `requested` is
  /// what the caller asked for, for the out-of-memory message.
  virtual Block obtainLocked(size_t bytes, size_t requested) = 0;
  /// Blocks callers freed that the device no longer uses.
  virtual void reuseLocked(const std::vector<Block> &blocks) = 0;
  /// Gives back to CUDA what is held and not handed out, pending blocks
  /// included (synchronizeLocked first). Returns the bytes released.
  virtual size_t trimLocked() = 0;
  /// Bytes held from CUDA now.
  virtual size_t reservedLocked() const = 0;

  struct Pending {
    Block block;
    uint64_t freeSeq;
  };

  /// Waits for the device, then hands every pending block to reuseLocked.
  void synchronizeLocked();
  const std::vector<Pending> &pendingLocked() const { return pending_; }
  /// Every block handed out or pending (for destructors).
  std::vector<Block> allBlocksLocked() const;
  /// Throws the out-of-memory error: `call` is the CUDA call that failed
  /// (null when the size alone is too large), `released` what trimming gave
  /// back before the last try.
  [[noreturn]] void outOfMemory(size_t requested, size_t blockBytes,
                                const char *call, size_t released) const;

  const int ordinal_;
  const std::string device_;
  mutable std::mutex mutex_;
  /// Counters the implementation keeps (driverAllocations, driverFrees,
  /// cacheHits); reserved, cached and peak figures are derived.
  CudaCacheStats counters_;

private:
  struct Live {
    Block block;
    size_t requested;
  };

  std::unordered_map<void *, Live> live_; // by the address handed out
  std::vector<Pending> pending_;          // freed, maybe still in use
  uint64_t nextFreeSeq_ = 0;
  size_t liveBlockBytes_ = 0;
  size_t peakReserved_ = 0;
  MemoryStats stats_;
};

/// The allocator HYBRID_CUDA_ALLOCATOR names for device `ordinal`:
/// "caching" (also when unset or empty) or "async". Throws hybrid::Error
/// for any other value.
std::unique_ptr<DeviceAllocator> makeDeviceAllocator(int ordinal,
                                                     const std::string &device);

} // namespace hybrid::cudabackend
