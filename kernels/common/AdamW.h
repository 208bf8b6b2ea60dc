// adamw_update calls as plain data, and the element update of every backend.
#pragma once

#include "common/KernelArgs.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>

namespace hybrid::kernels {

/// The six f32 [1] scalars of an update, in the backend's memory (read on
/// the device on CUDA: a schedule changes them between replays of a
/// captured step).
struct AdamWScalars {
  const float *beta1, *beta2, *eps, *stepSize, *rootBc2, *decayFactor;
};

/// One call: n elements of an f32 parameter and its moments, a gradient of
/// `grad` (f32, bf16 or f16) and, when `working`, the new parameter also
/// written as `workingParam` (bf16 or f16).
struct AdamWProblem {
  int64_t n = 0;
  DType grad = DType::F32;
  bool working = false;
  DType workingParam = DType::BF16;
  AdamWScalars scalars{};
};

/// Checks the call (param, the moments and their results f32 of the
/// param's shape; grad f32, bf16 or f16 of that shape; the working
/// parameter bf16 or f16 of that shape; every scalar f32 with one element)
/// and describes it.
AdamWProblem describeAdamW(const AdamWUpdateArgs &a);

/// What every element's update shares.
struct AdamWCoefficients {
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2, eps, stepSize, rootBc2,
      decayFactor;
};

/// The coefficients from the call's scalars.
HYBRID_HOST_DEVICE AdamWCoefficients adamwCoefficients(const AdamWScalars &s) {
  AdamWCoefficients c;
  c.beta1 = *s.beta1;
  c.oneMinusBeta1 = rn::sub(1.0f, c.beta1);
  c.beta2 = *s.beta2;
  c.oneMinusBeta2 = rn::sub(1.0f, c.beta2);
  c.eps = *s.eps;
  c.stepSize = *s.stepSize;
  c.rootBc2 = *s.rootBc2;
  c.decayFactor = *s.decayFactor;
  return c;
}

/// One element: p, m, v updated from gradient g. m' = beta1 m + (1 -
/// beta1) g; v' = beta2 v + (1 - beta2) (g g); p' = p decay_factor -
/// step_size (m' / (sqrt(v') / bias_correction2_sqrt + eps)), in this
/// order on every backend: the order of the elementwise ops hg-adamw
/// composed it from, so that every backend gives their bits.
HYBRID_HOST_DEVICE void adamwUpdateElement(const AdamWCoefficients &c, float g,
                                           float &p, float &m, float &v) {
  m = rn::add(rn::mul(c.beta1, m), rn::mul(c.oneMinusBeta1, g));
  v = rn::add(rn::mul(c.beta2, v), rn::mul(c.oneMinusBeta2, rn::mul(g, g)));
  const float denom = rn::add(rn::div(rn::sqrt(v), c.rootBc2), c.eps);
  p = rn::sub(rn::mul(p, c.decayFactor),
              rn::mul(c.stepSize, rn::div(m, denom)));
}

} // namespace hybrid::kernels
