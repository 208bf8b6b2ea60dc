// What both CUDA allocators share: alignment, the callers' statistics,
// deferred reuse of blocks freed while the device may be busy, the
// out-of-memory message, and HYBRID_CUDA_ALLOCATOR's choice.
#include "DeviceAllocator.h"

#include "AsyncPoolAllocator.h"
#include "CachingAllocator.h"
#include "CudaCheck.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>

namespace hybrid::cudabackend {

namespace {

/// What cudaMalloc and the pools guarantee, and the least callers get.
constexpr size_t kBaseAlignment = 256;

std::string mib(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB",
                static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

} // namespace

DeviceAllocator::DeviceAllocator(int ordinal, std::string device)
    : ordinal_(ordinal), device_(std::move(device)) {}

void *DeviceAllocator::allocate(size_t bytes, size_t alignment) {
  if (alignment < kBaseAlignment)
    alignment = kBaseAlignment;
  if (alignment & (alignment - 1))
    throw Error(device_ + ": alignment " + std::to_string(alignment) +
                " is not a power of two");
  // Blocks start 256-byte aligned; a larger alignment needs room to move up.
  // Zero bytes still take one, so that the address is distinct.
  const size_t slack = alignment - kBaseAlignment;
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > (SIZE_MAX >> 2) || slack > (SIZE_MAX >> 2))
    outOfMemory(bytes, bytes, nullptr, 0);
  Block block = obtainLocked(std::max<size_t>(bytes, 1) + slack, bytes);
  assert(reinterpret_cast<uintptr_t>(block.base) % kBaseAlignment == 0);
  peakReserved_ = std::max(peakReserved_, reservedLocked());
  uintptr_t aligned =
      (reinterpret_cast<uintptr_t>(block.base) + alignment - 1) &
      ~(uintptr_t(alignment) - 1);
  void *ptr = reinterpret_cast<void *>(aligned);
  live_[ptr] = Live{block, bytes};
  liveBlockBytes_ += block.bytes;
  stats_.bytesInUse += bytes;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.bytesInUse);
  ++stats_.allocations;
  stats_.bytesAllocated += bytes;
  return ptr;
}

void DeviceAllocator::deallocate(void *ptr) {
  if (!ptr)
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  // Memory from elsewhere is a programming error, not a user's; keep it
  // rather than reuse what this allocator does not own.
  assert(it != live_.end() && "deallocate of memory not from this device");
  if (it == live_.end())
    return;
  stats_.bytesInUse -= it->second.requested;
  ++stats_.frees;
  liveBlockBytes_ -= it->second.block.bytes;
  pending_.push_back({it->second.block, nextFreeSeq_++});
  live_.erase(it);
}

size_t DeviceAllocator::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  return trimLocked();
}

uint64_t DeviceAllocator::syncTicket() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return nextFreeSeq_;
}

void DeviceAllocator::deviceSynchronized(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto before = [&](const Pending &p) { return p.freeSeq < ticket; };
  std::vector<Block> reusable;
  for (const Pending &p : pending_)
    if (before(p))
      reusable.push_back(p.block);
  if (reusable.empty())
    return;
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), before),
                 pending_.end());
  reuseLocked(reusable);
}

void DeviceAllocator::synchronizeLocked() {
  if (pending_.empty())
    return;
  {
    CurrentDevice guard(ordinal_, device_);
    checkCuda(cudaDeviceSynchronize(), device_, "cudaDeviceSynchronize");
  }
  // Holding the lock, nothing was freed since the synchronisation began.
  std::vector<Block> reusable;
  for (const Pending &p : pending_)
    reusable.push_back(p.block);
  pending_.clear();
  reuseLocked(reusable);
}

std::vector<Block> DeviceAllocator::allBlocksLocked() const {
  std::vector<Block> all;
  for (const auto &[ptr, live] : live_)
    all.push_back(live.block);
  for (const Pending &p : pending_)
    all.push_back(p.block);
  return all;
}

void DeviceAllocator::outOfMemory(size_t requested, size_t blockBytes,
                                  const char *call, size_t released) const {
  size_t freeBytes = 0, totalBytes = 0;
  {
    CurrentDevice guard(ordinal_, device_);
    if (cudaMemGetInfo(&freeBytes, &totalBytes) != cudaSuccess)
      cudaGetLastError();
  }
  throw Error(
      device_ + ": out of memory: cannot allocate " +
      std::to_string(requested) + " bytes (" + mib(blockBytes) + " block" +
      (call ? std::string(" from ") + call : "") + "); the device has " +
      mib(freeBytes) + " free of " + mib(totalBytes) +
      (released ? " after releasing " + mib(released) + " cached" : "") + ", " +
      mib(stats_.bytesInUse) + " held by its callers");
}

MemoryStats DeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

CudaCacheStats DeviceAllocator::cacheStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CudaCacheStats s = counters_;
  s.reservedBytes = reservedLocked();
  // What is held and not handed out: cached or pooled blocks, pending ones,
  // and what an implementation rounds up.
  s.cachedBytes = s.reservedBytes - std::min(s.reservedBytes, liveBlockBytes_);
  s.peakReservedBytes = std::max(peakReserved_, s.reservedBytes);
  return s;
}

std::unique_ptr<DeviceAllocator>
makeDeviceAllocator(int ordinal, const std::string &device) {
  const char *env = std::getenv("HYBRID_CUDA_ALLOCATOR");
  const std::string kind = env ? env : "";
  if (kind.empty() || kind == "caching")
    return std::make_unique<CachingAllocator>(ordinal, device);
  if (kind == "async")
    return std::make_unique<AsyncPoolAllocator>(ordinal, device);
  throw Error(device + ": HYBRID_CUDA_ALLOCATOR is '" + kind +
              "': expected caching or async");
}

} // namespace hybrid::cudabackend
