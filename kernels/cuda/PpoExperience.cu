// The experience maths of PPO and GRPO: ppo_rewards and gae one thread a
// row, group_advantages one thread a group, masked_whiten one block whose
// first thread sums (kernels/common/PpoRewards.h, Gae.h, MaskedWhiten.h and
// GroupAdvantages.h hold the math and the checks both backends share; the
// sums run in the CPU's order, so the results are the CPU's bits). The
// tensors are [B, L] of a PPO step: a thread a row is plenty.
#include "Device.cuh"
#include "Kernels.h"

#include "common/Gae.h"
#include "common/GroupAdvantages.h"
#include "common/MaskedWhiten.h"
#include "common/PpoRewards.h"

namespace hybrid::cuda::kernels {
namespace {

__global__ void rewardsKernel(const float *logp, const float *ref,
                              const float *scores, const float *mask,
                              const float *values, const float *klCtl,
                              float *rewards, float *old, PpoRewardsProblem p) {
  awaitInputs();
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= p.rows)
    return;
  const int64_t o = b * p.positions;
  ::hybrid::kernels::ppoRewardsRow(logp + o, ref + o, scores[b], mask + o,
                                   values + o, klCtl[0], rewards + o, old + o,
                                   p);
}

__global__ void gaeKernel(const float *rewards, const float *values, float *adv,
                          float *ret, GaeProblem p) {
  awaitInputs();
  const int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= p.rows)
    return;
  const int64_t a = p.positions - p.start;
  ::hybrid::kernels::gaeRow(rewards + b * p.positions, values + b * p.positions,
                            adv + b * a, ret + b * a, p);
}

__global__ void groupKernel(const float *scores, float *out,
                            GroupAdvantagesProblem p) {
  awaitInputs();
  const int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g >= p.groups)
    return;
  ::hybrid::kernels::groupAdvantages(scores + g * p.groupSize,
                                     out + g * p.groupSize, p);
}

__global__ void whitenKernel(const float *x, const float *m, float *out,
                             MaskedWhitenProblem p) {
  awaitInputs();
  // Plain floats: a __shared__ variable takes no constructor.
  __shared__ float mean, scale;
  if (threadIdx.x == 0) {
    const WhitenStats first = whitenStats(x, m, p);
    mean = first.mean;
    scale = first.scale;
  }
  __syncthreads();
  WhitenStats s;
  s.mean = mean;
  s.scale = scale;
  for (int64_t i = threadIdx.x; i < p.n; i += blockDim.x)
    out[i] = whiten(x[i], s, p);
}

const float *f32(const ConstTensor &t) {
  return static_cast<const float *>(t.data);
}
float *f32(const Tensor &t) { return static_cast<float *>(t.data); }

unsigned blocksFor(int64_t n) {
  return static_cast<unsigned>((n + kThreads - 1) / kThreads);
}

} // namespace

void ppoRewards(const CudaCall &call) {
  const auto a = PpoRewardsArgs::bind(call, "ppo_rewards");
  const PpoRewardsProblem p = describePpoRewards(a, "ppo_rewards");
  if (p.rows == 0)
    return;
  launch(rewardsKernel, blocksFor(p.rows), kThreads, 0, streamOf(call),
         f32(a.logprobs), f32(a.refLogprobs), f32(a.rewardScores),
         f32(a.actionMask), f32(a.values), f32(a.klCtl), f32(a.rewards),
         f32(a.oldValues), p);
  checkLaunch("ppo_rewards");
}

void gae(const CudaCall &call) {
  const auto a = GaeArgs::bind(call, "gae");
  const GaeProblem p = describeGae(a, "gae");
  if (p.rows == 0)
    return;
  launch(gaeKernel, blocksFor(p.rows), kThreads, 0, streamOf(call),
         f32(a.rewards), f32(a.values), f32(a.advantages), f32(a.returns), p);
  checkLaunch("gae");
}

void maskedWhiten(const CudaCall &call) {
  const auto a = MaskedWhitenArgs::bind(call, "masked_whiten");
  const MaskedWhitenProblem p = describeMaskedWhiten(a, "masked_whiten");
  if (p.n == 0)
    return;
  launch(whitenKernel, 1, kThreads, 0, streamOf(call), f32(a.input),
         f32(a.mask), f32(a.out), p);
  checkLaunch("masked_whiten");
}

void groupAdvantages(const CudaCall &call) {
  const auto a = GroupAdvantagesArgs::bind(call, "group_advantages");
  const GroupAdvantagesProblem p =
      describeGroupAdvantages(a, "group_advantages");
  if (p.groups == 0)
    return;
  launch(groupKernel, blocksFor(p.groups), kThreads, 0, streamOf(call),
         f32(a.scores), f32(a.advantages), p);
  checkLaunch("group_advantages");
}

} // namespace hybrid::cuda::kernels
