// gather: ONNX Gather, slices of data along `axis` at i32 or i64 indices
// (negative indices count from the end); any data dtype. Also the row
// gather behind embedding (Movement.h). An index out of range gives a zero
// slice: the device cannot raise the CPU kernel's error without a sync.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/Gather.h"

namespace hybrid::cuda {
namespace {

/// One thread per word of the result: row = (o, k), the word w within it.
template <typename W, typename I>
__global__ void gatherRowsKernel(W *out, const W *data, const I *indices,
                                 int64_t outer, int64_t count, int64_t dim,
                                 int64_t words, bool negativeFromEnd) {
  awaitInputs();
  const int64_t total = outer * count * words;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    const int64_t row = i / words, w = i - row * words;
    const int64_t o = row / count, k = row - o * count;
    int64_t v = static_cast<int64_t>(indices[k]);
    if (v < 0 && negativeFromEnd)
      v += dim;
    W value{};
    if (v >= 0 && v < dim)
      value = data[(o * dim + v) * words + w];
    out[i] = value;
  }
}

} // namespace

void gatherRows(void *out, const void *data, const void *indices,
                DType indexType, int64_t outer, int64_t count, int64_t dim,
                int64_t rowBytes, bool negativeFromEnd, cudaStream_t stream,
                const char *kernel) {
  if (outer == 0 || count == 0 || rowBytes == 0)
    return;
  const size_t word = widestWord({static_cast<uint64_t>(rowBytes),
                                  reinterpret_cast<uint64_t>(out),
                                  reinterpret_cast<uint64_t>(data)});
  visitWide(word, [&](auto zero) {
    using W = decltype(zero);
    const int64_t words = rowBytes / static_cast<int64_t>(sizeof(W));
    const unsigned grid = gridFor(outer * count * words);
    if (indexType == DType::I32)
      launch(gatherRowsKernel<W, int32_t>, grid, kThreads, 0, stream,
             static_cast<W *>(out), static_cast<const W *>(data),
             static_cast<const int32_t *>(indices), outer, count, dim, words,
             negativeFromEnd);
    else
      launch(gatherRowsKernel<W, int64_t>, grid, kThreads, 0, stream,
             static_cast<W *>(out), static_cast<const W *>(data),
             static_cast<const int64_t *>(indices), outer, count, dim, words,
             negativeFromEnd);
  });
  checkLaunch(kernel);
}

namespace kernels {

void gather(const CudaCall &call) {
  const GatherArgs a = GatherArgs::bind(call, "gather");
  const GatherProblem p = describeGather(a);
  gatherRows(a.out.data, a.data.data, a.indices.data, a.indices.dtype, p.outer,
             p.count, p.dim, p.rowBytes, true, streamOf(call), "gather");
}

} // namespace kernels
} // namespace hybrid::cuda
