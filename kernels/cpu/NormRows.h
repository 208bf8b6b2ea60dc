// One row of layer_norm and rms_norm, shared by those kernels and by
// linear's norm prologue, so that a fused prologue rounds exactly as the
// unfused norm does: statistics in double, the row in f32, one rounding per
// element.
#pragma once

#include "Element.h"

#include <cmath>
#include <cstdint>

namespace hybrid::cpu {

/// y = (x - mean) / sqrt(var + eps) (population variance) * weight + bias
/// over n elements; weight and bias (f32, n each) may be null.
template <typename S>
void layerNormRow(const S *x, S *y, int64_t n, double eps, const float *weight,
                  const float *bias) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += toFloat(x[i]);
  const double mean = sum / n;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = toFloat(x[i]) - mean;
    sq += d * d;
  }
  const float inv = static_cast<float>(1.0 / std::sqrt(sq / n + eps));
  const float meanF = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) {
    float v = (toFloat(x[i]) - meanF) * inv;
    if (weight)
      v *= weight[i];
    if (bias)
      v += bias[i];
    y[i] = fromFloat<S>(v);
  }
}

/// y = x / sqrt(mean(x^2) + eps) * weight over n elements; weight (f32)
/// may be null.
template <typename S>
void rmsNormRow(const S *x, S *y, int64_t n, double eps, const float *weight) {
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = toFloat(x[i]);
    sq += v * v;
  }
  const float inv = static_cast<float>(1.0 / std::sqrt(sq / n + eps));
  if (weight)
    for (int64_t i = 0; i < n; ++i)
      y[i] = fromFloat<S>(toFloat(x[i]) * inv * weight[i]);
  else
    for (int64_t i = 0; i < n; ++i)
      y[i] = fromFloat<S>(toFloat(x[i]) * inv);
}

} // namespace hybrid::cpu
