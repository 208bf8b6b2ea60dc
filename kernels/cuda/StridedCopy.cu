// The data-movement helpers of Movement.h: strided copies through the
// elementwise engine (identity on words; 8-byte words where the innermost
// run is contiguous in both) and pitched row copies in the widest words the
// sizes and addresses allow.
#include "Elementwise.cuh"
#include "Movement.h"

#include <algorithm>
#include <vector>

namespace hybrid::cuda {
namespace {

/// Rows of `words` words each; one thread per word in a grid-stride loop.
template <typename W>
__global__ void copyRowsKernel(W *dst, int64_t dstPitch, const W *src,
                               int64_t srcPitch, int64_t words, int64_t rows) {
  awaitInputs();
  const int64_t total = words * rows;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    const int64_t r = i / words, w = i - r * words;
    dst[r * dstPitch + w] = src[r * srcPitch + w];
  }
}

} // namespace

size_t widestWord(std::initializer_list<uint64_t> sizesAndAddresses) {
  size_t word = 16;
  for (uint64_t v : sizesAndAddresses)
    while (word > 1 && v % word != 0)
      word >>= 1;
  return word;
}

void copyStrided(const StridedPlan<1> &plan, const void *src, void *dst,
                 size_t elementSize, cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  if (plan.direct && plan.unit[0] == 1) {
    checkCuda(cudaMemcpyAsync(dst, src, plan.numel * elementSize,
                              cudaMemcpyDeviceToDevice, stream),
              kernel, "cudaMemcpyAsync");
    return;
  }
  // A run contiguous in both (a transpose that keeps the last dimension,
  // such as attention's head transposes) moves in 8-byte words.
  const int last = plan.rank - 1;
  if (!plan.direct && last >= 0 && plan.strides[0][last] == 1 &&
      elementSize < 8) {
    // The widest word (visitWord's: at most 8 bytes) that the run, every
    // outer stride and both addresses are whole multiples of.
    size_t word = std::min<size_t>(
        8, widestWord({static_cast<uint64_t>(plan.dims[last]) * elementSize,
                       reinterpret_cast<uint64_t>(src),
                       reinterpret_cast<uint64_t>(dst)}));
    for (int d = 0; d < last; ++d)
      word =
          std::min(word, widestWord({static_cast<uint64_t>(plan.strides[0][d]) *
                                     elementSize}));
    const int64_t factor =
        word > elementSize ? static_cast<int64_t>(word / elementSize) : 1;
    if (factor > 1) {
      Shape dims(plan.dims, plan.dims + plan.rank);
      std::vector<int64_t> strides(plan.strides[0],
                                   plan.strides[0] + plan.rank);
      dims[last] /= factor;
      for (int d = 0; d < last; ++d)
        strides[d] /= factor;
      return copyStrided(stridedPlan(dims, strides.data(), kernel), src, dst,
                         elementSize * factor, stream, kernel);
    }
  }
  visitWord(elementSize, [&](auto zero) {
    using W = decltype(zero);
    launchMap(plan, static_cast<W *>(dst), static_cast<const W *>(src),
              MoveWord{}, stream, kernel);
  });
}

void copyRows(void *dst, int64_t dstPitch, const void *src, int64_t srcPitch,
              int64_t rowBytes, int64_t rows, cudaStream_t stream,
              const char *kernel) {
  if (rows == 0 || rowBytes == 0)
    return;
  const size_t word = widestWord(
      {static_cast<uint64_t>(dstPitch), static_cast<uint64_t>(srcPitch),
       static_cast<uint64_t>(rowBytes), reinterpret_cast<uint64_t>(dst),
       reinterpret_cast<uint64_t>(src)});
  visitWide(word, [&](auto zero) {
    using W = decltype(zero);
    const int64_t w = static_cast<int64_t>(sizeof(W));
    const int64_t words = rowBytes / w;
    launch(copyRowsKernel<W>, gridFor(words * rows), kThreads, 0, stream,
           static_cast<W *>(dst), dstPitch / w, static_cast<const W *>(src),
           srcPitch / w, words, rows);
  });
  checkLaunch(kernel);
}

} // namespace hybrid::cuda
