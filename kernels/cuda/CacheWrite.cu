// cache_write: writes an update into a slice of the result (a KV cache or
// other state, updated in place) along one axis at an offset the kernel
// reads from device memory, so one captured graph serves every decode
// position; any dtype, moved as the widest words sizes and addresses allow.
// A slice past the end of the result cannot be reported without a host
// sync: the kernel then writes nothing (the CPU kernel raises an error).
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/CacheWrite.h"

namespace hybrid::cuda::kernels {
namespace {

/// The update is `rows` runs of `runWords` words; run r goes to cache + r *
/// pitchWords + start * innerWords, start = *offset, when [start, start +
/// n) lies in [0, dim).
template <typename W>
__global__ void cacheWriteKernel(W *cache, const W *update,
                                 const int64_t *offset, int64_t rows,
                                 int64_t runWords, int64_t pitchWords,
                                 int64_t innerWords, int64_t n, int64_t dim) {
  awaitInputs();
  const int64_t start = *offset;
  if (start < 0 || start > dim - n)
    return; // dropped: out of range (see the file comment)
  W *dst = cache + start * innerWords;
  const int64_t total = rows * runWords;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    const int64_t r = i / runWords, w = i - r * runWords;
    dst[r * pitchWords + w] = update[i];
  }
}

} // namespace

void cacheWrite(const CudaCall &call) {
  const CacheWriteArgs a = CacheWriteArgs::bind(call, "cache_write");
  cacheWriteInto(a.update, a.offset, a.out, a.attrs.axis, call.stream);
}

void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axis, Stream stream) {
  const CacheWriteProblem p = describeCacheWrite(update, offset, result, axis);
  const int64_t n = p.n, dim = p.dim, rows = p.rows, innerBytes = p.innerBytes;
  // Known from shapes alone: no offset fits (the CPU kernel says the same
  // when it reads the offset).
  if (n > dim)
    fail("cache_write", "update " + shapeToString(update.shape) +
                            " is longer than result " +
                            shapeToString(result.shape) + " along axis " +
                            std::to_string(p.axis));
  if (update.numel() == 0)
    return;
  // Every run starts at a multiple of innerBytes from an aligned base, so a
  // word dividing it, the pitch and both addresses serves every offset.
  const size_t word = widestWord({static_cast<uint64_t>(innerBytes),
                                  reinterpret_cast<uint64_t>(result.data),
                                  reinterpret_cast<uint64_t>(update.data)});
  visitWide(word, [&](auto zero) {
    using W = decltype(zero);
    const int64_t w = static_cast<int64_t>(sizeof(W));
    const int64_t innerWords = innerBytes / w;
    const int64_t runWords = n * innerWords;
    launch(cacheWriteKernel<W>, gridFor(rows * runWords), kThreads, 0,
           static_cast<cudaStream_t>(stream), static_cast<W *>(result.data),
           static_cast<const W *>(update.data),
           static_cast<const int64_t *>(offset.data), rows, runWords,
           dim * innerWords, innerWords, n, dim);
  });
  checkLaunch("cache_write");
}

} // namespace hybrid::cuda::kernels
