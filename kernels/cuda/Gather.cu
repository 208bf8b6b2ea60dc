// gather: ONNX Gather, slices of data along `axis` at i32 or i64 indices
// (negative indices count from the end); any data dtype. Also the row
// gather behind embedding (Movement.h). An index out of range gives a zero
// slice: the device cannot raise the CPU kernel's error without a sync.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"

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
  expectArity(call, "gather", 2, 1);
  const ConstTensor &data = call.operands[0], &indices = call.operands[1];
  const Tensor &result = call.results[0];
  expectIndex(indices.dtype, "gather", "indices");
  expectDType(result, data.dtype, "gather", "result");
  const int64_t rank = data.rank();
  if (rank == 0)
    fail("gather", "data must have rank >= 1");
  const int64_t axis =
      normalizeAxis(call.attrs<ops::Gather>().axis, rank, "gather");
  Shape outShape(data.shape.begin(), data.shape.begin() + axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + axis + 1,
                  data.shape.end());
  expectShape(result, outShape, "gather", "result");
  if (result.numel() == 0)
    return;
  gatherRows(result.data, data.data, indices.data, indices.dtype,
             product(data.shape, 0, axis), indices.numel(), data.shape[axis],
             product(data.shape, axis + 1, rank) * dtypeSize(data.dtype), true,
             streamOf(call), "gather");
}

} // namespace kernels
} // namespace hybrid::cuda
