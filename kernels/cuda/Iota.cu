// iota: the 1-D sequence start, start + step, ... filling the result (f32,
// bf16, f16, i32 or i64), computed as the CPU kernel computes it: floats as
// start + i * step in double rounded once, integers exactly (wrapping) when
// start and step are integral.
#include "Elementwise.cuh"
#include "Kernels.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

template <typename S>
__global__ void iotaKernel(S *out, int64_t n, double start, double step,
                           bool exactInteger) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    if constexpr (kIsFloat<S>) {
      out[i] = fromFloat<S>(
          static_cast<float>(start + static_cast<double>(i) * step));
    } else {
      using U = std::make_unsigned_t<S>;
      if (exactInteger)
        out[i] = static_cast<S>(U(static_cast<S>(start)) +
                                U(i) * U(static_cast<S>(step)));
      else
        out[i] = static_cast<S>(trunc(start + static_cast<double>(i) * step));
    }
  }
}

} // namespace

void iota(const CudaCall &call) {
  expectArity(call, "iota", 0, 1);
  const Tensor &result = call.results[0];
  expectRank(result, 1, "iota", "result");
  const ops::Iota &attrs = call.attrs<ops::Iota>();
  const double start = attrs.start, step = attrs.step;
  const int64_t n = result.numel();
  visitNumeric(result.dtype, "iota", "result", [&](auto zero) {
    using S = decltype(zero);
    if (n == 0)
      return;
    bool exact = false;
    if constexpr (!kIsFloat<S>) {
      const double limit = static_cast<double>(std::numeric_limits<S>::max());
      exact = start == std::trunc(start) && step == std::trunc(step) &&
              std::fabs(start) < limit && std::fabs(step) < limit;
    }
    launch(iotaKernel<S>, gridFor(n), kThreads, 0, streamOf(call),
           static_cast<S *>(result.data), n, start, step, exact);
    checkLaunch("iota");
  });
}

} // namespace hybrid::cuda::kernels
