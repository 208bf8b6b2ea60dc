// DeepSpeed-Chat's step-3 loop (PPO) and GRPO over the engines.
#include "hybrid/Rlhf.h"

#include "hybrid/RlhfData.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <variant>

namespace hybrid {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void require(Engine &engine, const char *model, const char *name,
             const char *compile) {
  if (!engine.hasExecutable(name))
    throw Error(std::string("RLHF: the ") + model + "'s bundle '" +
                engine.bundle().model + "' has no @" + name + " (compile it " +
                compile + ")");
}

/// The group size @grpo_advantages was compiled for (hybridc --group-size).
int64_t compiledGroupSize(const Engine &actor) {
  for (const ExecutableDesc &exe : actor.bundle().executables)
    if (exe.name == "grpo_advantages")
      for (const CommandDesc &cmd : exe.commands)
        if (auto *op = std::get_if<ops::GroupAdvantages>(&cmd.op))
          return op->groupSize;
  return 0;
}

/// Mean over the action mask of logprobs - refLogprobs.
double meanKl(const HostTensor &logprobs, const HostTensor &refLogprobs,
              const HostTensor &actionMask) {
  double sum = 0, count = 0;
  const float *lp = logprobs.as<float>(), *ref = refLogprobs.as<float>(),
              *m = actionMask.as<float>();
  for (int64_t i = 0, n = actionMask.numel(); i < n; ++i) {
    sum += m[i] * (static_cast<double>(lp[i]) - ref[i]);
    count += m[i];
  }
  return count > 0 ? sum / count : 0;
}

} // namespace

RewardFunction tokenShareReward(int64_t tokenId) {
  return [tokenId](const int64_t *answer, int64_t length) {
    if (length <= 0)
      return 0.0f;
    int64_t hits = 0;
    for (int64_t i = 0; i < length; ++i)
      hits += answer[i] == tokenId;
    return static_cast<float>(hits) / static_cast<float>(length);
  };
}

RlhfTrainer::RlhfTrainer(RlhfModels models, RlhfConfig config,
                         std::vector<std::vector<int64_t>> prompts)
    : models_(std::move(models)), config_(config),
      prompts_(std::move(prompts)) {
  const bool ppo = config_.algorithm == RlhfAlgorithm::Ppo;
  if (prompts_.empty())
    throw Error("RLHF: no prompts");
  for (size_t i = 0; i < prompts_.size(); ++i)
    if (prompts_[i].empty())
      throw Error("RLHF: prompt " + std::to_string(i) + " is empty");
  auto positive = [](int64_t v, const char *flag) {
    if (v < 1)
      throw Error(std::string("RLHF: ") + flag + " must be at least 1, got " +
                  std::to_string(v));
  };
  positive(config_.generationBatchSize, "per_device_generation_batch_size");
  positive(config_.generationBatches, "generation_batches");
  positive(config_.trainingBatchSize, "per_device_training_batch_size");
  positive(config_.ppoEpochs, "ppo_epochs");
  positive(config_.maxPromptSeqLen, "max_prompt_seq_len");
  positive(config_.maxAnswerSeqLen, "max_answer_seq_len");
  positive(config_.groupSize, "group size");
  if (ppo && config_.groupSize != 1)
    throw Error("RLHF: a group size applies to GRPO, not PPO");

  require(models_.actor, "actor", "prefill", "without --no-generate");
  require(models_.actor, "actor", "logprobs", "with --train");
  require(models_.reference, "reference", "logprobs", "with --train");
  if (ppo) {
    require(models_.actor, "actor", "ppo_actor_forward_backward",
            "with --train --ppo");
    if (!models_.critic)
      throw Error("RLHF: PPO needs a critic");
    require(*models_.critic, "critic", "ppo_experience",
            "with --head value --train --ppo --prompt-length P");
    require(*models_.critic, "critic", "critic_forward_backward",
            "with --head value --train --ppo");
  } else {
    require(models_.actor, "actor", "grpo_forward_backward",
            "with --train --ppo --grpo");
    require(models_.actor, "actor", "grpo_advantages",
            "with --train --ppo --grpo");
    const int64_t compiled = compiledGroupSize(models_.actor);
    if (compiled != config_.groupSize)
      throw Error("RLHF: the actor's @grpo_advantages was compiled for groups "
                  "of " +
                  std::to_string(compiled) + ", not " +
                  std::to_string(config_.groupSize) +
                  " (hybridc --group-size)");
  }
  if (!models_.reward && !models_.rewardFunction)
    throw Error("RLHF: no reward model and no reward function");
  if (models_.reward)
    require(*models_.reward, "reward model", "forward", "with --head value");
}

