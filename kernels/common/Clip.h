// clip (ops::Clip) as plain data both backends share, and its per-element
// math: float (f32, bf16, f16; clamped in f32, rounded once) or integer
// (i32, i64) elements clamped to the bounds that are present.
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

namespace hybrid::kernels {

struct ClipProblem {
  std::optional<double> min, max; ///< absent bounds are absent, not +-inf
};

/// Checks the result against the input and that no bound is NaN.
inline ClipProblem describeClip(const ClipArgs &a) {
  expectShape(a.out, a.input.shape, "clip", "result");
  expectDType(a.out, a.input.dtype, "clip", "result");
  if ((a.attrs.min && std::isnan(*a.attrs.min)) ||
      (a.attrs.max && std::isnan(*a.attrs.max)))
    fail("clip", "NaN bound");
  return {a.attrs.min, a.attrs.max};
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

/// The bounds in T, what the kernels compute with (float for every float
/// dtype, else the integer type); an absent one is T's extreme.
template <typename T> struct ClipBounds { T lo, hi; };
template <typename T> ClipBounds<T> clipBounds(const ClipProblem &p) {
  if constexpr (std::is_same_v<T, float>) {
    const float inf = std::numeric_limits<float>::infinity();
    return {p.min ? static_cast<float>(*p.min) : -inf,
            p.max ? static_cast<float>(*p.max) : inf};
  } else {
    return {
        p.min ? integerBound<T>(*p.min, true) : std::numeric_limits<T>::min(),
        p.max ? integerBound<T>(*p.max, false) : std::numeric_limits<T>::max()};
  }
}

/// Lower bound first, then upper, so min > max gives max everywhere (ONNX,
/// numpy.clip); NaN stays NaN.
template <typename T>
HYBRID_HOST_DEVICE T clipValue(T x, const ClipBounds<T> &b) {
  const T v = x < b.lo ? b.lo : x;
  return v > b.hi ? b.hi : v;
}

} // namespace hybrid::kernels
