// DeepSpeed-Chat's step 3 as a loop over the engines (dschat's main.py and
// ppo_trainer.py), with GRPO beside PPO. An iteration: the actor generates
// answers to a batch of prompts (eval(): the hybrid engine's generation on
// the weights it trains), the experience is scored (reference log-probs, the
// critic's values, the reward), then train(): PPO's actor and critic losses
// (or GRPO's group-relative loss, no critic) for ppo_epochs passes over the
// experience in micro-batches, one optimizer step each, as DeepSpeed-Chat's
// train_rlhf does.
//
// The maths run in the bundles' graphs (Ppo.h); the loop moves per-token
// tensors [batch, seq - 1] between them, never logits.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/Ppo.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hybrid {

enum class RlhfAlgorithm { Ppo, Grpo };

/// A reward computed on the host from a sampled answer (its tokens up to
/// and including EOS): rule rewards, instead of a reward model.
using RewardFunction =
    std::function<float(const int64_t *answer, int64_t length)>;

/// The share of an answer's tokens that equal `tokenId` (0 for an empty
/// answer): a rule reward a policy can learn quickly.
RewardFunction tokenShareReward(int64_t tokenId);

/// The loop's settings, named as DeepSpeed-Chat's step-3 flags.
struct RlhfConfig {
  RlhfAlgorithm algorithm = RlhfAlgorithm::Ppo;
  int64_t generationBatchSize = 16; ///< prompts per generation batch
  int64_t generationBatches = 1;    ///< generation batches an iteration
  int64_t trainingBatchSize = 16;   ///< sequences per optimizer step
  int64_t ppoEpochs = 1;
  int64_t maxPromptSeqLen = 256; ///< prompts left-padded (or cut) to it
  int64_t maxAnswerSeqLen = 256; ///< new tokens generated
  float actorLearningRate = 9.65e-6f, criticLearningRate = 5e-6f;
  float actorWeightDecay = 0, criticWeightDecay = 0;
  float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
  float maxGradNorm = 1.0f;
  float klCtl = 0.1f; ///< PPO's KL penalty (the critic bundle's clips, gamma
                      ///< and lambda are compiled in)
  /// GRPO: samples per prompt; the actor bundle must be compiled with
  /// --grpo --group-size of the same value.
  int64_t groupSize = 1;
  bool greedy = false; ///< argmax answers (DeepSpeed-Chat's default)
  float temperature = 1.0f;
  int64_t topK = 0;
  float topP = 1.0f;
  int64_t eosTokenId = -1, padTokenId = 0;
  bool releaseInferenceCache = false; ///< the KV cache freed while training
  bool cudaGraph = true;
  uint64_t seed = 1234;
};

/// The engines of a run. Ownership: refers to engines it does not own.
/// When the actor keeps an EMA (Engine::enableEma), it moves after every
/// actor step.
/// The actor trains (hybridc --train --ppo, with --grpo for GRPO), the
/// reference gives @logprobs; the critic (PPO only: --head value --train
/// --ppo --prompt-length maxPromptSeqLen) trains; the reward is a value
/// model's score or, when `reward` is null, `rewardFunction`.
struct RlhfModels {
  Engine &actor;
  Engine &reference;
  Engine *critic = nullptr;
  Engine *reward = nullptr;
  RewardFunction rewardFunction;
};

/// What one iteration did: DeepSpeed-Chat's logged figures and the phases'
/// wall times (device synchronised).
struct RlhfIterationReport {
  int64_t iteration = 0; ///< 0 first
  double rewardMean = 0; ///< the reward scores' mean over the samples
  double kl = 0; ///< mean over answer tokens of actor - reference log-prob
  double actorLoss = 0, criticLoss = 0; ///< means over the steps (critic: PPO)
  double answerLength = 0;              ///< mean generated tokens a sample
  int64_t samples = 0, steps = 0;
  double generateSeconds = 0, experienceSeconds = 0, trainSeconds = 0,
         totalSeconds = 0;
};

/// Ownership: refers to the engines (RlhfModels) and owns the prompts.
/// Thread safety: one thread, and no other use of the engines meanwhile.
class RlhfTrainer {
public:
  /// Checks the config against the engines' bundles (each executable the
  /// algorithm needs, the critic's prompt length, GRPO's group size) and
  /// the prompts (at least one, no empty one). Throws hybrid::Error naming
  /// what is wrong.
  RlhfTrainer(RlhfModels models, RlhfConfig config,
              std::vector<std::vector<int64_t>> prompts);

  /// One iteration: generationBatches batches of the next
  /// generationBatchSize prompts each (cycling through them) are generated
  /// and scored, then trained on, batch after batch, as DeepSpeed-Chat's
  /// loop does.
  RlhfIterationReport iteration();

  /// The iterations run so far; setIteration() resumes a run (data order
  /// and sampling seeds follow the iteration).
  int64_t iterations() const { return iteration_; }
  void setIteration(int64_t iteration) { iteration_ = iteration; }
  const RlhfConfig &config() const { return config_; }

  /// The last iteration's sequences (prompt + answer, i64 [samples,
  /// prompt + answer]) and their mask: what the losses trained on.
  const HostTensor &lastSequences() const { return lastIds_; }
  const HostTensor &lastMask() const { return lastMask_; }

private:
  /// One generation batch, scored: what the losses train on.
  struct Rollout {
    PpoExperience experience;  ///< PPO's; GRPO fills the ids, masks,
                               ///< log-probs and reward scores
    HostTensor grpoAdvantages; ///< GRPO: per sequence, on every position
  };
  Rollout rollout(int64_t batchIndex, RlhfIterationReport &report);
  HostTensor scores(const HostTensor &ids, const HostTensor &mask,
                    const HostTensor &answers, const HostTensor &lengths);
  void trainPpo(const PpoExperience &e, RlhfIterationReport &report,
                double &actorSum, double &criticSum);
  void trainGrpo(const Rollout &r, RlhfIterationReport &report,
                 double &actorSum);
  StepConfig stepConfig(float lr, float weightDecay) const;

  RlhfModels models_;
  RlhfConfig config_;
  std::vector<std::vector<int64_t>> prompts_;
  int64_t iteration_ = 0;
  HostTensor lastIds_, lastMask_;
};

} // namespace hybrid
