// softmax and log_softmax along an axis (f32): max-subtracted exponentials,
// sums in double. A row of all -inf gives NaN, as in PyTorch and ONNX.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace hybrid::cpu::kernels {
namespace {

/// Softmax of n contiguous values.
void softmaxRow(const float *x, float *y, int64_t n, bool logarithm) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    m = (x[i] > m || x[i] != x[i]) && m == m ? x[i] : m;
  double sum = 0;
  if (logarithm) {
    for (int64_t i = 0; i < n; ++i)
      sum += std::exp(x[i] - m);
    const float logSum = static_cast<float>(std::log(sum));
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - m - logSum;
  } else {
    for (int64_t i = 0; i < n; ++i) {
      y[i] = std::exp(x[i] - m);
      sum += y[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i)
      y[i] *= inv;
  }
}

/// Softmax down the n rows of an [n, inner] block, all columns at once;
/// `m` and `sum` are scratch of `inner` entries.
void softmaxColumns(const float *x, float *y, int64_t n, int64_t inner,
                    bool logarithm, float *m, double *sum) {
  std::fill(m, m + inner, -std::numeric_limits<float>::infinity());
  std::fill(sum, sum + inner, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      float v = x[i * inner + j];
      m[j] = (v > m[j] || v != v) && m[j] == m[j] ? v : m[j];
    }
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      float e = std::exp(x[i * inner + j] - m[j]);
      if (!logarithm)
        y[i * inner + j] = e;
      sum[j] += e;
    }
  for (int64_t j = 0; j < inner; ++j)
    sum[j] = logarithm ? std::log(sum[j]) : 1.0 / sum[j];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      float &out = y[i * inner + j];
      if (logarithm)
        out = x[i * inner + j] - m[j] - static_cast<float>(sum[j]);
      else
        out *= static_cast<float>(sum[j]);
    }
}

void softmaxAlongAxis(const KernelCall &call, const char *kernel,
                      bool logarithm, int64_t axisAttr) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(input, DType::F32, kernel, "input");
  expectDType(result, DType::F32, kernel, "result");
  expectShape(result, input.shape, kernel, "result");
  const int64_t rank = input.rank();
  if (rank == 0) {
    // One element: softmax 1, log_softmax 0 (NaN stays NaN).
    float x = *input.as<float>();
    *result.as<float>() = x != x ? x : logarithm ? 0.0f : 1.0f;
    return;
  }
  const int64_t axis = normalizeAxis(axisAttr, rank, kernel);
  const int64_t outer = product(input.shape, 0, axis);
  const int64_t n = input.shape[axis];
  const int64_t inner = product(input.shape, axis + 1, rank);
  if (input.numel() == 0)
    return;
  const float *x = input.as<float>();
  float *y = result.as<float>();
  if (inner == 1) {
    parallelFor(outer, n * 16, [&](int64_t o) {
      softmaxRow(x + o * n, y + o * n, n, logarithm);
    });
  } else {
    PerThreadScratch<float> maxima(inner);
    PerThreadScratch<double> sums(inner);
    parallelFor(outer, n * inner * 16, [&](int64_t o) {
      softmaxColumns(x + o * n * inner, y + o * n * inner, n, inner, logarithm,
                     maxima.get(), sums.get());
    });
  }
}

} // namespace

void softmax(const KernelCall &call) {
  const ops::Softmax &attrs = call.attrs<ops::Softmax>();
  softmaxAlongAxis(call, attrs.log ? "log_softmax" : "softmax", attrs.log,
                   attrs.axis);
}

} // namespace hybrid::cpu::kernels
