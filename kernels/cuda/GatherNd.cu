// gather_nd: ONNX GatherND with batch_dims and i32 or i64 index tuples; any
// data dtype. A tuple with an index out of range gives a zero slice (the
// device cannot raise the CPU kernel's error without a host sync).
#include "Device.cuh"
#include "Kernels.h"
#include "common/GatherNd.h"

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
  const GatherNdArgs a = GatherNdArgs::bind(call, "gather_nd");
  const GatherNdProblem p = describeGatherNd(a, kMaxTuple);
  const ConstTensor &data = a.data, &indices = a.indices;
  const Tensor &result = a.out;
  if (result.numel() == 0)
    return;
  TupleLayout s;
  s.k = static_cast<int>(p.k);
  int64_t stride = p.slice;
  for (int64_t j = p.k; j-- > 0;) {
    s.dims[j] = data.shape[p.b + j];
    s.strides[j] = stride;
    stride *= data.shape[p.b + j];
  }
  s.tuples = std::max<int64_t>(p.tuples, 1);
  s.slice = p.slice;
  s.batchStride = p.batchStride;
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
