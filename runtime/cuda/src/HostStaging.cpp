// Pinned staging buffers for host copies: handed out once their last copy
// completed, waited for when all are busy, chunking large copies.
#include "HostStaging.h"

#include "CudaCheck.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cudabackend {

HostStaging::HostStaging(int ordinal, std::string device)
    : ordinal_(ordinal), device_(std::move(device)) {}

HostStaging::~HostStaging() {
  int previous = -1;
  cudaGetDevice(&previous);
  if (previous != ordinal_)
    cudaSetDevice(ordinal_);
  for (Pool *pool : {&small_, &large_})
    for (auto &b : pool->buffers) {
      // A copy (or host function) still in flight uses the buffer.
      if (b->recorded)
        cudaEventSynchronize(b->done);
      cudaEventDestroy(b->done);
      cudaFreeHost(b->host);
    }
  if (previous >= 0 && previous != ordinal_)
    cudaSetDevice(previous);
}

HostStaging::Buffer *HostStaging::acquire(Pool &pool) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    Buffer *oldest = nullptr;
    for (auto &b : pool.buffers) {
      if (b->held)
        continue;
      if (!b->recorded) {
        b->held = true;
        return b.get();
      }
      cudaError_t status = cudaEventQuery(b->done);
      if (status == cudaSuccess) {
        b->held = true;
        return b.get();
      }
      if (status != cudaErrorNotReady)
        checkCuda(status, device_, "cudaEventQuery");
      if (!oldest || b->order < oldest->order)
        oldest = b.get();
    }
    if (pool.buffers.size() < pool.maxBuffers) {
      auto b = std::make_unique<Buffer>();
      b->bytes = pool.bufferBytes;
      checkCuda(cudaHostAlloc(&b->host, b->bytes, cudaHostAllocDefault),
                device_, "cudaHostAlloc");
      cudaError_t status =
          cudaEventCreateWithFlags(&b->done, cudaEventDisableTiming);
      if (status != cudaSuccess) {
        cudaFreeHost(b->host);
        checkCuda(status, device_, "cudaEventCreateWithFlags");
      }
      b->held = true;
      pool.buffers.push_back(std::move(b));
      return pool.buffers.back().get();
    }
    if (oldest) {
      // Every buffer is busy on the device: wait for the one queued first.
      oldest->held = true;
      lock.unlock();
      cudaError_t status = cudaEventSynchronize(oldest->done);
      if (status != cudaSuccess) {
        release(oldest, true);
        checkCuda(status, device_, "cudaEventSynchronize");
      }
      return oldest;
    }
    // Every buffer is being filled by another thread; one comes back soon.
    released_.wait(lock);
  }
}

void HostStaging::release(Buffer *buffer, bool recorded) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    buffer->held = false;
    buffer->recorded = recorded;
    buffer->order = ++order_;
  }
  released_.notify_one();
}

void HostStaging::toDevice(void *dst, const void *src, size_t bytes,
                           cudaStream_t stream) {
  if (!bytes)
    return;
  CurrentDevice guard(ordinal_, device_);
  Pool &pool = bytes <= kSmallBytes ? small_ : large_;
  for (size_t off = 0; off < bytes; off += pool.bufferBytes) {
    size_t n = std::min(pool.bufferBytes, bytes - off);
    Buffer *b = acquire(pool);
    std::memcpy(b->host, static_cast<const uint8_t *>(src) + off, n);
    cudaError_t status =
        cudaMemcpyAsync(static_cast<uint8_t *>(dst) + off, b->host, n,
                        cudaMemcpyHostToDevice, stream);
    if (status != cudaSuccess) {
      release(b, b->recorded); // nothing new was enqueued on it
      checkCuda(status, device_, "cudaMemcpyAsync (host to device)");
    }
    // A failure here leaves the buffer held for good: the copy may still
    // read it, and no event would say when it is done.
    checkCuda(cudaEventRecord(b->done, stream), device_, "cudaEventRecord");
    release(b, true);
  }
}

void HostStaging::copyOut(void *buffer) {
  Buffer *b = static_cast<Buffer *>(buffer);
  std::memcpy(b->copyTo, b->host, b->copyBytes);
}

void HostStaging::toHost(void *dst, const void *src, size_t bytes,
                         cudaStream_t stream) {
  if (!bytes)
    return;
  CurrentDevice guard(ordinal_, device_);
  Pool &pool = bytes <= kSmallBytes ? small_ : large_;
  for (size_t off = 0; off < bytes; off += pool.bufferBytes) {
    size_t n = std::min(pool.bufferBytes, bytes - off);
    Buffer *b = acquire(pool);
    cudaError_t status =
        cudaMemcpyAsync(b->host, static_cast<const uint8_t *>(src) + off, n,
                        cudaMemcpyDeviceToHost, stream);
    if (status != cudaSuccess) {
      release(b, b->recorded);
      checkCuda(status, device_, "cudaMemcpyAsync (device to host)");
    }
    // The buffer is not handed out again before its event, which follows
    // the host function: these fields stay put until it has run.
    b->copyTo = static_cast<uint8_t *>(dst) + off;
    b->copyBytes = n;
    checkCuda(cudaLaunchHostFunc(stream, &HostStaging::copyOut, b), device_,
              "cudaLaunchHostFunc");
    checkCuda(cudaEventRecord(b->done, stream), device_, "cudaEventRecord");
    release(b, true);
  }
}

size_t HostStaging::pinnedBytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return small_.buffers.size() * small_.bufferBytes +
         large_.buffers.size() * large_.bufferBytes;
}

} // namespace hybrid::cudabackend
