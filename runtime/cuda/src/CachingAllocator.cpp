// The CUDA caching allocator: size classes, best fit, trim and retry on
// out of memory.
#include "CachingAllocator.h"

#include "CudaCheck.h"

#include <algorithm>

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

} // namespace

CachingAllocator::CachingAllocator(int ordinal, std::string device)
    : DeviceAllocator(ordinal, std::move(device)) {}

CachingAllocator::~CachingAllocator() {
  onDevice(ordinal_, [&] {
    // Callers hold the device (shared_ptr) while they hold its memory, so
    // nothing should be live here; free it regardless.
    for (auto &[size, base] : cached_)
      cudaFree(base);
    for (const Block &b : allBlocksLocked())
      cudaFree(b.base);
  });
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
  const std::vector<Pending> &pending = pendingLocked();
  return std::any_of(pending.begin(), pending.end(), [&](const Pending &p) {
    return fits(p.block.bytes, blockBytes);
  });
}

Block CachingAllocator::obtainLocked(size_t bytes, size_t requested) {
  // On a cache hit blockBytes becomes the cached block's own size.
  size_t blockBytes = roundSize(bytes);
  void *base = takeCachedLocked(blockBytes);
  if (!base && pendingFitsLocked(blockBytes)) {
    synchronizeLocked();
    base = takeCachedLocked(blockBytes);
  }
  if (base) {
    ++counters_.cacheHits;
    return {base, blockBytes};
  }
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
    outOfMemory(requested, blockBytes, "cudaMalloc", released);
  }
  checkCuda(status, device_,
            ("cudaMalloc of " + std::to_string(blockBytes) + " bytes").c_str());
  reserved_ += blockBytes;
  ++counters_.driverAllocations;
  return {base, blockBytes};
}

void CachingAllocator::reuseLocked(const std::vector<Block> &blocks) {
  for (const Block &b : blocks)
    cached_.emplace(b.bytes, b.base);
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
    reserved_ -= size;
    ++counters_.driverFrees;
  }
  cached_.clear();
  return released;
}

} // namespace hybrid::cudabackend
