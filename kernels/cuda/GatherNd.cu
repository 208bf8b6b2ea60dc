// gather_nd: ONNX GatherND with batch_dims and i32 or i64 index tuples; any
// data dtype. A tuple with an index out of range gives a zero slice (the
// device cannot raise the CPU kernel's error without a host sync).
#include "Device.cuh"
#include "Kernels.h"

#include <algorithm>

namespace hybrid::cuda::kernels {
namespace {

constexpr int kMaxTuple = 10;

struct TupleLayout {
  int k = 0;                  ///< indices per tuple
  int64_t dims[kMaxTuple];    ///< data dimensions the tuple indexes
  int64_t strides[kMaxTuple]; ///< their strides in elements
  int64_t tuples = 1;         ///< tuples per batch
  int64_t slice = 1;          ///< elements per tuple
  int64_t batchStride = 0;    ///< data elements per batch
  int64_t total = 0;          ///< result elements
};

template <typename W, typename I>
__global__ void gatherNdKernel(W *out, const W *data, const I *indices,
                               TupleLayout s) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < s.total; e += stride) {
    const int64_t t = e / s.slice, within = e - t * s.slice;
    int64_t offset = (t / s.tuples) * s.batchStride + within;
    bool inRange = true;
    for (int j = 0; j < s.k; ++j) {
      int64_t v = static_cast<int64_t>(indices[t * s.k + j]);
      if (v < 0)
        v += s.dims[j];
      inRange &= v >= 0 && v < s.dims[j];
      offset += v * s.strides[j];
    }
    out[e] = inRange ? data[offset] : W{};
  }
}

} // namespace

void gatherNd(const CudaCall &call) {
  expectArity(call, "gather_nd", 2, 1);
  const ConstTensor &data = call.operands[0], &indices = call.operands[1];
  const Tensor &result = call.results[0];
  expectIndex(indices.dtype, "gather_nd", "indices");
  expectDType(result, data.dtype, "gather_nd", "result");
  const int64_t r = data.rank(), q = indices.rank();
  const int64_t b = call.attrs<ops::GatherNd>().batchDims;
  if (r < 1 || q < 1)
    fail("gather_nd", "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    fail("gather_nd", "batch_dims " + std::to_string(b) +
                          " must be in [0, min(rank(data), rank(indices)))");
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[d] != indices.shape[d])
      fail("gather_nd", "batch dimensions of data " +
                            shapeToString(data.shape) + " and indices " +
                            shapeToString(indices.shape) + " differ");
  const int64_t k = indices.shape[q - 1];
  if (k < 1 || k > r - b)
    fail("gather_nd", "the last dimension of indices (" + std::to_string(k) +
                          ") must be in [1, " + std::to_string(r - b) + "]");
  if (k > kMaxTuple)
    fail("gather_nd", "index tuples of " + std::to_string(k) +
                          " entries are not supported (at most " +
                          std::to_string(kMaxTuple) + ")");
  Shape outShape(indices.shape.begin(), indices.shape.end() - 1);
  outShape.insert(outShape.end(), data.shape.begin() + b + k, data.shape.end());
  expectShape(result, outShape, "gather_nd", "result");
  if (result.numel() == 0)
    return;
  TupleLayout s;
  s.k = static_cast<int>(k);
  int64_t stride = product(data.shape, b + k, r);
  for (int64_t j = k; j-- > 0;) {
    s.dims[j] = data.shape[b + j];
    s.strides[j] = stride;
    stride *= data.shape[b + j];
  }
  s.tuples = std::max<int64_t>(product(indices.shape, b, q - 1), 1);
  s.slice = product(data.shape, b + k, r);
  s.batchStride = product(data.shape, b, r);
  s.total = result.numel();
  visitWord(dtypeSize(data.dtype), [&](auto zero) {
    using W = decltype(zero);
    const unsigned grid = gridFor(s.total);
    if (indices.dtype == DType::I32)
      launch(gatherNdKernel<W, int32_t>, grid, kThreads, 0, streamOf(call),
             static_cast<W *>(result.data), static_cast<const W *>(data.data),
             static_cast<const int32_t *>(indices.data), s);
    else
      launch(gatherNdKernel<W, int64_t>, grid, kThreads, 0, streamOf(call),
             static_cast<W *>(result.data), static_cast<const W *>(data.data),
             static_cast<const int64_t *>(indices.data), s);
  });
  checkLaunch("gather_nd");
}

} // namespace hybrid::cuda::kernels
