// pairwise_ranking_loss and pairwise_ranking_loss_grad: DeepSpeed-Chat's
// reward-model ranking loss over pairs of rows and its gradient. The
// forward is one block: each thread ranks one pair (its span's sum in the
// CPU's order), then the first thread adds the pair losses in pair order,
// so the loss has the CPU's bits. The backward is a block per pair, its
// threads over the positions. kernels/common/PairwiseRankingLoss.h holds
// the math and the checks both backends share.
#include "Device.cuh"
#include "Kernels.h"

#include "common/PairwiseRankingLoss.h"

namespace hybrid::cuda::kernels {
namespace {

__global__ void rankingLossKernel(const float *values, const int64_t *ids,
                                  const int64_t *mask, float *loss,
                                  float *endScores, float *accuracy,
                                  PairwiseRankingLossProblem p) {
  awaitInputs();
  __shared__ float pairLoss[kThreads];
  __shared__ int pairHigher[kThreads];
  float total = 0.0f;
  int64_t higher = 0;
  for (int64_t first = 0; first < p.pairs; first += blockDim.x) {
    const int64_t b = first + threadIdx.x;
    if (b < p.pairs) {
      bool chosenHigher = false;
      pairLoss[threadIdx.x] =
          rankPair(values, ids, mask, b, p, endScores, chosenHigher);
      pairHigher[threadIdx.x] = chosenHigher ? 1 : 0;
    }
    __syncthreads();
    if (threadIdx.x == 0)
      for (int64_t i = 0; i < blockDim.x && first + i < p.pairs; ++i) {
        total = __fadd_rn(total, pairLoss[i]);
        higher += pairHigher[i];
      }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float pairs = static_cast<float>(p.pairs);
    loss[0] = __fdiv_rn(total, pairs);
    accuracy[0] = __fdiv_rn(static_cast<float>(higher), pairs);
  }
}

__global__ void rankingGradKernel(const float *values, const int64_t *ids,
                                  const int64_t *mask, const float *grad,
                                  const float *gradEnd, float *out,
                                  PairwiseRankingLossProblem p) {
  awaitInputs();
  const int64_t b = blockIdx.x;
  __shared__ RankingSpan span;
  if (threadIdx.x == 0)
    span = rankingSpan(ids, mask, b, p);
  __syncthreads();
  const RankingSpan s = span;
  const float u = rankingSpanGradScale(grad[0], s, p);
  const int64_t T = p.tokens;
  for (int64_t t = threadIdx.x; t < T; t += blockDim.x)
    pairRankingGradAt(values, gradEnd, s, u, b, t, p, out[b * T + t],
                      out[(p.pairs + b) * T + t]);
}

const float *f32(const ConstTensor &t) {
  return static_cast<const float *>(t.data);
}

const int64_t *i64(const ConstTensor &t) {
  return static_cast<const int64_t *>(t.data);
}

} // namespace

void pairwiseRankingLoss(const CudaCall &call) {
  const auto a = PairwiseRankingLossArgs::bind(call, "pairwise_ranking_loss");
  const PairwiseRankingLossProblem p =
      describePairwiseRankingLoss(a, "pairwise_ranking_loss");
  launch(rankingLossKernel, 1, kThreads, 0, streamOf(call), f32(a.values),
         i64(a.inputIds), i64(a.attentionMask),
         static_cast<float *>(a.loss.data),
         static_cast<float *>(a.endScores.data),
         static_cast<float *>(a.accuracy.data), p);
  checkLaunch("pairwise_ranking_loss");
}

void pairwiseRankingLossGrad(const CudaCall &call) {
  const auto a =
      PairwiseRankingLossGradArgs::bind(call, "pairwise_ranking_loss_grad");
  const PairwiseRankingLossProblem p =
      describePairwiseRankingLossGrad(a, "pairwise_ranking_loss_grad");
  if (p.pairs * p.tokens == 0)
    return;
  launch(rankingGradKernel, static_cast<unsigned>(p.pairs), kThreads, 0,
         streamOf(call), f32(a.values), i64(a.inputIds), i64(a.attentionMask),
         f32(a.grad), f32(a.gradEndScores),
         static_cast<float *>(a.gradValues.data), p);
  checkLaunch("pairwise_ranking_loss_grad");
}

} // namespace hybrid::cuda::kernels