StepConfig RlhfTrainer::stepConfig(float lr, float weightDecay) const {
  StepConfig step;
  step.lr = lr;
  step.beta1 = config_.beta1;
  step.beta2 = config_.beta2;
  step.eps = config_.eps;
  step.weightDecay = weightDecay;
  step.maxGradNorm = config_.maxGradNorm;
  return step;
}

HostTensor RlhfTrainer::scores(const HostTensor &ids, const HostTensor &mask,
                               const HostTensor &answers,
                               const HostTensor &lengths) {
  if (models_.reward)
    return models_.reward
        ->forward({{"input_ids", ids}, {"attention_mask", mask}})
        .at("scores");
  const int64_t rows = answers.shape()[0], steps = answers.shape()[1];
  HostTensor out = HostTensor::allocate(DType::F32, {rows});
  for (int64_t r = 0; r < rows; ++r)
    out.as<float>()[r] =
        models_.rewardFunction(answers.as<int64_t>() + r * steps,
                               std::min(steps, lengths.as<int64_t>()[r]));
  return out;
}

RlhfTrainer::Rollout RlhfTrainer::rollout(int64_t batchIndex,
                                          RlhfIterationReport &report) {
  const auto start = Clock::now();
  const int64_t batch = config_.generationBatchSize;
  const int64_t group = config_.groupSize;
  const int64_t promptLength = config_.maxPromptSeqLen;

  // The next prompts, each groupSize times in a row.
  std::vector<std::vector<int64_t>> rows;
  const int64_t first = batchIndex * batch;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t g = 0; g < group; ++g)
      rows.push_back(prompts_[(first + i) % prompts_.size()]);
  PaddedBatch prompts =
      padSequences(rows, promptLength, config_.padTokenId, /*leftPad=*/true);
  const int64_t samples = static_cast<int64_t>(rows.size());

  // Generation: eval() on the weights training updates.
  models_.actor.eval();
  GenerateConfig gen;
  gen.maxNewTokens = config_.maxAnswerSeqLen;
  gen.greedy = config_.greedy;
  gen.temperature = config_.temperature;
  gen.topK = config_.topK;
  gen.topP = config_.topP;
  gen.seed = config_.seed + static_cast<uint64_t>(batchIndex) * 1000003u;
  gen.eosTokenId = config_.eosTokenId;
  gen.padTokenId = config_.padTokenId;
  gen.releaseInferenceCache = config_.releaseInferenceCache;
  gen.cudaGraph = config_.cudaGraph;
  GenerateResult out = models_.actor.generate(prompts.ids, &prompts.mask, gen);
  report.generateSeconds += secondsSince(start);

  const auto experienceStart = Clock::now();
  const int64_t steps = out.tokens.shape()[1];
  HostTensor answerMask = HostTensor::allocate(DType::I64, {samples, steps});
  double lengthSum = 0;
  for (int64_t r = 0; r < samples; ++r) {
    const int64_t length = std::min(steps, out.lengths.as<int64_t>()[r]);
    lengthSum += static_cast<double>(length);
    for (int64_t t = 0; t < steps; ++t)
      answerMask.as<int64_t>()[r * steps + t] = t < length;
  }
  HostTensor ids = concatColumns(prompts.ids, out.tokens);
  HostTensor mask = concatColumns(prompts.mask, answerMask);
  lastIds_ = ids;
  lastMask_ = mask;
  HostTensor rewardScores = scores(ids, mask, out.tokens, out.lengths);
  double rewardSum = 0;
  for (int64_t r = 0; r < samples; ++r)
    rewardSum += rewardScores.as<float>()[r];
  // Figures over the iteration's samples: sums here, means at its end.
  report.samples += samples;
  report.answerLength += lengthSum;
  report.rewardMean += rewardSum;

  Rollout r;
  if (config_.algorithm == RlhfAlgorithm::Ppo) {
    PpoModels ppo{models_.actor, models_.reference, *models_.critic,
                  models_.reward};
    r.experience = makePpoExperience(ppo, ids, mask, promptLength,
                                     config_.klCtl, &rewardScores);
  } else {
    PpoExperience &e = r.experience;
    e.inputIds = ids;
    e.attentionMask = mask;
    e.promptLength = promptLength;
    e.actionMask = actionMaskOf(mask, promptLength);
    e.logprobs = models_.actor.logprobs(ids, &mask);
    e.refLogprobs = models_.reference.logprobs(ids, &mask);
    e.rewardScores = rewardScores;
    // Group-relative advantages in the actor's graph, one per sequence,
    // then on every position of it (the loss masks the non-actions).
    HostTensor perSequence = models_.actor.executable("grpo_advantages")
                                 .run({{"scores", rewardScores}})
                                 .at("advantages");
    const int64_t width = e.actionMask.shape()[1];
    r.grpoAdvantages = HostTensor::allocate(DType::F32, {samples, width});
    for (int64_t row = 0; row < samples; ++row)
      std::fill_n(r.grpoAdvantages.as<float>() + row * width, width,
                  perSequence.as<float>()[row]);
  }
  report.kl += meanKl(r.experience.logprobs, r.experience.refLogprobs,
                      r.experience.actionMask) *
               static_cast<double>(samples);
  report.experienceSeconds += secondsSince(experienceStart);
  return r;
}

