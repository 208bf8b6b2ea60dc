// softmax and log_softmax along an axis on floats (f32, bf16, f16):
// max-subtracted exponentials in f32, sums in double, each output rounded
// once. A row of all -inf gives NaN, as in PyTorch and ONNX.
#include "Softmax.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

/// Softmax of n contiguous values.
template <typename S>
void softmaxRow(const S *x, S *y, int64_t n, bool logarithm) {
  if (logarithm) {
    const LogSoftmaxRow row = logSoftmaxRow(x, n);
    for (int64_t i = 0; i < n; ++i)
      y[i] = fromFloat<S>(toFloat(x[i]) - row.max - row.logSum);
    return;
  }
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    m = maxOf(m, toFloat(x[i]));
  double sum = 0;
  if constexpr (std::is_same_v<S, float>) {
    // f32 keeps the exponentials in the result; narrower types recompute
    // them rather than round twice.
    for (int64_t i = 0; i < n; ++i) {
      y[i] = std::exp(x[i] - m);
      sum += y[i];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i)
      y[i] *= inv;
  } else {
    for (int64_t i = 0; i < n; ++i)
      sum += std::exp(toFloat(x[i]) - m);
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i)
      y[i] = fromFloat<S>(std::exp(toFloat(x[i]) - m) * inv);
  }
}

/// Softmax down the n rows of an [n, inner] block, all columns at once;
/// `m` and `sum` are the thread's scratch of `inner` entries.
template <typename S>
void softmaxColumns(const S *x, S *y, int64_t n, int64_t inner, bool logarithm,
                    float *m, double *sum) {
  std::fill(m, m + inner, -std::numeric_limits<float>::infinity());
  std::fill(sum, sum + inner, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j)
      m[j] = maxOf(m[j], toFloat(x[i * inner + j]));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j)
      sum[j] += std::exp(toFloat(x[i * inner + j]) - m[j]);
  for (int64_t j = 0; j < inner; ++j)
    sum[j] = logarithm ? std::log(sum[j]) : 1.0 / sum[j];
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      const float v = toFloat(x[i * inner + j]) - m[j];
      const float s = static_cast<float>(sum[j]);
      y[i * inner + j] = fromFloat<S>(logarithm ? v - s : std::exp(v) * s);
    }
}

/// Column softmaxes keep a maximum and a sum per column and thread.
ScratchLayout softmaxScratch(const KernelCall &call) {
  const SoftmaxProblem s =
      softmaxShape(call.operands.at(ops::Softmax::In::input).shape,
                   call.attrs<ops::Softmax>().axis, "softmax");
  ScratchLayout layout;
  if (s.inner > 1) {
    Carve carve;
    carve.take<float>(s.inner);
    carve.take<double>(s.inner);
    layout.perThread = carve.used();
  }
  return layout;
}

} // namespace

void softmax(const KernelCall &call) {
  const char *kernel = softmaxKernel(call.attrs<ops::Softmax>());
  const auto a = SoftmaxArgs::bind(call, kernel);
  const SoftmaxProblem s = describeSoftmax(a);
  const bool logarithm = s.log;
  visitFloat(s.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = a.input.as<S>();
    S *y = a.out.as<S>();
    if (a.input.rank() == 0) {
      // One element: softmax 1, log_softmax 0 (NaN stays NaN).
      const float v = toFloat(*x);
      *y = fromFloat<S>(v != v ? v : logarithm ? 0.0f : 1.0f);
      return;
    }
    if (a.input.numel() == 0)
      return;
    if (s.inner == 1) {
      parallelFor(s.outer, s.n * 16, [&](int64_t o) {
        softmaxRow(x + o * s.n, y + o * s.n, s.n, logarithm);
      });
      return;
    }
    const ScratchLayout layout = softmaxScratch(call);
    const int threads = scratchThreads(call, layout, kernel);
    parallelFor(
        s.outer, s.n * s.inner * 16,
        [&](int64_t o) {
          Carve carve(threadScratch(call, layout, workerSlot()));
          float *m = carve.take<float>(s.inner);
          double *sum = carve.take<double>(s.inner);
          softmaxColumns(x + o * s.n * s.inner, y + o * s.n * s.inner, s.n,
                         s.inner, logarithm, m, sum);
        },
        threads);
  });
}

size_t softmaxScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<softmaxScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
