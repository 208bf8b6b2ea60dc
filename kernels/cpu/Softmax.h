// The row statistics of log_softmax (Softmax.cpp), shared with sample_step
// (SampleStep.cpp) so that its log-probability is log_softmax's, bit for bit.
#pragma once

#include "Element.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace hybrid::cpu::kernels {

/// NaN-propagating running maximum.
inline float maxOf(float m, float v) {
  return (v > m || v != v) && m == m ? v : m;
}

/// log_softmax(x)[i] = x[i] - max - logSum over a row.
struct LogSoftmaxRow {
  float max, logSum;
};

/// The statistics of n contiguous values: their maximum and the log of the
/// sum (in double) of their max-subtracted exponentials.
template <typename S> LogSoftmaxRow logSoftmaxRow(const S *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    m = maxOf(m, toFloat(x[i]));
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += std::exp(toFloat(x[i]) - m);
  return {m, static_cast<float>(std::log(sum))};
}

} // namespace hybrid::cpu::kernels
