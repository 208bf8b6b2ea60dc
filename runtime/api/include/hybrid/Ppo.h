// DeepSpeed-Chat's PPO step (dschat/rlhf/ppo_trainer.py) over four engines
// on one device: the actor (generation and training, the hybrid engine),
// the reference (its frozen copy, inference only), the critic (a value
// model, trained) and the reward model (a value model, inference only).
//
// The maths run in the bundles' graphs: the actor's @logprobs and
// @ppo_actor_forward_backward, the critic's @forward, @ppo_experience
// (compute_rewards, GAE) and @critic_forward_backward (hybridc --train
// --ppo; the value models with --head value). What crosses to the host is
// per token ([batch, seq - 1] f32), never [batch, seq, vocab].
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/HostTensor.h"

#include <cstdint>

namespace hybrid {

/// The four models of a step. Ownership: refers to engines it does not
/// own; their weights bound. Actor and critic must have their training
/// executables (hybridc --train --ppo), the reference its @logprobs; the
/// reward model may be null when the caller scores the sequences itself
/// (makePpoExperience's rewardScores).
struct PpoModels {
  Engine &actor;
  Engine &reference;
  Engine &critic;
  Engine *reward = nullptr;
};

/// One batch of experience, as DeepSpeed-Chat's generate_experience and
/// train_rlhf compute it. Per-token tensors are f32 [batch, seq - 1]:
/// position t scores token t + 1.
struct PpoExperience {
  HostTensor inputIds;      ///< i64 [batch, seq]: prompts, then answers
  HostTensor attentionMask; ///< i64 [batch, seq]: 0 at padding
  int64_t promptLength = 0; ///< the prompts' (left-padded) length
  HostTensor actionMask;    ///< 1 at the answer's tokens, 0 before and at pads
  HostTensor logprobs, refLogprobs, values; ///< actor, reference, critic
  HostTensor rewardScores; ///< f32 [batch]: the score at the last token
  HostTensor rewards;      ///< KL penalty, the clipped score at the end
  HostTensor oldValues;    ///< values, 0 past each answer's end
  /// From the first action on, [batch, seq - prompt], as DeepSpeed-Chat
  /// returns them; advantagesFull / returnsFull are the same at [batch,
  /// seq - 1] (zeros before), what the losses take.
  HostTensor advantages, returns, advantagesFull, returnsFull;
};

/// The actions of sequences with prompts of `promptLength` (attention mask
/// i64 [batch, seq]): f32 [batch, seq - 1], 1 where position t scores an
/// answer's token (t >= promptLength - 1, token t + 1 not padding).
HostTensor actionMaskOf(const HostTensor &attentionMask, int64_t promptLength);

/// The experience of sequences `inputIds` (i64 [batch, seq], prompts of
/// `promptLength` then answers, `attentionMask` 0 at padding): the actor's
/// and reference's log-probabilities, the critic's values, the reward
/// model's scores (or `rewardScores`, f32 [batch], when given), then the
/// critic bundle's @ppo_experience with `klCtl`. Throws hybrid::Error
/// naming a model whose bundle lacks an executable, or a prompt length the
/// critic was not compiled for.
PpoExperience makePpoExperience(PpoModels &models, const HostTensor &inputIds,
                                const HostTensor &attentionMask,
                                int64_t promptLength, float klCtl,
                                const HostTensor *rewardScores = nullptr);

/// Rows [first, first + n) of every tensor of `e` (a micro-batch).
PpoExperience experienceRows(const PpoExperience &e, int64_t first, int64_t n);

/// Rows [first, first + n) of a tensor whose first dimension is the batch.
HostTensor tensorRows(const HostTensor &t, int64_t first, int64_t n);

/// The losses of one micro-batch of experience, their gradients added to
/// each engine's accumulators (step() then updates): the actor's clipped
/// surrogate and the critic's clipped value loss.
struct PpoLosses {
  float actor = 0;
  float critic = 0;
};
PpoLosses ppoBackward(PpoModels &models, const PpoExperience &experience);

} // namespace hybrid
