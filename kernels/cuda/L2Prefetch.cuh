// Bringing memory that a later kernel will read into L2 while the HBM would
// otherwise idle: a decode step's attention reads ~2 MB of cache in ~10 µs,
// while the product after the next one streams 8-34 MB of settled weight
// (CudaCall::prefetch names it). Bulk prefetches hold no registers and no
// shared memory and write nothing: a hint that never changes a result.
#pragma once

#include "CudaKernels.h"
#include "Device.cuh"

#include <algorithm>
#include <cstdint>

namespace hybrid::cuda {

/// The spans a kernel prefetches, passed by value as a kernel parameter.
struct L2PrefetchList {
  static constexpr int kMaxRegions = 4;
  const char *data[kMaxRegions] = {};
  uint64_t bytes[kMaxRegions] = {};
  int count = 0;

  /// The first kMaxRegions of the call's regions (empty spans left out).
  static L2PrefetchList of(const CudaCall &call) {
    L2PrefetchList list;
    for (const MemoryRegion &r : call.prefetch)
      if (r.data && r.bytes && list.count < kMaxRegions) {
        list.data[list.count] = static_cast<const char *>(r.data);
        list.bytes[list.count++] = r.bytes;
      }
    return list;
  }
};

/// Issues the list's prefetches spread over the grid: 16 KB pieces, one per
/// lane of each block's first warp in turn (a 64-block grid covers 32 MB
/// with one instruction a lane). Pieces are whole 16-byte words at 16-byte
/// offsets from each span's start (16-byte aligned, as every buffer is):
/// a span's last few bytes may be left out. Call it from every thread.
__device__ __forceinline__ void prefetchToL2(const L2PrefetchList &list) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (list.count == 0 || threadIdx.x >= 32 || threadIdx.y || threadIdx.z)
    return;
  constexpr uint64_t kPiece = 16384;
  const uint64_t blocks = uint64_t(gridDim.x) * gridDim.y * gridDim.z;
  const uint64_t block =
      blockIdx.x +
      uint64_t(gridDim.x) * (blockIdx.y + uint64_t(gridDim.y) * blockIdx.z);
  for (int r = 0; r < list.count; ++r) {
    const uint64_t pieces = (list.bytes[r] + kPiece - 1) / kPiece;
    for (uint64_t i = block * 32 + threadIdx.x; i < pieces; i += blocks * 32) {
      const uint64_t begin = i * kPiece;
      const auto size = static_cast<uint32_t>(
          std::min<uint64_t>(kPiece, list.bytes[r] - begin) & ~uint64_t(15));
      if (size)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(
                         __cvta_generic_to_global(list.data[r] + begin)),
                     "r"(size)
                     : "memory");
    }
  }
#else
  (void)list;
#endif
}

} // namespace hybrid::cuda
