// masked_mean and masked_mean_grad: a per-token loss averaged under a mask,
// token level or per sequence, and its gradient (kernels/common/
// MaskedMean.h holds the math and the checks both backends share).
#include "Kernels.h"

#include "common/MaskedMean.h"

namespace hybrid::cpu::kernels {

void maskedMean(const KernelCall &call) {
  const auto a = MaskedMeanArgs::bind(call, "masked_mean");
  const MaskedMeanProblem p = describeMaskedMean(a, "masked_mean");
  a.out.as<float>()[0] =
      ::hybrid::kernels::maskedMean(a.input.as<float>(), a.mask.as<float>(), p);
}

void maskedMeanGrad(const KernelCall &call) {
  const auto a = MaskedMeanGradArgs::bind(call, "masked_mean_grad");
  const MaskedMeanProblem p = describeMaskedMeanGrad(a, "masked_mean_grad");
  const float *m = a.mask.as<float>();
  const float g = a.grad.as<float>()[0];
  float *out = a.gradInput.as<float>();
  const double total =
      p.perSequence ? 0.0 : maskedmean::sum(m, p.rows * p.tokens);
  for (int64_t r = 0; r < p.rows; ++r) {
    const float scale = maskedMeanGradScale(m, g, total, r, p);
    for (int64_t t = 0; t < p.tokens; ++t)
      out[r * p.tokens + t] = scale * m[r * p.tokens + t];
  }
}

} // namespace hybrid::cpu::kernels
