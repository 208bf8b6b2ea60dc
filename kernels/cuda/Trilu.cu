// trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two dimensions and zero the rest; any dtype (moved as words).
#include "Device.cuh"
#include "Kernels.h"

namespace hybrid::cuda::kernels {
namespace {

template <typename W>
__global__ void triluKernel(W *out, const W *in, int64_t total, int64_t rows,
                            int64_t cols, bool upper, int64_t k) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < total; e += stride) {
    const int64_t r = e / cols, j = e - r * cols;
    const int64_t i = r % rows;
    // j - i compared with k without overflow for any k: j, i are small.
    const int64_t d = j - i;
    const bool keep = upper ? d >= k : d <= k;
    out[e] = keep ? in[e] : W{};
  }
}

} // namespace

void trilu(const CudaCall &call) {
  expectArity(call, "trilu", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "trilu", "result");
  expectDType(result, input.dtype, "trilu", "result");
  const int64_t rank = input.rank();
  if (rank < 2)
    fail("trilu",
         "input must have rank >= 2, got " + shapeToString(input.shape));
  const ops::Trilu &attrs = call.attrs<ops::Trilu>();
  const int64_t rows = input.shape[rank - 2], cols = input.shape[rank - 1];
  const int64_t total = input.numel();
  if (total == 0)
    return;
  visitWord(dtypeSize(input.dtype), [&](auto zero) {
    using W = decltype(zero);
    launch(triluKernel<W>, gridFor(total), kThreads, 0, streamOf(call),
           static_cast<W *>(result.data), static_cast<const W *>(input.data),
           total, rows, cols, attrs.upper, attrs.k);
  });
  checkLaunch("trilu");
}

} // namespace hybrid::cuda::kernels
