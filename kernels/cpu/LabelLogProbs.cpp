// label_log_probs and label_log_probs_grad: a fused cross-entropy over rows
// of V logits (f32, bf16 or f16) and their labels (i32 or i64). The row
// statistics are log_softmax's (Softmax.h: the maximum in f32, the sum of
// exponentials in double), so a label's log-probability is bit for bit the
// one log_softmax gives; a label outside [0, V) (the ignore index -100)
// gives 0 and a zero gradient row, and is never read. Rows run in parallel,
// each on one thread, so the results do not depend on the thread count.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Softmax.h"

#include "common/LabelLogProbs.h"

#include <cmath>

namespace hybrid::cpu::kernels {
namespace {

/// The label of row r when it is in [0, V), else -1.
int64_t labelOf(const ConstTensor &labels, int64_t r, int64_t vocab) {
  const int64_t label = indexAt(labels, r);
  return label >= 0 && label < vocab ? label : -1;
}

} // namespace

void labelLogProbs(const KernelCall &call) {
  const auto a = LabelLogProbsArgs::bind(call, "label_log_probs");
  const LabelLogProbsProblem s = describeLabelLogProbs(a);
  float *out = a.out.as<float>();
  visitFloat(s.dtype, "label_log_probs", "logits", [&](auto zero) {
    using S = decltype(zero);
    const S *x = a.logits.as<S>();
    parallelFor(s.rows, s.vocab * 4, [&](int64_t r) {
      const int64_t label = labelOf(a.labels, r, s.vocab);
      if (label < 0) {
        out[r] = 0;
        return;
      }
      const S *row = x + r * s.vocab;
      const LogSoftmaxRow st = logSoftmaxRow(row, s.vocab);
      out[r] = toFloat(row[label]) - st.max - st.logSum;
    });
  });
}

void labelLogProbsGrad(const KernelCall &call) {
  const auto a = LabelLogProbsGradArgs::bind(call, "label_log_probs_grad");
  const LabelLogProbsProblem s = describeLabelLogProbsGrad(a);
  const float *g = a.grad.as<float>();
  visitFloat(s.dtype, "label_log_probs_grad", "logits", [&](auto zero) {
    using S = decltype(zero);
    const S *x = a.logits.as<S>();
    S *dx = a.out.as<S>();
    parallelFor(s.rows, s.vocab * 8, [&](int64_t r) {
      const int64_t label = labelOf(a.labels, r, s.vocab);
      const S *row = x + r * s.vocab;
      S *out = dx + r * s.vocab;
      if (label < 0) {
        std::fill(out, out + s.vocab, fromFloat<S>(0.0f));
        return;
      }
      const LogSoftmaxRow st = logSoftmaxRow(row, s.vocab);
      const float gr = g[r];
      for (int64_t j = 0; j < s.vocab; ++j) {
        const float p = std::exp(toFloat(row[j]) - st.max - st.logSum);
        out[j] = fromFloat<S>(gr * ((j == label ? 1.0f : 0.0f) - p));
      }
    });
  });
}

} // namespace hybrid::cpu::kernels
