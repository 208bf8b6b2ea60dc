// iota: the 1-D sequence start, start + step, ... filling the result (f32 or
// i64); the length is the result's (the attribute may be symbolic).
#include "KernelCheck.h"
#include "Kernels.h"

#include <cmath>

namespace hybrid::cpu::kernels {

void iota(const KernelCall &call) {
  expectArity(call, "iota", 0, 1);
  const Tensor &result = call.results[0];
  expectRank(result, 1, "iota", "result");
  const ops::Iota &attrs = call.attrs<ops::Iota>();
  const double start = attrs.start, step = attrs.step;
  const int64_t n = result.numel();
  if (result.dtype == DType::F32) {
    // start + i * step in double (numpy.arange), rounded once to f32.
    float *out = result.as<float>();
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(start + static_cast<double>(i) * step);
    return;
  }
  if (result.dtype == DType::I64) {
    int64_t *out = result.as<int64_t>();
    if (start == std::trunc(start) && step == std::trunc(step) &&
        std::fabs(start) < 9.2e18 && std::fabs(step) < 9.2e18) {
      // Exact integer arithmetic, independent of double rounding.
      int64_t s = static_cast<int64_t>(start), d = static_cast<int64_t>(step);
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<int64_t>(uint64_t(s) + uint64_t(i) * uint64_t(d));
    } else {
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<int64_t>(
            std::trunc(start + static_cast<double>(i) * step));
    }
    return;
  }
  fail("iota", std::string("unsupported result type ") +
                   dtypeName(result.dtype) + " (expected f32 or i64)");
}

} // namespace hybrid::cpu::kernels
