// rotary: rotary position embedding (kernels/common/Rotary.h) of float
// inputs (f32, bf16, f16) computed in f32, a row of features at a time.
#include "common/Rotary.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void rotary(const KernelCall &call) {
  const RotaryArgs a = RotaryArgs::bind(call, "rotary");
  const RotaryProblem p = describeRotary(a);
  visitFloat(a.input.dtype, "rotary", "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = a.input.as<S>();
    const S *c = a.cos.as<S>();
    const S *s = a.sin.as<S>();
    S *y = a.out.as<S>();
    const int64_t D = p.D, R = p.R, half = R / 2;
    // Pair i is (2i, 2i + 1) interleaved, (i, i + half) split.
    auto rotate = [](const S *xr, const S *cr, const S *sr, S *yr, int64_t i0,
                     int64_t i1) {
      const float x0 = toFloat(xr[i0]), x1 = toFloat(xr[i1]);
      yr[i0] =
          fromFloat<S>(rotaryFirst(x0, x1, toFloat(cr[i0]), toFloat(sr[i0])));
      yr[i1] =
          fromFloat<S>(rotarySecond(x0, x1, toFloat(cr[i1]), toFloat(sr[i1])));
    };
    parallelFor(p.B * p.H * p.T, D * 4, [&](int64_t row) {
      const S *cr = c + p.tableRow(row);
      const S *sr = s + p.tableRow(row);
      const S *xr = x + row * D;
      S *yr = y + row * D;
      if (p.interleaved) {
        for (int64_t i = 0; i < half; ++i)
          rotate(xr, cr, sr, yr, 2 * i, 2 * i + 1);
      } else {
        for (int64_t i = 0; i < half; ++i)
          rotate(xr, cr, sr, yr, i, i + half);
      }
      if (D > R && yr != xr)
        std::memcpy(yr + R, xr + R, (D - R) * sizeof(S));
    });
  });
}

} // namespace hybrid::cpu::kernels