RlhfIterationReport RlhfTrainer::iteration() {
  const auto start = Clock::now();
  RlhfIterationReport report;
  report.iteration = iteration_;
  std::vector<Rollout> rollouts;
  for (int64_t b = 0; b < config_.generationBatches; ++b)
    rollouts.push_back(
        rollout(iteration_ * config_.generationBatches + b, report));
  const double samples = static_cast<double>(report.samples);
  report.rewardMean /= samples;
  report.answerLength /= samples;
  report.kl /= samples;

  const auto trainStart = Clock::now();
  models_.actor.train();
  double actorSum = 0, criticSum = 0;
  for (const Rollout &r : rollouts) {
    if (config_.algorithm == RlhfAlgorithm::Ppo)
      trainPpo(r.experience, report, actorSum, criticSum);
    else
      trainGrpo(r, report, actorSum);
  }
  report.actorLoss = actorSum / static_cast<double>(report.steps);
  report.criticLoss = criticSum / static_cast<double>(report.steps);
  report.trainSeconds = secondsSince(trainStart);
  ++iteration_;
  report.totalSeconds = secondsSince(start);
  return report;
}

void RlhfTrainer::trainPpo(const PpoExperience &e, RlhfIterationReport &report,
                           double &actorSum, double &criticSum) {
  PpoModels ppo{models_.actor, models_.reference, *models_.critic,
                models_.reward};
  const int64_t samples = e.inputIds.shape()[0];
  for (int64_t epoch = 0; epoch < config_.ppoEpochs; ++epoch)
    for (int64_t first = 0; first < samples;
         first += config_.trainingBatchSize) {
      const int64_t n = std::min(config_.trainingBatchSize, samples - first);
      PpoLosses losses = ppoBackward(ppo, experienceRows(e, first, n));
      models_.actor.step(
          stepConfig(config_.actorLearningRate, config_.actorWeightDecay));
      // DeepSpeed-Chat's actor EMA follows every actor step.
      if (models_.actor.emaEnabled())
        models_.actor.updateEma();
      models_.critic->step(
          stepConfig(config_.criticLearningRate, config_.criticWeightDecay));
      actorSum += losses.actor;
      criticSum += losses.critic;
      ++report.steps;
    }
}

void RlhfTrainer::trainGrpo(const Rollout &r, RlhfIterationReport &report,
                            double &actorSum) {
  const PpoExperience &e = r.experience;
  const int64_t samples = e.inputIds.shape()[0];
  for (int64_t epoch = 0; epoch < config_.ppoEpochs; ++epoch)
    for (int64_t first = 0; first < samples;
         first += config_.trainingBatchSize) {
      const int64_t n = std::min(config_.trainingBatchSize, samples - first);
      actorSum += models_.actor.accumulate(
          "grpo_forward_backward",
          {{"input_ids", tensorRows(e.inputIds, first, n)},
           {"attention_mask", tensorRows(e.attentionMask, first, n)},
           {"old_logprobs", tensorRows(e.logprobs, first, n)},
           {"ref_logprobs", tensorRows(e.refLogprobs, first, n)},
           {"advantages", tensorRows(r.grpoAdvantages, first, n)},
           {"action_mask", tensorRows(e.actionMask, first, n)}});
      models_.actor.step(
          stepConfig(config_.actorLearningRate, config_.actorWeightDecay));
      // DeepSpeed-Chat's actor EMA follows every actor step.
      if (models_.actor.emaEnabled())
        models_.actor.updateEma();
      ++report.steps;
    }
}

} // namespace hybrid
