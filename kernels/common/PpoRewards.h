// PPO's per-token rewards (ops::PpoRewards): DeepSpeed-Chat's
// compute_rewards and train_rlhf's zeroing after each sequence's end, one
// row at a time in torch's f32 order, and the call's checks, written once.
#pragma once

#include "common/Check.h"
#include "common/ClippedSurrogate.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cstdint>
#include <string>

namespace hybrid::kernels {

/// One call: B rows of L positions, actions from `start`, the reward clip
/// rounded to f32 (torch.clamp's Python scalars).
struct PpoRewardsProblem {
  int64_t rows = 0, positions = 0, start = 0;
  float clip = 5.0f;
};

/// One row: the pointers are the row's (score is the row's reward score).
/// ends = start + sum(mask[start:]) + 1 (summed as a long mask is); the
/// score lands at min(ends, L) - 1, as DeepSpeed-Chat's
/// rewards[j, start:ends][-1] does when ends passes L.
HYBRID_HOST_DEVICE void ppoRewardsRow(const float *logp, const float *ref,
                                      float score, const float *mask,
                                      const float *values, float klCtl,
                                      float *rewards, float *oldValues,
                                      const PpoRewardsProblem &p) {
  double actions = 0;
  for (int64_t t = p.start; t < p.positions; ++t)
    actions += mask[t];
  const int64_t ends =
      p.start + (actions > 0 ? static_cast<int64_t>(actions) : 0) + 1;
  const float negKl = -klCtl;
  for (int64_t t = 0; t < p.positions; ++t) {
    const bool live = t < ends;
    rewards[t] = live ? rn::mul(negKl, logp[t] - ref[t]) : 0.0f;
    oldValues[t] = live ? values[t] : 0.0f;
  }
  const int64_t last = (ends < p.positions ? ends : p.positions) - 1;
  rewards[last] =
      rn::add(rewards[last], surrogate::clamp(score, -p.clip, p.clip));
}

template <typename Args>
PpoRewardsProblem describePpoRewards(const Args &a, const char *kernel) {
  expectRank(a.logprobs, 2, kernel, "logprobs");
  const Shape &shape = a.logprobs.shape;
  const ConstTensor *rows[] = {&a.logprobs, &a.refLogprobs, &a.actionMask,
                               &a.values};
  const char *names[] = {"logprobs", "ref_logprobs", "action_mask", "values"};
  for (int i = 0; i < 4; ++i) {
    expectDType(*rows[i], DType::F32, kernel, names[i]);
    expectShape(*rows[i], shape, kernel, names[i]);
  }
  expectDType(a.rewardScores, DType::F32, kernel, "reward_scores");
  expectShape(a.rewardScores, Shape{shape[0]}, kernel, "reward_scores");
  expectDType(a.klCtl, DType::F32, kernel, "kl_ctl");
  expectShape(a.klCtl, Shape{1}, kernel, "kl_ctl");
  const Tensor *outs[] = {&a.rewards, &a.oldValues};
  const char *outNames[] = {"rewards", "old_values"};
  for (int i = 0; i < 2; ++i) {
    expectDType(*outs[i], DType::F32, kernel, outNames[i]);
    expectShape(*outs[i], shape, kernel, outNames[i]);
  }
  if (a.attrs.start < 0 || a.attrs.start >= shape[1])
    fail(kernel, "start " + std::to_string(a.attrs.start) +
                     " must lie in [0, " + std::to_string(shape[1]) + ")");
  if (!(a.attrs.clipRewardValue >= 0))
    fail(kernel, "clip_reward_value must be >= 0, got " +
                     std::to_string(a.attrs.clipRewardValue));
  PpoRewardsProblem p;
  p.rows = shape[0];
  p.positions = shape[1];
  p.start = a.attrs.start;
  p.clip = static_cast<float>(a.attrs.clipRewardValue);
  return p;
}

} // namespace hybrid::kernels
