// One row of layer_norm and rms_norm, shared by those kernels, by linear's
// norm prologue and by layer_norm_grad, so that a fused prologue rounds
// exactly as the unfused norm does and the backward normalises as the
// forward did: statistics in double, the row in f32, one rounding per
// element.
#pragma once

#include "Element.h"

#include <cmath>
#include <cstdint>

namespace hybrid::cpu {

/// A row's layer-norm statistics, accumulated in double and rounded to f32:
/// x^ = (x - mean) * rstd.
struct LayerNormStats {
  float mean = 0;
  float rstd = 0; // 1 / sqrt(var + eps), population variance
};

template <typename S>
LayerNormStats layerNormStats(const S *x, int64_t n, double eps) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += toFloat(x[i]);
  const double mean = sum / n;
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = toFloat(x[i]) - mean;
    sq += d * d;
  }
  return {static_cast<float>(mean),
          static_cast<float>(1.0 / std::sqrt(sq / n + eps))};
}

/// y = (x - mean) / sqrt(var + eps) (population variance) * weight + bias
/// over n elements; weight and bias (f32, n each) may be null.
template <typename S>
void layerNormRow(const S *x, S *y, int64_t n, double eps, const float *weight,
                  const float *bias) {
  const LayerNormStats st = layerNormStats(x, n, eps);
  for (int64_t i = 0; i < n; ++i) {
    float v = (toFloat(x[i]) - st.mean) * st.rstd;
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
