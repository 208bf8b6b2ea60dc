// A per-token loss averaged under a mask (ops::MaskedMean), token level or
// per sequence, and its backward (ops::MaskedMeanGrad): the sums every
// backend runs (in double, in element order, so every backend gives the
// same bits) and the call's checks, written once.
#pragma once

#include "common/Check.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cstdint>

namespace hybrid::kernels {

/// One call: rows of T tokens (rows = every dim but the last).
struct MaskedMeanProblem {
  int64_t rows = 0, tokens = 0;
  bool perSequence = false;
};

namespace maskedmean {

/// sum(x m) and sum(m) over n elements: f32 products as torch forms
/// them, summed in double.
HYBRID_HOST_DEVICE void sums(const float *x, const float *m, int64_t n,
                             double &num, double &den) {
  num = 0;
  den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += rn::mul(x[i], m[i]);
    den += m[i];
  }
}

HYBRID_HOST_DEVICE double sum(const float *m, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += m[i];
  return s;
}

} // namespace maskedmean

/// sum(x m) / sum(m), or the mean over rows of each row's.
HYBRID_HOST_DEVICE float maskedMean(const float *x, const float *m,
                                    const MaskedMeanProblem &p) {
  double num, den;
  if (!p.perSequence) {
    maskedmean::sums(x, m, p.rows * p.tokens, num, den);
    return static_cast<float>(num) / static_cast<float>(den);
  }
  double rowMeans = 0;
  for (int64_t r = 0; r < p.rows; ++r) {
    maskedmean::sums(x + r * p.tokens, m + r * p.tokens, p.tokens, num, den);
    rowMeans += static_cast<float>(num) / static_cast<float>(den);
  }
  return static_cast<float>(rowMeans) / static_cast<float>(p.rows);
}

/// The backward's factor of row r's mask, as autograd forms it: grad /
/// sum(m) (token level, `total` = sum(m)), or (grad / rows) / sum_t(m).
HYBRID_HOST_DEVICE float maskedMeanGradScale(const float *m, float grad,
                                             double total, int64_t r,
                                             const MaskedMeanProblem &p) {
  if (!p.perSequence)
    return grad / static_cast<float>(total);
  const double rowSum = maskedmean::sum(m + r * p.tokens, p.tokens);
  return (grad / static_cast<float>(p.rows)) / static_cast<float>(rowSum);
}

/// Checks a call (f32 input and mask of one shape [..., T]; the result
/// f32 []) and describes it.
template <typename Args>
MaskedMeanProblem describeMaskedMean(const Args &a, const char *kernel) {
  expectDType(a.input, DType::F32, kernel, "input");
  expectDType(a.mask, DType::F32, kernel, "mask");
  expectShape(a.mask, a.input.shape, kernel, "mask");
  if (a.input.rank() == 0)
    failRank(a.input.shape, 1, kernel, "input");
  expectDType(a.out, DType::F32, kernel, "result");
  expectShape(a.out, Shape{}, kernel, "result");
  MaskedMeanProblem p;
  p.tokens = a.input.shape.back();
  p.rows = p.tokens ? a.input.numel() / p.tokens : 0;
  p.perSequence = a.attrs.perSequence;
  return p;
}

/// Checks a call of the backward (f32 mask [..., T], grad [], result of the
/// mask's shape) and describes it.
template <typename Args>
MaskedMeanProblem describeMaskedMeanGrad(const Args &a, const char *kernel) {
  expectDType(a.mask, DType::F32, kernel, "mask");
  if (a.mask.rank() == 0)
    failRank(a.mask.shape, 1, kernel, "mask");
  expectDType(a.grad, DType::F32, kernel, "grad");
  expectShape(a.grad, Shape{}, kernel, "grad");
  expectDType(a.gradInput, DType::F32, kernel, "result");
  expectShape(a.gradInput, a.mask.shape, kernel, "result");
  MaskedMeanProblem p;
  p.tokens = a.mask.shape.back();
  p.rows = p.tokens ? a.mask.numel() / p.tokens : 0;
  p.perSequence = a.attrs.perSequence;
  return p;
}

} // namespace hybrid::kernels
