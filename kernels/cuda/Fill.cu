// fill: every element of the result set to one value, converted to the
// result's dtype once on the host (as cast would convert it), any dtype.
#include "Device.cuh"
#include "Kernels.h"
#include "common/Fill.h"

namespace hybrid::cuda::kernels {
namespace {

template <typename W> __global__ void fillKernel(W *out, int64_t n, W value) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = value;
}

} // namespace

void fill(const CudaCall &call) {
  const FillArgs a = FillArgs::bind(call, "fill");
  const FillProblem p = describeFill(a);
  const Tensor &result = a.out;
  const int64_t n = p.n;
  if (n == 0)
    return;
  if (p.bits == 0) { // zeros of every dtype are zero bytes
    checkCuda(
        cudaMemsetAsync(result.data, 0, n * p.elementSize, streamOf(call)),
        "fill", "cudaMemsetAsync");
    return;
  }
  visitWord(p.elementSize, [&](auto zero) {
    using W = decltype(zero);
    launch(fillKernel<W>, gridFor(n), kThreads, 0, streamOf(call),
           static_cast<W *>(result.data), n, p.word<W>());
  });
  checkLaunch("fill");
}

} // namespace hybrid::cuda::kernels
