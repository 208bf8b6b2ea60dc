// iota (ops::Iota) as plain data both backends share, and its elements:
// the 1-D sequence start, start + step, ... filling the result (f32, bf16,
// f16, i32 or i64), whose length is the result's (the compiler's may be
// symbolic).
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace hybrid::kernels {

struct IotaProblem {
  int64_t n = 0;
  double start = 0, step = 1;

  /// Whether integer type T takes the exact path: integral start and step
  /// within T's range.
  template <typename T> bool exactIn() const {
    const double limit = static_cast<double>(std::numeric_limits<T>::max());
    return start == std::trunc(start) && step == std::trunc(step) &&
           std::fabs(start) < limit && std::fabs(step) < limit;
  }

  /// Element i of a float result: start + i * step in double (numpy.arange),
  /// rounded once to f32 (the backend rounds on to bf16 or f16).
  HYBRID_HOST_DEVICE float floatAt(int64_t i) const {
    return static_cast<float>(start + static_cast<double>(i) * step);
  }

  /// Element i of an integer result: exactly (wrapping) when `exact`
  /// (exactIn<T>()), independent of rounding; else the double truncated.
  template <typename T>
  HYBRID_HOST_DEVICE T integerAt(int64_t i, bool exact) const {
    using U = std::make_unsigned_t<T>;
    if (exact)
      return static_cast<T>(U(static_cast<T>(start)) +
                            U(i) * U(static_cast<T>(step)));
    return static_cast<T>(trunc(start + static_cast<double>(i) * step));
  }
};

/// Checks the result is 1-D.
inline IotaProblem describeIota(const IotaArgs &a) {
  expectRank(a.out, 1, "iota", "result");
  return {a.out.numel(), a.attrs.start, a.attrs.step};
}

} // namespace hybrid::kernels
