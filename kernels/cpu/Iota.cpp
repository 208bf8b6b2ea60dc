// iota: the 1-D sequence start, start + step, ... filling the result (f32,
// bf16, f16, i32 or i64); the length is the result's (the compiler's may be
// symbolic).
#include "Element.h"
#include "Kernels.h"

#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {

void iota(const KernelCall &call) {
  expectArity(call, "iota", 0, 1);
  const Tensor &result = call.results[0];
  expectRank(result, 1, "iota", "result");
  const ops::Iota &attrs = call.attrs<ops::Iota>();
  const double start = attrs.start, step = attrs.step;
  const int64_t n = result.numel();
  visitNumeric(result.dtype, "iota", "result", [&](auto zero) {
    using S = decltype(zero);
    S *out = result.as<S>();
    if constexpr (kIsFloatStorage<S>) {
      // start + i * step in double (numpy.arange), rounded once.
      for (int64_t i = 0; i < n; ++i)
        out[i] = fromFloat<S>(
            static_cast<float>(start + static_cast<double>(i) * step));
    } else {
      using U = std::make_unsigned_t<S>;
      const double limit = static_cast<double>(std::numeric_limits<S>::max());
      if (start == std::trunc(start) && step == std::trunc(step) &&
          std::fabs(start) < limit && std::fabs(step) < limit) {
        // Exact integer arithmetic (wrapping), independent of rounding.
        const U s = U(static_cast<S>(start)), d = U(static_cast<S>(step));
        for (int64_t i = 0; i < n; ++i)
          out[i] = static_cast<S>(s + U(i) * d);
      } else {
        for (int64_t i = 0; i < n; ++i)
          out[i] =
              static_cast<S>(std::trunc(start + static_cast<double>(i) * step));
      }
    }
  });
}

} // namespace hybrid::cpu::kernels
