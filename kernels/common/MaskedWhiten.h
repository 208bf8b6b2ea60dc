// Whitening under a mask (ops::MaskedWhiten), TRL's masked_whiten: the
// statistics every backend computes (sums in double, in element order, so
// every backend gives the same bits), the per-element step, and the call's
// checks, written once.
#pragma once

#include "common/Check.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>

namespace hybrid::kernels {

struct MaskedWhitenProblem {
  int64_t n = 0;
  bool shiftMean = true, unbiased = true;
  float epsilon = 1e-8f;
};

/// The masked mean and 1 / sqrt(var + epsilon).
struct WhitenStats {
  float mean = 0, scale = 1;
};

/// TRL's order: mean = sum(x m) / sum(m); var = sum((x - mean)^2 m) /
/// sum(m), times sum(m) / (sum(m) - 1) when unbiased; then rsqrt(var +
/// eps), as 1 / sqrt (rsqrtf would differ between backends).
HYBRID_HOST_DEVICE WhitenStats whitenStats(const float *x, const float *m,
                                           const MaskedWhitenProblem &p) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    num += rn::mul(x[i], m[i]);
    den += m[i];
  }
  const float count = static_cast<float>(den);
  WhitenStats s;
  s.mean = static_cast<float>(num) / count;
  double squares = 0;
  for (int64_t i = 0; i < p.n; ++i) {
    const float c = x[i] - s.mean;
    squares += rn::mul(rn::mul(c, c), m[i]);
  }
  float var = static_cast<float>(squares) / count;
  if (p.unbiased)
    var = rn::mul(var, count / (count - 1.0f));
#if defined(__CUDA_ARCH__)
  s.scale = 1.0f / sqrtf(rn::add(var, p.epsilon));
#else
  s.scale = 1.0f / std::sqrt(rn::add(var, p.epsilon));
#endif
  return s;
}

HYBRID_HOST_DEVICE float whiten(float x, const WhitenStats &s,
                                const MaskedWhitenProblem &p) {
  const float w = rn::mul(x - s.mean, s.scale);
  return p.shiftMean ? w : rn::add(w, s.mean);
}

template <typename Args>
MaskedWhitenProblem describeMaskedWhiten(const Args &a, const char *kernel) {
  expectDType(a.input, DType::F32, kernel, "input");
  expectDType(a.mask, DType::F32, kernel, "mask");
  expectShape(a.mask, a.input.shape, kernel, "mask");
  expectDType(a.out, DType::F32, kernel, "result");
  expectShape(a.out, a.input.shape, kernel, "result");
  MaskedWhitenProblem p;
  p.n = a.input.numel();
  p.shiftMean = a.attrs.shiftMean;
  p.unbiased = a.attrs.unbiased;
  p.epsilon = static_cast<float>(a.attrs.epsilon);
  return p;
}

} // namespace hybrid::kernels
