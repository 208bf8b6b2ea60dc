// DeepSpeed-Chat's reward-model training (step 2, dschat/utils/model/
// reward_model.py): the pairwise ranking loss of chosen against rejected
// answers, run in the bundle's graph (hybridc compile --head value --train
// --reward: @reward_loss and @reward_forward_backward, the loss
// hg.pairwise_ranking_loss). What crosses to the host is the loss, each
// row's end score and the accuracy.
//
// Convention: right padding, the attention mask 1 at tokens and 0 at
// padding (DeepSpeed-Chat's num_padding_at_beginning = 0, its pad id
// replaced by the mask). A pair's chosen and rejected answers share the
// prompt and one padded length T.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/HostTensor.h"

namespace hybrid {

/// One batch of pairs' ranking: DeepSpeed-Chat's RewardModel.forward loss
/// (the mean over pairs of -logsigmoid(chosen - rejected) averaged from the
/// first differing position to the later end), each answer's score at its
/// last token (chosen_mean_scores, rejected_mean_scores: f32 [B]) and the
/// fraction of pairs whose chosen answer scores higher (its evaluation's
/// accuracy).
struct RewardRanking {
  float loss = 0;
  float accuracy = 0;
  HostTensor chosenScores, rejectedScores;
};

/// One micro-batch of reward-model training: the ranking of B pairs
/// (chosenIds, rejectedIds i64 [B, T], their masks i64 [B, T]) by
/// @reward_forward_backward, its gradients added to the engine's
/// accumulators (Engine::step then updates). Throws hybrid::Error, one
/// line, for tensors of other types or shapes, or a bundle without the
/// executable (naming the hybridc flags that add it).
RewardRanking rewardBackward(Engine &engine, const HostTensor &chosenIds,
                             const HostTensor &chosenMask,
                             const HostTensor &rejectedIds,
                             const HostTensor &rejectedMask);

/// The same ranking without gradients (@reward_loss): evaluation.
RewardRanking rewardEval(Engine &engine, const HostTensor &chosenIds,
                         const HostTensor &chosenMask,
                         const HostTensor &rejectedIds,
                         const HostTensor &rejectedMask);

} // namespace hybrid
