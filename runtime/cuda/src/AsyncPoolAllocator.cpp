// The CUDA device's memory from a stream-ordered pool of its own
// (cudaMallocFromPoolAsync / cudaFreeAsync / cudaMemPoolTrimTo).
#include "AsyncPoolAllocator.h"

#include "CudaCheck.h"

#include <algorithm>
#include <cstdint>

namespace hybrid::cudabackend {

AsyncPoolAllocator::AsyncPoolAllocator(int ordinal, std::string device)
    : DeviceAllocator(ordinal, std::move(device)) {
  CurrentDevice guard(ordinal_, device_);
  int supported = 0;
  checkCuda(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported,
                                   ordinal_),
            device_,
            "cudaDeviceGetAttribute (cudaDevAttrMemoryPoolsSupported)");
  if (!supported)
    throw Error(device_ + ": HYBRID_CUDA_ALLOCATOR=async: the device has no "
                          "stream-ordered memory pools (use caching)");
  size_t freeBytes = 0;
  checkCuda(cudaMemGetInfo(&freeBytes, &deviceBytes_), device_,
            "cudaMemGetInfo");
  checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), device_,
            "cudaStreamCreateWithFlags");
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal_;
  uint64_t keepAll = UINT64_MAX;
  cudaError_t status = cudaMemPoolCreate(&pool_, &props);
  const char *call = "cudaMemPoolCreate";
  if (status == cudaSuccess) {
    status = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold,
                                     &keepAll);
    call = "cudaMemPoolSetAttribute (cudaMemPoolAttrReleaseThreshold)";
  }
  if (status != cudaSuccess) {
    // No destructor runs for a constructor that throws.
    if (pool_)
      cudaMemPoolDestroy(pool_);
    cudaStreamDestroy(stream_);
    checkCuda(status, device_, call);
  }
}

AsyncPoolAllocator::~AsyncPoolAllocator() {
  onDevice(ordinal_, [&] {
    // Callers hold the device (shared_ptr) while they hold its memory, and
    // the device is idle by now (CudaDevice synchronised it); free what is
    // left regardless, and let the frees complete before the pool goes.
    for (const Block &b : allBlocksLocked())
      cudaFreeAsync(b.base, stream_);
    cudaStreamSynchronize(stream_);
    cudaMemPoolDestroy(pool_);
    cudaStreamDestroy(stream_);
  });
}

Block AsyncPoolAllocator::obtainLocked(size_t bytes, size_t requested) {
  // Pending blocks may be what the pool needs to serve this without growing.
  synchronizeLocked();
  size_t before = reservedLocked();
  CurrentDevice guard(ordinal_, device_);
  void *base = nullptr;
  // More than the device has is out of memory here, whatever error the
  // pool would give for it.
  auto tryAllocate = [&] {
    return bytes > deviceBytes_
               ? cudaErrorMemoryAllocation
               : cudaMallocFromPoolAsync(&base, bytes, pool_, stream_);
  };
  cudaError_t status = tryAllocate();
  size_t released = 0;
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError(); // not sticky: clear it and try with the pool trimmed
    released = trimLocked();
    before = reservedLocked();
    status = tryAllocate();
  }
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    outOfMemory(requested, bytes, "cudaMallocFromPoolAsync", released);
  }
  checkCuda(status, device_,
            ("cudaMallocFromPoolAsync of " + std::to_string(bytes) + " bytes")
                .c_str());
  // The allocation is ordered on stream_ alone: complete it, so that any
  // stream (and the host) may use it at once, as cudaMalloc's memory.
  status = cudaStreamSynchronize(stream_);
  if (status != cudaSuccess) {
    cudaFreeAsync(base, stream_);
    checkCuda(status, device_,
              "cudaStreamSynchronize (after cudaMallocFromPoolAsync)");
  }
  if (reservedLocked() > before)
    ++counters_.driverAllocations;
  else
    ++counters_.cacheHits;
  return {base, bytes};
}

void AsyncPoolAllocator::reuseLocked(const std::vector<Block> &blocks) {
  CurrentDevice guard(ordinal_, device_);
  for (const Block &b : blocks)
    checkCuda(cudaFreeAsync(b.base, stream_), device_, "cudaFreeAsync");
}

size_t AsyncPoolAllocator::trimLocked() {
  synchronizeLocked();
  CurrentDevice guard(ordinal_, device_);
  // A free counts as outstanding until the host has seen it complete.
  checkCuda(cudaStreamSynchronize(stream_), device_,
            "cudaStreamSynchronize (before cudaMemPoolTrimTo)");
  const size_t before = reservedLocked();
  checkCuda(cudaMemPoolTrimTo(pool_, 0), device_, "cudaMemPoolTrimTo");
  const size_t released = before - std::min(before, reservedLocked());
  if (released)
    ++counters_.driverFrees;
  return released;
}

size_t AsyncPoolAllocator::reservedLocked() const {
  uint64_t reserved = 0;
  checkCuda(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent,
                                    &reserved),
            device_,
            "cudaMemPoolGetAttribute (cudaMemPoolAttrReservedMemCurrent)");
  return static_cast<size_t>(reserved);
}

} // namespace hybrid::cudabackend
