// pairwise_ranking_loss and pairwise_ranking_loss_grad: DeepSpeed-Chat's
// reward-model ranking loss over pairs of rows and its gradient
// (kernels/common/PairwiseRankingLoss.h holds the math and the checks both
// backends share).
#include "Kernels.h"

#include "common/PairwiseRankingLoss.h"

namespace hybrid::cpu::kernels {

void pairwiseRankingLoss(const KernelCall &call) {
  const auto a = PairwiseRankingLossArgs::bind(call, "pairwise_ranking_loss");
  const PairwiseRankingLossProblem p =
      describePairwiseRankingLoss(a, "pairwise_ranking_loss");
  const float *values = a.values.as<float>();
  const int64_t *ids = a.inputIds.as<int64_t>();
  const int64_t *mask = a.attentionMask.as<int64_t>();
  float *endScores = a.endScores.as<float>();
  // DeepSpeed-Chat's loss += pair loss from 0 (in f32), then / B.
  float loss = 0.0f;
  int64_t higher = 0;
  for (int64_t b = 0; b < p.pairs; ++b) {
    bool chosenHigher = false;
    loss += rankPair(values, ids, mask, b, p, endScores, chosenHigher);
    higher += chosenHigher ? 1 : 0;
  }
  const float pairs = static_cast<float>(p.pairs);
  a.loss.as<float>()[0] = loss / pairs;
  a.accuracy.as<float>()[0] = static_cast<float>(higher) / pairs;
}

void pairwiseRankingLossGrad(const KernelCall &call) {
  const auto a =
      PairwiseRankingLossGradArgs::bind(call, "pairwise_ranking_loss_grad");
  const PairwiseRankingLossProblem p =
      describePairwiseRankingLossGrad(a, "pairwise_ranking_loss_grad");
  const float *values = a.values.as<float>();
  const int64_t *ids = a.inputIds.as<int64_t>();
  const int64_t *mask = a.attentionMask.as<int64_t>();
  const float *gradEnd = a.gradEndScores.as<float>();
  const float grad = a.grad.as<float>()[0];
  float *out = a.gradValues.as<float>();
  const int64_t T = p.tokens;
  for (int64_t b = 0; b < p.pairs; ++b) {
    const RankingSpan s = rankingSpan(ids, mask, b, p);
    const float u = rankingSpanGradScale(grad, s, p);
    for (int64_t t = 0; t < T; ++t)
      pairRankingGradAt(values, gradEnd, s, u, b, t, p, out[b * T + t],
                        out[(p.pairs + b) * T + t]);
  }
}

} // namespace hybrid::cpu::kernels
