// clip: clamp float (f32, bf16, f16) or integer (i32, i64) elements to the
// optional min/max bounds of ops::Clip, as kernels/common/Clip.h clamps.
#include "common/Clip.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

namespace hybrid::cpu::kernels {

void clip(const KernelCall &call) {
  const ClipArgs a = ClipArgs::bind(call, "clip");
  const ClipProblem p = describeClip(a);
  visitNumeric(a.input.dtype, "clip", "input", [&](auto zero) {
    using S = decltype(zero);
    const ClipBounds<Compute<S>> bounds = clipBounds<Compute<S>>(p);
    const S *in = a.input.as<S>();
    S *out = a.out.as<S>();
    parallelChunks(a.input.numel(), 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = store<S>(clipValue(load(in[i]), bounds));
    });
  });
}

} // namespace hybrid::cpu::kernels
