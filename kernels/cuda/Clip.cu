// clip: clamp float (f32, bf16, f16) or integer (i32, i64) elements to the
// optional min/max bounds of ops::Clip, as kernels/common/Clip.h clamps
// (the CPU kernel's clamp).
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/Clip.h"

namespace hybrid::cuda::kernels {
namespace {

template <typename S> struct Clamp {
  ClipBounds<Compute<S>> bounds;
  __device__ S operator()(S s) const {
    return store<S>(clipValue(load(s), bounds));
  }
};

} // namespace

void clip(const CudaCall &call) {
  const ClipArgs a = ClipArgs::bind(call, "clip");
  const ClipProblem p = describeClip(a);
  const StridedPlan<1> plan =
      broadcastPlan<1>(a.input.shape, {&a.input.shape}, "clip");
  visitNumeric(a.input.dtype, "clip", "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(plan, static_cast<S *>(a.out.data),
              static_cast<const S *>(a.input.data),
              Clamp<S>{clipBounds<Compute<S>>(p)}, streamOf(call), "clip");
  });
}

} // namespace hybrid::cuda::kernels
