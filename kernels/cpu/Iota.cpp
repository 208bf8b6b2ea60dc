// iota: the 1-D sequence start, start + step, ... filling the result (f32,
// bf16, f16, i32 or i64), element by element as kernels/common/Iota.h
// computes it.
#include "common/Iota.h"
#include "Element.h"
#include "Kernels.h"

namespace hybrid::cpu::kernels {

void iota(const KernelCall &call) {
  const IotaArgs a = IotaArgs::bind(call, "iota");
  const IotaProblem p = describeIota(a);
  visitNumeric(a.out.dtype, "iota", "result", [&](auto zero) {
    using S = decltype(zero);
    S *out = a.out.as<S>();
    if constexpr (kIsFloatStorage<S>) {
      for (int64_t i = 0; i < p.n; ++i)
        out[i] = fromFloat<S>(p.floatAt(i));
    } else if (p.exactIn<S>()) {
      for (int64_t i = 0; i < p.n; ++i)
        out[i] = p.integerAt<S>(i, true);
    } else {
      for (int64_t i = 0; i < p.n; ++i)
        out[i] = p.integerAt<S>(i, false);
    }
  });
}

} // namespace hybrid::cpu::kernels
