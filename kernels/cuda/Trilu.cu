// trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two dimensions and zero the rest; any dtype (moved as words).
#include "Device.cuh"
#include "Kernels.h"
#include "common/Trilu.h"

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
  const TriluArgs a = TriluArgs::bind(call, "trilu");
  const TriluProblem p = describeTrilu(a);
  const int64_t total = a.input.numel();
  if (total == 0)
    return;
  visitWord(p.elementSize, [&](auto zero) {
    using W = decltype(zero);
    launch(triluKernel<W>, gridFor(total), kThreads, 0, streamOf(call),
           static_cast<W *>(a.out.data), static_cast<const W *>(a.input.data),
           total, p.rows, p.cols, p.upper, p.k);
  });
  checkLaunch("trilu");
}

} // namespace hybrid::cuda::kernels
