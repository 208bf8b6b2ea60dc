// clip: clamp float (f32, bf16, f16) or integer (i32, i64) elements to the
// optional min/max bounds of ops::Clip.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

/// Lower bound first, then upper, so min > max gives max everywhere (ONNX,
/// numpy.clip); NaN elements stay NaN. Floats clamp in f32 and round once.
template <typename S, typename T>
void clamp(const ConstTensor &input, const Tensor &result, T lo, T hi) {
  const S *in = input.as<S>();
  S *out = result.as<S>();
  parallelChunks(input.numel(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T x;
      if constexpr (kIsFloatStorage<S>)
        x = toFloat(in[i]);
      else
        x = in[i];
      T v = x < lo ? lo : x;
      v = v > hi ? hi : v;
      if constexpr (kIsFloatStorage<S>)
        out[i] = fromFloat<S>(v);
      else
        out[i] = v;
    }
  });
}

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

void clip(const KernelCall &call) {
  expectArity(call, "clip", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "clip", "result");
  expectDType(result, input.dtype, "clip", "result");
  const ops::Clip &attrs = call.attrs<ops::Clip>();
  if ((attrs.min && std::isnan(*attrs.min)) ||
      (attrs.max && std::isnan(*attrs.max)))
    fail("clip", "NaN bound");
  visitNumeric(input.dtype, "clip", "input", [&](auto zero) {
    using S = decltype(zero);
    if constexpr (kIsFloatStorage<S>) {
      const float inf = std::numeric_limits<float>::infinity();
      clamp<S, float>(input, result,
                      attrs.min ? static_cast<float>(*attrs.min) : -inf,
                      attrs.max ? static_cast<float>(*attrs.max) : inf);
    } else {
      clamp<S, S>(input, result,
                  attrs.min ? integerBound<S>(*attrs.min, true)
                            : std::numeric_limits<S>::min(),
                  attrs.max ? integerBound<S>(*attrs.max, false)
                            : std::numeric_limits<S>::max());
    }
  });
}

} // namespace hybrid::cpu::kernels
