// The CUDA caching allocator: size classes, best fit, deferred reuse of
// blocks freed while the device may be busy, trim and retry on out of
// memory.
#include "CachingAllocator.h"

#include "CudaCheck.h"

#include <algorithm>
#include <cassert>

namespace hybrid::cudabackend {

namespace {

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

bool isSmall(size_t blockBytes) {
  return blockBytes <= CachingAllocator::kSmallLimit;
}

/// Whether a cached block of `block` bytes may serve a request that rounds
/// to `want`: the same class, and at most a quarter of the request wasted.
bool fits(size_t block, size_t want) {
  return block >= want && isSmall(block) == isSmall(want) &&
         block - want <= want / 4;
}

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB",
                static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

} // namespace

CachingAllocator::CachingAllocator(int ordinal, std::string device)
    : ordinal_(ordinal), device_(std::move(device)) {}

CachingAllocator::~CachingAllocator() {
  int previous = -1;
  cudaGetDevice(&previous);
  if (previous != ordinal_)
    cudaSetDevice(ordinal_);
  // Callers hold the device (shared_ptr) while they hold its memory, so
  // nothing should be live here; free it regardless.
  for (auto &[size, base] : cached_)
    cudaFree(base);
  for (const Pending &p : pending_)
    cudaFree(p.base);
  for (auto &[ptr, live] : live_)
    cudaFree(live.base);
  if (previous >= 0 && previous != ordinal_)
    cudaSetDevice(previous);
}

size_t CachingAllocator::roundSize(size_t bytes) {
  if (bytes == 0)
    bytes = 1; // zero bytes still get a distinct address
  return bytes <= kSmallLimit ? roundUp(bytes, kSmallRound)
                              : roundUp(bytes, kLargeRound);
}

void *CachingAllocator::takeCachedLocked(size_t &blockBytes) {
  auto it = cached_.lower_bound(blockBytes);
  if (it == cached_.end() || !fits(it->first, blockBytes))
    return nullptr;
  void *base = it->second;
  blockBytes = it->first;
  cached_.erase(it);
  return base;
}

bool CachingAllocator::pendingFitsLocked(size_t blockBytes) const {
  return std::any_of(pending_.begin(), pending_.end(), [&](const Pending &p) {
    return fits(p.blockBytes, blockBytes);
  });
}

void CachingAllocator::synchronizeLocked() {
  if (pending_.empty())
    return;
  CurrentDevice guard(ordinal_, device_);
  checkCuda(cudaDeviceSynchronize(), device_, "cudaDeviceSynchronize");
  // Holding the lock, nothing was freed since the synchronisation began.
  for (const Pending &p : pending_)
    cached_.emplace(p.blockBytes, p.base);
  pending_.clear();
}

void *CachingAllocator::allocate(size_t bytes, size_t alignment) {
  if (alignment < 256)
    alignment = 256;
  if (alignment & (alignment - 1))
    throw Error(device_ + ": alignment " + std::to_string(alignment) +
                " is not a power of two");
  // cudaMalloc aligns to 256; a larger alignment needs room to move up.
  size_t slack = alignment - 256;
  if (bytes > (SIZE_MAX >> 2) || slack > (SIZE_MAX >> 2))
    outOfMemory(bytes, bytes, 0, stats().bytesInUse);
  size_t blockBytes = roundSize(bytes + slack);

  std::lock_guard<std::mutex> lock(mutex_);
  // On a cache hit blockBytes becomes the cached block's own size.
  void *base = takeCachedLocked(blockBytes);
  if (!base && pendingFitsLocked(blockBytes)) {
    synchronizeLocked();
    base = takeCachedLocked(blockBytes);
  }
  if (base) {
    ++cache_.cacheHits;
  } else {
    CurrentDevice guard(ordinal_, device_);
    cudaError_t status = cudaMalloc(&base, blockBytes);
    size_t released = 0;
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError(); // not sticky: clear it and try with the cache freed
      released = trimLocked();
      status = cudaMalloc(&base, blockBytes);
    }
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      outOfMemory(bytes, blockBytes, released, stats_.bytesInUse);
    }
    checkCuda(status, device_, "cudaMalloc");
    cache_.reservedBytes += blockBytes;
    ++cache_.driverAllocations;
  }
  uintptr_t aligned = (reinterpret_cast<uintptr_t>(base) + alignment - 1) &
                      ~(uintptr_t(alignment) - 1);
  void *ptr = reinterpret_cast<void *>(aligned);
  live_[ptr] = Live{base, blockBytes, bytes};
  stats_.bytesInUse += bytes;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.bytesInUse);
  ++stats_.allocations;
  stats_.bytesAllocated += bytes;
  return ptr;
}

void CachingAllocator::deallocate(void *ptr) {
  if (!ptr)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  // Memory from elsewhere is a programming error, not a user's; keep it
  // rather than cache what this allocator does not own.
  assert(it != live_.end() && "deallocate of memory not from this device");
  if (it == live_.end())
    return;
  stats_.bytesInUse -= it->second.requested;
  ++stats_.frees;
  pending_.push_back({it->second.base, it->second.blockBytes, nextFreeSeq_++});
  live_.erase(it);
}

uint64_t CachingAllocator::syncTicket() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nextFreeSeq_;
}

void CachingAllocator::deviceSynchronized(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto reusable = [&](const Pending &p) { return p.freeSeq < ticket; };
  for (const Pending &p : pending_)
    if (reusable(p))
      cached_.emplace(p.blockBytes, p.base);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), reusable),
                 pending_.end());
}

size_t CachingAllocator::trimLocked() {
  synchronizeLocked();
  if (cached_.empty())
    return 0;
  CurrentDevice guard(ordinal_, device_);
  size_t released = 0;
  for (auto &[size, base] : cached_) {
    checkCuda(cudaFree(base), device_, "cudaFree");
    released += size;
    cache_.reservedBytes -= size;
    ++cache_.driverFrees;
  }
  cached_.clear();
  return released;
}

size_t CachingAllocator::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  return trimLocked();
}

void CachingAllocator::outOfMemory(size_t bytes, size_t blockBytes,
                                   size_t released, size_t inUse) {
  size_t freeBytes = 0, totalBytes = 0;
  {
    CurrentDevice guard(ordinal_, device_);
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
      cudaGetLastError();
  }
  throw Error(
      device_ + ": out of memory: cannot allocate " + std::to_string(bytes) +
      " bytes (" + mib(blockBytes) + " block); the device has " +
      mib(freeBytes) + " free of " + mib(totalBytes) +
      (released ? " after releasing " + mib(released) + " cached" : "") + ", " +
      mib(inUse) + " held by its callers");
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

CudaCacheStats CachingAllocator::cacheStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CudaCacheStats s = cache_;
  s.cachedBytes = 0;
  for (auto &[size, base] : cached_)
    s.cachedBytes += size;
  for (const Pending &p : pending_)
    s.cachedBytes += p.blockBytes;
  return s;
}

} // namespace hybrid::cudabackend
