// The EMA update's host validation, shared by both backends.
#include "common/Ema.h"

#include "common/Check.h"

#include <string>

namespace hybrid::kernels {

void checkEmaSpans(const std::vector<EmaSpan> &spans, float beta,
                   const char *kernel) {
  if (!(beta >= 0.0f && beta <= 1.0f))
    fail(kernel, "beta " + std::to_string(beta) + " is outside [0, 1]");
  for (size_t i = 0; i < spans.size(); ++i) {
    const EmaSpan &s = spans[i];
    if (s.paramDType != DType::F32 && s.paramDType != DType::BF16 &&
        s.paramDType != DType::F16)
      fail(kernel, "weight " + std::to_string(i) + " is " +
                       dtypeName(s.paramDType) + ", not f32, bf16 or f16");
    if (s.numel < 0 || (s.numel > 0 && (!s.ema || !s.param)))
      fail(kernel, "weight " + std::to_string(i) + " has no memory");
  }
}

} // namespace hybrid::kernels
