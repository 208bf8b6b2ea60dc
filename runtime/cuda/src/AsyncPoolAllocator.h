// The CUDA device's memory from CUDA's stream-ordered allocator
// (HYBRID_CUDA_ALLOCATOR=async): a cudaMemPool_t of the device's own that
// splits and coalesces its reservation, where the caching allocator keeps
// whole cudaMalloc'd blocks by size class.
#pragma once

#include "DeviceAllocator.h"

#include <cuda_runtime.h>

namespace hybrid::cudabackend {

/// Blocks come from cudaMallocFromPoolAsync on a stream of the allocator's
/// own, which then is synchronised: the allocation is complete, so every
/// stream and the host may use it at once, as with cudaMalloc. The pool is
/// the allocator's, not the device's default pool, so no other library's
/// allocations or trims mix with its figures; its release threshold is the
/// largest there is, so the pool keeps what it reserved across
/// synchronisations (CUDA's default of 0 would give memory back at each).
///
/// A block callers free goes back to the pool (cudaFreeAsync on the
/// allocator's stream) only once the device has been synchronised after
/// the free, as DeviceAllocator requires; the pool cannot tell whether a
/// pending block would serve a request, so a request made while some are
/// pending synchronises the device first (the runtime frees right after a
/// synchronisation, so that wait is short). trim() is cudaMemPoolTrimTo(0),
/// which releases the reservation no allocation is using, in the pool's
/// granularity.
///
/// CudaCacheStats: reservedBytes is the pool's reserved memory;
/// driverAllocations counts the requests that grew it, cacheHits those that
/// did not, driverFrees the trims that shrank it.
///
/// Ownership and thread safety as DeviceAllocator.
class AsyncPoolAllocator final : public DeviceAllocator {
public:
  /// Throws hybrid::Error where the device has no memory pools.
  AsyncPoolAllocator(int ordinal, std::string device);
  ~AsyncPoolAllocator() override;

  const char *kind() const override { return "async"; }

private:
  Block obtainLocked(size_t bytes, size_t requested) override;
  void reuseLocked(const std::vector<Block> &blocks) override;
  size_t trimLocked() override;
  size_t reservedLocked() const override;

  cudaMemPool_t pool_ = nullptr;
  cudaStream_t stream_ = nullptr; // orders the pool's allocations and frees
  size_t deviceBytes_ = 0;        // the device's total memory
};

} // namespace hybrid::cudabackend
