// DeepSpeed-Chat's PPO step over the four engines: experience, then both
// losses' backward passes.
#include "hybrid/Ppo.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>

namespace hybrid {

namespace {

/// `engine`'s executable `name`, or an error saying which model lacks it
/// and how to compile one that has it.
Executable &require(Engine &engine, const char *model, const char *name,
                    const char *compile) {
  if (!engine.hasExecutable(name))
    throw Error(std::string("PPO: the ") + model + "'s bundle '" +
                engine.bundle().model + "' has no @" + name + " (compile it " +
                compile + ")");
  return engine.executable(name);
}

/// Columns [from, to) of a 2-D f32 tensor.
HostTensor columns(const HostTensor &t, int64_t from, int64_t to) {
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  HostTensor out = HostTensor::allocate(DType::F32, {rows, to - from});
  const float *in = t.as<float>();
  float *o = out.as<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = from; c < to; ++c)
      *o++ = in[r * cols + c];
  return out;
}

/// `t` [rows, n] placed at the last n of `width` columns, zeros before.
HostTensor padFront(const HostTensor &t, int64_t width) {
  const int64_t rows = t.shape()[0], n = t.shape()[1];
  HostTensor out = HostTensor::allocate(DType::F32, {rows, width});
  float *o = out.as<float>();
  const float *in = t.as<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      o[r * width + c] = c < width - n ? 0.0f : in[r * n + c - (width - n)];
  return out;
}

NamedTensors tokens(const PpoExperience &e) {
  return {{"input_ids", e.inputIds}, {"attention_mask", e.attentionMask}};
}

} // namespace

HostTensor actionMaskOf(const HostTensor &attentionMask, int64_t promptLength) {
  const int64_t batch = attentionMask.shape()[0];
  const int64_t seq = attentionMask.shape()[1];
  HostTensor out = HostTensor::allocate(DType::F32, {batch, seq - 1});
  const int64_t *mask = attentionMask.as<int64_t>();
  float *o = out.as<float>();
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < seq - 1; ++t)
      o[b * (seq - 1) + t] =
          t >= promptLength - 1 && mask[b * seq + t + 1] ? 1.0f : 0.0f;
  return out;
}

PpoExperience makePpoExperience(PpoModels &models, const HostTensor &inputIds,
                                const HostTensor &attentionMask,
                                int64_t promptLength, float klCtl,
                                const HostTensor *rewardScores) {
  const Shape &shape = inputIds.shape();
  if (inputIds.dtype() != DType::I64 || shape.size() != 2)
    throw Error("PPO: input_ids must be i64 [batch, seq], got " +
                std::string(dtypeName(inputIds.dtype())) + " " +
                shapeToString(shape));
  if (attentionMask.dtype() != DType::I64 || attentionMask.shape() != shape)
    throw Error("PPO: attention_mask must be i64 " + shapeToString(shape) +
                " like input_ids, got " + dtypeName(attentionMask.dtype()) +
                " " + shapeToString(attentionMask.shape()));
  const int64_t batch = shape[0], seq = shape[1];
  if (promptLength < 1 || promptLength >= seq)
    throw Error("PPO: the prompt length " + std::to_string(promptLength) +
                " leaves no answer in sequences of " + std::to_string(seq));
  PpoExperience e;
  e.inputIds = inputIds;
  e.attentionMask = attentionMask;
  e.promptLength = promptLength;
  e.actionMask = actionMaskOf(attentionMask, promptLength);

  require(models.actor, "actor", "logprobs", "with --train");
  require(models.reference, "reference", "logprobs", "with --train");
  e.logprobs = models.actor.logprobs(inputIds, &attentionMask);
  e.refLogprobs = models.reference.logprobs(inputIds, &attentionMask);
  NamedTensors critic = models.critic.forward(tokens(e));
  if (!critic.count("values"))
    throw Error("PPO: the critic must be a value model (hybridc compile "
                "--head value)");
  e.values = columns(critic.at("values"), 0, seq - 1);
  if (rewardScores) {
    if (rewardScores->dtype() != DType::F32 ||
        rewardScores->shape() != Shape{batch})
      throw Error("PPO: reward scores must be f32 [" + std::to_string(batch) +
                  "], got " + dtypeName(rewardScores->dtype()) + " " +
                  shapeToString(rewardScores->shape()));
    e.rewardScores = *rewardScores;
  } else {
    if (!models.reward)
      throw Error("PPO: no reward model and no reward scores");
    NamedTensors reward = models.reward->forward(tokens(e));
    if (!reward.count("scores"))
      throw Error("PPO: the reward model must be a value model (hybridc "
                  "compile --head value)");
    e.rewardScores = reward.at("scores");
  }

  Executable &experience = require(models.critic, "critic", "ppo_experience",
                                   "with --head value --train --ppo");
  NamedTensors out =
      experience.run({{"logprobs", e.logprobs},
                      {"ref_logprobs", e.refLogprobs},
                      {"values", e.values},
                      {"reward_scores", e.rewardScores},
                      {"action_mask", e.actionMask},
                      {"kl_ctl", HostTensor::fromVector<float>({1}, {klCtl})}});
  e.rewards = out.at("rewards");
  e.oldValues = out.at("old_values");
  e.advantages = out.at("advantages");
  e.returns = out.at("returns");
  if (e.advantages.shape()[1] != seq - promptLength)
    throw Error("PPO: the critic was compiled for prompts of " +
                std::to_string(seq - e.advantages.shape()[1]) +
                " tokens, not " + std::to_string(promptLength) +
                " (hybridc --prompt-length)");
  e.advantagesFull = padFront(e.advantages, seq - 1);
  e.returnsFull = padFront(e.returns, seq - 1);
  return e;
}

