// iota: the 1-D sequence start, start + step, ... filling the result (f32,
// bf16, f16, i32 or i64), each element as kernels/common/Iota.h computes
// it (the CPU kernel's values).
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/Iota.h"

namespace hybrid::cuda::kernels {
namespace {

template <typename S>
__global__ void iotaKernel(S *out, IotaProblem p, bool exactInteger) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < p.n; i += stride) {
    if constexpr (kIsFloat<S>)
      out[i] = fromFloat<S>(p.floatAt(i));
    else
      out[i] = p.integerAt<S>(i, exactInteger);
  }
}

} // namespace

void iota(const CudaCall &call) {
  const IotaArgs a = IotaArgs::bind(call, "iota");
  const IotaProblem p = describeIota(a);
  visitNumeric(a.out.dtype, "iota", "result", [&](auto zero) {
    using S = decltype(zero);
    if (p.n == 0)
      return;
    bool exact = false;
    if constexpr (!kIsFloat<S>)
      exact = p.exactIn<S>();
    launch(iotaKernel<S>, gridFor(p.n), kThreads, 0, streamOf(call),
           static_cast<S *>(a.out.data), p, exact);
    checkLaunch("iota");
  });
}

} // namespace hybrid::cuda::kernels
