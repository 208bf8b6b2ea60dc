// cache_write: writes an update into a slice of the result (a KV cache or
// other state, updated in place) along one axis at an offset the kernel
// reads from device memory, so one captured graph serves every decode
// position; any dtype, moved as the widest words sizes and addresses allow.
// A slice past the end of the result cannot be reported without a host
// sync: the kernel then writes nothing (the CPU kernel raises an error).
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"

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
  expectArity(call, "cache_write", 2, 1);
  cacheWriteInto(call.operands[0], call.operands[1], call.results[0],
                 call.attrs<ops::CacheWrite>().axis, call.stream);
}

void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axisAttr, Stream stream) {
  expectSameDType(update, result, "cache_write", "update", "result");
  expectDType(offset, DType::I64, "cache_write", "offset");
  if (offset.numel() != 1)
    fail("cache_write",
         "offset " + shapeToString(offset.shape) + " must hold one element");
  if (update.rank() != result.rank())
    fail("cache_write", "update " + shapeToString(update.shape) +
                            " and result " + shapeToString(result.shape) +
                            " have different ranks");
  const int64_t rank = result.rank();
  const int64_t axis = normalizeAxis(axisAttr, rank, "cache_write");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && update.shape[d] != result.shape[d])
      fail("cache_write", "update " + shapeToString(update.shape) +
                              " does not match result " +
                              shapeToString(result.shape) + " outside axis " +
                              std::to_string(axis));
  const int64_t n = update.shape[axis], dim = result.shape[axis];
  // Known from shapes alone: no offset fits (the CPU kernel says the same
  // when it reads the offset).
  if (n > dim)
    fail("cache_write", "update " + shapeToString(update.shape) +
                            " is longer than result " +
                            shapeToString(result.shape) + " along axis " +
                            std::to_string(axis));
  if (update.numel() == 0)
    return;
  const int64_t rows = product(update.shape, 0, axis);
  const int64_t innerBytes = product(update.shape, axis + 1, rank) *
                             static_cast<int64_t>(dtypeSize(update.dtype));
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
