// The CUDA device's caching allocator (the default): cudaMalloc'd blocks
// kept in a cache by size when callers free them, so steady-state
// allocation never reaches the driver (which would also synchronise the
// device on cudaFree).
#pragma once

#include "DeviceAllocator.h"

#include <map>

namespace hybrid::cudabackend {

/// Blocks are never split: a request is rounded (512 bytes up to 1 MiB,
/// 2 MiB above) and served by the smallest cached block of its class that
/// is at least that big and wastes at most a quarter of it (small blocks
/// never serve large requests nor the other way round), else by a new
/// cudaMalloc. A pending block that would fit is worth a device
/// synchronisation before a new cudaMalloc. trim() cudaFrees the cache.
///
/// Ownership and thread safety as DeviceAllocator.
class CachingAllocator final : public DeviceAllocator {
public:
  CachingAllocator(int ordinal, std::string device);
  ~CachingAllocator() override;

  const char *kind() const override { return "caching"; }

  /// The size a request of `bytes` takes from the cache (for tests).
  static size_t roundSize(size_t bytes);

  static constexpr size_t kSmallLimit = size_t(1) << 20;
  static constexpr size_t kSmallRound = 512;
  static constexpr size_t kLargeRound = size_t(2) << 20;

private:
  Block obtainLocked(size_t bytes, size_t requested) override;
  void reuseLocked(const std::vector<Block> &blocks) override;
  size_t trimLocked() override;
  size_t reservedLocked() const override { return reserved_; }

  void *takeCachedLocked(size_t &blockBytes);
  bool pendingFitsLocked(size_t blockBytes) const;

  std::multimap<size_t, void *> cached_; // block bytes -> base; reusable
  size_t reserved_ = 0;                  // cudaMalloc'd, not yet cudaFreed
};

} // namespace hybrid::cudabackend
