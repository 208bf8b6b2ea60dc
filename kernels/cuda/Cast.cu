// cast: element type conversion between all six dtypes, each element as
// kernels/common/Cast.h converts it (the CPU kernel's conversion).
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/Cast.h"

namespace hybrid::cuda::kernels {
namespace {

template <typename From, typename To> struct Convert {
  __device__ To operator()(From x) const {
    return store<To>(castValue<Compute<To>>(load(x)));
  }
};

} // namespace

void cast(const CudaCall &call) {
  const CastArgs a = CastArgs::bind(call, "cast");
  const CastProblem p = describeCast(a);
  if (p.numel == 0)
    return;
  if (p.same) {
    checkCuda(cudaMemcpyAsync(a.out.data, a.input.data,
                              p.numel * dtypeSize(a.out.dtype),
                              cudaMemcpyDeviceToDevice, streamOf(call)),
              "cast", "cudaMemcpyAsync");
    return;
  }
  const StridedPlan<1> plan =
      broadcastPlan<1>(a.input.shape, {&a.input.shape}, "cast");
  visitAny(a.input.dtype, "cast", "input", [&](auto fromZero) {
    visitAny(a.out.dtype, "cast", "result", [&](auto toZero) {
      using From = decltype(fromZero);
      using To = decltype(toZero);
      launchMap(plan, static_cast<To *>(a.out.data),
                static_cast<const From *>(a.input.data), Convert<From, To>{},
                streamOf(call), "cast");
    });
  });
}

} // namespace hybrid::cuda::kernels
