// A reward model's pairwise ranking loss (ops::PairwiseRankingLoss,
// DeepSpeed-Chat's RewardModel.forward) and its backward
// (ops::PairwiseRankingLossGrad): each pair's span and end positions, the
// per-element math in torch's order, and the calls' checks, written once
// for every backend.
//
// Convention: rows 0..B-1 are the chosen answers, rows B..2B-1 the
// rejected ones (pair b = rows b and B + b); right padding, the attention
// mask 0 at padding (DeepSpeed-Chat's num_padding_at_beginning = 0, its
// pad id replaced by the mask).
#pragma once

#include "common/Check.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>
#include <string>

namespace hybrid::kernels {

/// One call: B pairs of rows of T positions.
struct PairwiseRankingLossProblem {
  int64_t pairs = 0, tokens = 0;
};

/// One pair's positions: each row's end (its first padding position, T
/// when none) and the span [begin, end) the loss averages over.
struct RankingSpan {
  int64_t chosenEnd = 0, rejectedEnd = 0;
  int64_t begin = 0, end = 0;
};

namespace ranking {

/// The first position whose mask is 0, or T.
HYBRID_HOST_DEVICE int64_t rowEnd(const int64_t *mask, int64_t tokens) {
  for (int64_t t = 0; t < tokens; ++t)
    if (mask[t] == 0)
      return t;
  return tokens;
}

/// Whether two rows agree at a position: both padding (DeepSpeed-Chat's
/// pad id in both), or both tokens of one id.
HYBRID_HOST_DEVICE bool samePosition(int64_t idA, int64_t maskA, int64_t idB,
                                     int64_t maskB) {
  if ((maskA == 0) != (maskB == 0))
    return false;
  return maskA == 0 || idA == idB;
}

/// values[row, end - 1]; an end of 0 reads the last position, as torch's
/// index -1 does.
HYBRID_HOST_DEVICE int64_t scorePosition(int64_t end, int64_t tokens) {
  return end > 0 ? end - 1 : tokens - 1;
}

/// -torch.nn.functional.logsigmoid(x): -(min(x, 0) - log1p(exp(-|x|))).
HYBRID_HOST_DEVICE float negLogSigmoid(float x) {
#if defined(__CUDA_ARCH__)
  const float z = expf(-fabsf(x));
  return -((x < 0.0f ? x : 0.0f) - log1pf(z));
#else
  const float z = std::exp(-std::fabs(x));
  return -((x < 0.0f ? x : 0.0f) - std::log1p(z));
#endif
}

/// torch's log_sigmoid backward at x for upstream gradient u:
/// u (m - sign z / (1 + z)), z = exp(-|x|), m = 1 and sign = 1 where
/// x < 0, else m = 0 and sign = -1.
HYBRID_HOST_DEVICE float logSigmoidGrad(float x, float u) {
#if defined(__CUDA_ARCH__)
  const float z = expf(-fabsf(x));
#else
  const float z = std::exp(-std::fabs(x));
#endif
  const bool negative = x < 0.0f;
  const float m = negative ? 1.0f : 0.0f, sign = negative ? 1.0f : -1.0f;
  return rn::mul(u, rn::sub(m, rn::mul(sign, rn::div(z, rn::add(1.0f, z)))));
}

} // namespace ranking

/// Pair b's span: equal rows score their last position only (DeepSpeed-
/// Chat's end_ind - 1 .. end_ind with end_ind = T, the rejected end the
/// chosen's); otherwise from the first unequal position to the later end.
HYBRID_HOST_DEVICE RankingSpan
rankingSpan(const int64_t *ids, const int64_t *mask, int64_t b,
            const PairwiseRankingLossProblem &p) {
  const int64_t T = p.tokens;
  const int64_t *ci = ids + b * T, *cm = mask + b * T;
  const int64_t *ri = ids + (p.pairs + b) * T, *rm = mask + (p.pairs + b) * T;
  RankingSpan s;
  s.chosenEnd = ranking::rowEnd(cm, T);
  int64_t divergence = -1;
  for (int64_t t = 0; t < T && divergence < 0; ++t)
    if (!ranking::samePosition(ci[t], cm[t], ri[t], rm[t]))
      divergence = t;
  if (divergence < 0) {
    s.rejectedEnd = s.chosenEnd;
    s.begin = T - 1;
    s.end = T;
    return s;
  }
  s.rejectedEnd = ranking::rowEnd(rm, T);
  s.begin = divergence;
  s.end = s.chosenEnd > s.rejectedEnd ? s.chosenEnd : s.rejectedEnd;
  return s;
}

/// Pair b's loss: the mean over its span of -logsigmoid(chosen -
/// rejected), summed in double and rounded to f32 once, divided in f32
/// (an empty span gives NaN, as torch's mean of nothing).
HYBRID_HOST_DEVICE float pairRankingLoss(const float *values,
                                         const RankingSpan &s, int64_t b,
                                         const PairwiseRankingLossProblem &p) {
  const float *c = values + b * p.tokens;
  const float *r = values + (p.pairs + b) * p.tokens;
  double sum = 0;
  for (int64_t t = s.begin; t < s.end; ++t)
    sum += ranking::negLogSigmoid(c[t] - r[t]);
  const int64_t n = s.end > s.begin ? s.end - s.begin : 0;
  return rn::div(static_cast<float>(sum), static_cast<float>(n));
}

/// The upstream gradient of each span element's logsigmoid, as autograd
/// forms it: -((grad / B) / n).
HYBRID_HOST_DEVICE float
rankingSpanGradScale(float grad, const RankingSpan &s,
                     const PairwiseRankingLossProblem &p) {
  const int64_t n = s.end > s.begin ? s.end - s.begin : 0;
  return -rn::div(rn::div(grad, static_cast<float>(p.pairs)),
                  static_cast<float>(n));
}

/// Pair b whole: its loss, its rows' end scores (endScores[b] and
/// endScores[B + b]) and whether the chosen one scores higher.
HYBRID_HOST_DEVICE float rankPair(const float *values, const int64_t *ids,
                                  const int64_t *mask, int64_t b,
                                  const PairwiseRankingLossProblem &p,
                                  float *endScores, bool &chosenHigher) {
  const RankingSpan s = rankingSpan(ids, mask, b, p);
  const int64_t T = p.tokens;
  const float chosen = values[b * T + ranking::scorePosition(s.chosenEnd, T)];
  const float rejected =
      values[(p.pairs + b) * T + ranking::scorePosition(s.rejectedEnd, T)];
  endScores[b] = chosen;
  endScores[p.pairs + b] = rejected;
  chosenHigher = chosen > rejected;
  return pairRankingLoss(values, s, b, p);
}

/// The gradient at position t of pair b's chosen and rejected rows: the
/// span's logsigmoid backward (u from rankingSpanGradScale), plus each end
/// score's upstream gradient at its position.
HYBRID_HOST_DEVICE void pairRankingGradAt(const float *values,
                                          const float *gradEndScores,
                                          const RankingSpan &s, float u,
                                          int64_t b, int64_t t,
                                          const PairwiseRankingLossProblem &p,
                                          float &chosen, float &rejected) {
  const int64_t T = p.tokens;
  chosen = 0.0f;
  rejected = 0.0f;
  if (t >= s.begin && t < s.end) {
    const float d = values[b * T + t] - values[(p.pairs + b) * T + t];
    chosen = ranking::logSigmoidGrad(d, u);
    rejected = -chosen;
  }
  if (t == ranking::scorePosition(s.chosenEnd, T))
    chosen += gradEndScores[b];
  if (t == ranking::scorePosition(s.rejectedEnd, T))
    rejected += gradEndScores[p.pairs + b];
}

namespace ranking {

/// The operands both ops share: values f32 [2B, T], input_ids and
/// attention_mask i64 of its shape.
template <typename Args>
PairwiseRankingLossProblem describeRows(const Args &a, const char *kernel) {
  expectDType(a.values, DType::F32, kernel, "values");
  expectRank(a.values, 2, kernel, "values");
  if (a.values.shape[0] % 2 != 0)
    fail(kernel, "values must hold 2B rows (the chosen answers, then the "
                 "rejected ones), got " +
                     std::to_string(a.values.shape[0]));
  expectDType(a.inputIds, DType::I64, kernel, "input_ids");
  expectShape(a.inputIds, a.values.shape, kernel, "input_ids");
  expectDType(a.attentionMask, DType::I64, kernel, "attention_mask");
  expectShape(a.attentionMask, a.values.shape, kernel, "attention_mask");
  PairwiseRankingLossProblem p;
  p.pairs = a.values.shape[0] / 2;
  p.tokens = a.values.shape[1];
  return p;
}

} // namespace ranking

/// Checks a call of the forward (the shared operands; loss and accuracy
/// f32 [], end_scores f32 [2B]) and describes it.
template <typename Args>
PairwiseRankingLossProblem describePairwiseRankingLoss(const Args &a,
                                                       const char *kernel) {
  const PairwiseRankingLossProblem p = ranking::describeRows(a, kernel);
  expectDType(a.loss, DType::F32, kernel, "loss");
  expectShape(a.loss, Shape{}, kernel, "loss");
  expectDType(a.endScores, DType::F32, kernel, "end_scores");
  expectShape(a.endScores, Shape{2 * p.pairs}, kernel, "end_scores");
  expectDType(a.accuracy, DType::F32, kernel, "accuracy");
  expectShape(a.accuracy, Shape{}, kernel, "accuracy");
  return p;
}

/// Checks a call of the backward (the shared operands, grad f32 [],
/// grad_end_scores f32 [2B]; grad_values of the values' shape) and
/// describes it.
template <typename Args>
PairwiseRankingLossProblem describePairwiseRankingLossGrad(const Args &a,
                                                           const char *kernel) {
  const PairwiseRankingLossProblem p = ranking::describeRows(a, kernel);
  expectDType(a.grad, DType::F32, kernel, "grad");
  expectShape(a.grad, Shape{}, kernel, "grad");
  expectDType(a.gradEndScores, DType::F32, kernel, "grad_end_scores");
  expectShape(a.gradEndScores, Shape{2 * p.pairs}, kernel, "grad_end_scores");
  expectDType(a.gradValues, DType::F32, kernel, "result");
  expectShape(a.gradValues, a.values.shape, kernel, "result");
  return p;
}

} // namespace hybrid::kernels
