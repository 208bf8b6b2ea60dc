// The experience maths of PPO and GRPO, row (or group) at a time: ppo_rewards,
// gae, masked_whiten and group_advantages (kernels/common/PpoRewards.h,
// Gae.h, MaskedWhiten.h and GroupAdvantages.h hold the math and the checks
// both backends share). Small [B, L] tensors: no threads.
#include "Kernels.h"

#include "common/Gae.h"
#include "common/GroupAdvantages.h"
#include "common/MaskedWhiten.h"
#include "common/PpoRewards.h"

namespace hybrid::cpu::kernels {

void ppoRewards(const KernelCall &call) {
  const auto a = PpoRewardsArgs::bind(call, "ppo_rewards");
  const PpoRewardsProblem p = describePpoRewards(a, "ppo_rewards");
  const int64_t L = p.positions;
  const float *logp = a.logprobs.as<float>(), *ref = a.refLogprobs.as<float>(),
              *scores = a.rewardScores.as<float>(),
              *mask = a.actionMask.as<float>(), *values = a.values.as<float>();
  const float klCtl = a.klCtl.as<float>()[0];
  float *rewards = a.rewards.as<float>(), *old = a.oldValues.as<float>();
  for (int64_t b = 0; b < p.rows; ++b)
    ppoRewardsRow(logp + b * L, ref + b * L, scores[b], mask + b * L,
                  values + b * L, klCtl, rewards + b * L, old + b * L, p);
}

void gae(const KernelCall &call) {
  const auto a = GaeArgs::bind(call, "gae");
  const GaeProblem p = describeGae(a, "gae");
  const int64_t L = p.positions, A = p.positions - p.start;
  const float *rewards = a.rewards.as<float>(), *values = a.values.as<float>();
  float *adv = a.advantages.as<float>(), *ret = a.returns.as<float>();
  for (int64_t b = 0; b < p.rows; ++b)
    gaeRow(rewards + b * L, values + b * L, adv + b * A, ret + b * A, p);
}

void maskedWhiten(const KernelCall &call) {
  const auto a = MaskedWhitenArgs::bind(call, "masked_whiten");
  const MaskedWhitenProblem p = describeMaskedWhiten(a, "masked_whiten");
  const float *x = a.input.as<float>(), *m = a.mask.as<float>();
  float *out = a.out.as<float>();
  if (p.n == 0)
    return;
  const WhitenStats s = whitenStats(x, m, p);
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = whiten(x[i], s, p);
}

void groupAdvantages(const KernelCall &call) {
  const auto a = GroupAdvantagesArgs::bind(call, "group_advantages");
  const GroupAdvantagesProblem p =
      describeGroupAdvantages(a, "group_advantages");
  const float *scores = a.scores.as<float>();
  float *out = a.advantages.as<float>();
  for (int64_t g = 0; g < p.groups; ++g)
    ::hybrid::kernels::groupAdvantages(scores + g * p.groupSize,
                                       out + g * p.groupSize, p);
}

} // namespace hybrid::cpu::kernels
