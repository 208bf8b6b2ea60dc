// cast (ops::Cast) between all six dtypes: its checks and the conversion
// of one element, written once for both backends. Floats go through f32
// (bf16/f16 round to nearest even when stored); float -> integer truncates
// toward zero like C++ and ONNX, with NaN -> 0 and saturation where C++
// leaves the conversion undefined; integer narrowing keeps the low bits;
// anything -> bool is x != 0.
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace hybrid::kernels {

struct CastProblem {
  int64_t numel = 0;
  bool same = false; ///< one dtype: the bytes are copied
};

/// Checks the result has the input's shape (any dtypes).
inline CastProblem describeCast(const CastArgs &a) {
  expectShape(a.out, a.input.shape, "cast", "result");
  return {a.input.numel(), a.input.dtype == a.out.dtype};
}

/// float -> integer T, truncating toward zero; values the C++ conversion
/// leaves undefined are pinned: NaN -> 0, out-of-range values saturate.
template <typename T> HYBRID_HOST_DEVICE T floatToInt(float x) {
  if (x != x)
    return 0;
  // 2^63 and 2^31 are exact floats; max() is not.
  constexpr float limit = -static_cast<float>(std::numeric_limits<T>::min());
  if (x >= limit)
    return std::numeric_limits<T>::max();
  if (x < -limit)
    return std::numeric_limits<T>::min();
  return static_cast<T>(x);
}

/// One element converted, on the values kernels compute with: From and To
/// are float for every float dtype (the backend loads and stores bf16 and
/// f16), uint8_t for bool (any non-zero byte is true) and the integer type
/// itself for i32 and i64.
template <typename To, typename From> HYBRID_HOST_DEVICE To castValue(From x) {
  constexpr bool fromBool = std::is_same_v<From, uint8_t>;
  if constexpr (std::is_same_v<To, uint8_t>) {
    return x != 0;
  } else if constexpr (std::is_same_v<To, float>) {
    if constexpr (fromBool)
      return x ? 1.0f : 0.0f;
    else
      return static_cast<float>(x); // i64 -> f32 rounds
  } else {
    if constexpr (std::is_same_v<From, float>)
      return floatToInt<To>(x);
    else if constexpr (fromBool)
      return x ? 1 : 0;
    else
      return static_cast<To>(x); // narrowing keeps the low bits (wraps)
  }
}

} // namespace hybrid::kernels
