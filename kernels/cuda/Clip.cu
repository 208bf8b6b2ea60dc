// clip: clamp float (f32, bf16, f16) or integer (i32, i64) elements to the
// optional min/max bounds of ops::Clip; lower bound first, then upper, so
// min > max gives max everywhere (ONNX, numpy.clip); NaN elements stay NaN.
#include "Elementwise.cuh"
#include "Kernels.h"

#include <cmath>
#include <limits>

namespace hybrid::cuda::kernels {
namespace {

template <typename S, typename T> struct Clamp {
  T lo, hi;
  __device__ S operator()(S s) const {
    const T x = load(s);
    T v = x < lo ? lo : x;
    v = v > hi ? hi : v;
    return store<S>(v);
  }
};

/// A float bound as the tightest integer bound of type T: ceil for a lower
/// bound, floor for an upper one, saturated to T's range.
template <typename T> T integerBound(double bound, bool lower) {
  const double b = lower ? std::ceil(bound) : std::floor(bound);
  if (b >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  if (b <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  return static_cast<T>(b);
}

} // namespace

void clip(const CudaCall &call) {
  expectArity(call, "clip", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "clip", "result");
  expectDType(result, input.dtype, "clip", "result");
  const ops::Clip &attrs = call.attrs<ops::Clip>();
  if ((attrs.min && std::isnan(*attrs.min)) ||
      (attrs.max && std::isnan(*attrs.max)))
    fail("clip", "NaN bound");
  const StridedPlan<1> plan =
      broadcastPlan<1>(input.shape, {&input.shape}, "clip");
  visitNumeric(input.dtype, "clip", "input", [&](auto zero) {
    using S = decltype(zero);
    S *out = static_cast<S *>(result.data);
    const S *in = static_cast<const S *>(input.data);
    if constexpr (kIsFloat<S>) {
      const float inf = std::numeric_limits<float>::infinity();
      const Clamp<S, float> fn{
          attrs.min ? static_cast<float>(*attrs.min) : -inf,
          attrs.max ? static_cast<float>(*attrs.max) : inf};
      launchMap(plan, out, in, fn, streamOf(call), "clip");
    } else {
      const Clamp<S, S> fn{attrs.min ? integerBound<S>(*attrs.min, true)
                                     : std::numeric_limits<S>::min(),
                           attrs.max ? integerBound<S>(*attrs.max, false)
                                     : std::numeric_limits<S>::max()};
      launchMap(plan, out, in, fn, streamOf(call), "clip");
    }
  });
}

} // namespace hybrid::cuda::kernels