HostTensor tensorRows(const HostTensor &t, int64_t first, int64_t n) {
  Shape shape = t.shape();
  if (shape.empty() || first < 0 || n < 1 || first + n > shape[0])
    throw Error("rows [" + std::to_string(first) + ", " +
                std::to_string(first + n) + ") of a tensor " +
                shapeToString(shape));
  const int64_t rowBytes =
      static_cast<int64_t>(t.bytes()) / std::max<int64_t>(shape[0], 1);
  shape[0] = n;
  HostTensor out = HostTensor::allocate(t.dtype(), shape);
  std::memcpy(out.data(),
              static_cast<const char *>(t.data()) + first * rowBytes,
              n * rowBytes);
  return out;
}

PpoExperience experienceRows(const PpoExperience &e, int64_t first, int64_t n) {
  PpoExperience r;
  r.promptLength = e.promptLength;
  for (auto [to, from] : std::initializer_list<
           std::pair<HostTensor PpoExperience::*, const HostTensor *>>{
           {&PpoExperience::inputIds, &e.inputIds},
           {&PpoExperience::attentionMask, &e.attentionMask},
           {&PpoExperience::actionMask, &e.actionMask},
           {&PpoExperience::logprobs, &e.logprobs},
           {&PpoExperience::refLogprobs, &e.refLogprobs},
           {&PpoExperience::values, &e.values},
           {&PpoExperience::rewardScores, &e.rewardScores},
           {&PpoExperience::rewards, &e.rewards},
           {&PpoExperience::oldValues, &e.oldValues},
           {&PpoExperience::advantages, &e.advantages},
           {&PpoExperience::returns, &e.returns},
           {&PpoExperience::advantagesFull, &e.advantagesFull},
           {&PpoExperience::returnsFull, &e.returnsFull}})
    r.*to = tensorRows(*from, first, n);
  return r;
}

PpoLosses ppoBackward(PpoModels &models, const PpoExperience &e) {
  PpoLosses losses;
  NamedTensors actor = tokens(e);
  actor["old_logprobs"] = e.logprobs;
  actor["advantages"] = e.advantagesFull;
  actor["action_mask"] = e.actionMask;
  losses.actor = models.actor.accumulate("ppo_actor_forward_backward", actor);
  NamedTensors critic = tokens(e);
  critic["old_values"] = e.oldValues;
  critic["returns"] = e.returnsFull;
  critic["action_mask"] = e.actionMask;
  losses.critic = models.critic.accumulate("critic_forward_backward", critic);
  return losses;
}

} // namespace hybrid
