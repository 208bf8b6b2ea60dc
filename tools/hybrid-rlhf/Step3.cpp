// hybrid-rlhf step3: DeepSpeed-Chat's step 3 (PPO with actor, reference,
// critic and reward model) or GRPO, on prompts from a JSONL file, over the
// library's RlhfTrainer (runtime/api/include/hybrid/Rlhf.h). Flags are
// DeepSpeed-Chat's main.py flags where they mean something here.
#include "RlhfCommands.h"
#include "RlhfCommon.h"

#include "hybrid/Checkpoint.h"
#include "hybrid/Metrics.h"
#include "hybrid/Rlhf.h"
#include "hybrid/RlhfData.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

namespace hybrid::run {

namespace {

namespace fs = std::filesystem;

struct Step3Options {
  static constexpr const char *kName = "step3";
  std::optional<std::string> actorModel, criticModel, rewardModel, dataPath,
      outputDir, rewardRule;
  std::optional<std::string> actorBundle, criticBundle, rewardBundle;
  std::optional<uint64_t> randomWeights;
  DeviceFlags device;
  std::string algo = "ppo", dtype;
  int64_t generationBatchSize = 16, trainingBatchSize = 16,
          generationBatches = 1, ppoEpochs = 1, maxPromptSeqLen = 256,
          maxAnswerSeqLen = 256, numTrainEpochs = 1, saveInterval = 0,
          groupSize = 4, topK = 0, actorLoraDim = 0;
  std::optional<int64_t> maxIterations, eosTokenId, padTokenId;
  int actorZeroStage = 0, criticZeroStage = 0;
  double actorLr = 9.65e-6, criticLr = 5e-6, actorWeightDecay = 0,
         criticWeightDecay = 0, klCtl = 0.1, clipRewardValue = 5,
         cliprange = 0.2, cliprangeValue = 0.2, gamma = 1, lambd = 0.95,
         klBeta = 0.04, temperature = 1, topP = 1, maxGradNorm = 1;
  std::optional<double> clipHigh;
  bool enableHybridEngine = false, releaseInferenceCache = false,
       tokenLevelLoss = false, noScaleAdvantages = false, noCudaGraph = false,
       resume = false, greedy = false, enableEma = false,
       onlyOptimizeLora = false;
  std::string actorLoraModuleName;
  uint64_t seed = 1234;

  void declare(CLI::App &cmd) {
    describe(
        cmd,
        "DeepSpeed-Chat's step 3: PPO (actor, reference, critic, reward) or "
        "GRPO on the hybrid engine",
        "Each iteration: the actor generates answers to the next "
        "--per_device_generation_batch_size prompts of --data_path (JSONL, "
        "{\"prompt\": [token ids]} a line; GRPO samples --group_size answers "
        "a prompt), the experience is scored (reference, critic, reward), "
        "then --ppo_epochs passes of the losses train the actor (and the "
        "critic) in micro-batches of --per_device_training_batch_size, one "
        "optimizer step each. The reward is a value model "
        "(--reward_model_name_or_path, default the critic's) or a rule "
        "(--reward_rule token:ID, the share of answer tokens equal to ID). "
        "Models are HF folders compiled by hybridc ($HYBRIDC, beside "
        "hybrid-rlhf, or on PATH), or bundles compiled already "
        "(--actor-bundle ..., e.g. on a host without hybridc). Logs one line "
        "an iteration (and DeepSpeed's latency line on stderr), "
        "OUTPUT_DIR/metrics.jsonl, and checkpoints OUTPUT_DIR/actor (HF: "
        "config.json + model.safetensors; with --enable_ema also "
        "OUTPUT_DIR/actor_ema) and OUTPUT_DIR/critic every "
        "--save_interval iterations and at the end; --resume goes on from "
        "them.");
    auto text = [&](const char *flag, std::optional<std::string> &v,
                    const char *what, const char *type) {
      cmd.add_option(flag, v, what)->type_name(type);
    };
    text("--actor_model_name_or_path", actorModel,
         "the actor's HF folder (config.json, weights)", "DIR");
    text("--critic_model_name_or_path", criticModel,
         "the critic's HF folder: a reward model (step 2's output) or a causal "
         "LM (v_head starts at zero); PPO only",
         "DIR");
    text("--reward_model_name_or_path", rewardModel,
         "the reward model's HF folder (default: the critic's)", "DIR");
    text("--reward_rule", rewardRule,
         "a rule reward instead of a model: token:ID", "RULE");
    text("--data_path", dataPath, "JSONL of prompts", "FILE");
    text("--output_dir", outputDir, "checkpoints and metrics.jsonl", "DIR");
    text("--actor-bundle", actorBundle,
         "the actor compiled already (hybridc compile DIR --train --ppo "
         "[--grpo --group-size G])",
         "BUNDLE");
    text("--critic-bundle", criticBundle,
         "the critic compiled already (hybridc compile DIR --head value "
         "--train --ppo --prompt-length P)",
         "BUNDLE");
    text("--reward-bundle", rewardBundle,
         "the reward model compiled already (hybridc compile DIR --head "
         "value; default the critic's bundle when the models are the same)",
         "BUNDLE");
    cmd.add_option("--random-weights", randomWeights,
                   "random weights from SEED instead of the folders' (shapes "
                   "from their config.json: benchmarks)")
        ->type_name("SEED")
        ->transform(seedNumber());
    cmd.add_option("--algo", algo, "ppo or grpo")
        ->capture_default_str()
        ->check(CLI::IsMember({"ppo", "grpo"}));
    addDtypeFlag(cmd, dtype);
    device.addTo(cmd);
    auto count = [&](const char *flag, int64_t &v, const char *what) {
      addCountFlag(cmd, flag, v, what);
    };
    count("--per_device_generation_batch_size", generationBatchSize,
          "prompts an iteration");
    count("--per_device_training_batch_size", trainingBatchSize,
          "sequences an optimizer step");
    count("--generation_batches", generationBatches,
          "generation batches before training on them");
    count("--ppo_epochs", ppoEpochs, "passes over an iteration's experience");
    count("--max_prompt_seq_len", maxPromptSeqLen,
          "prompts left-padded or cut to it");
    count("--max_answer_seq_len", maxAnswerSeqLen, "new tokens an answer");
    count("--num_train_epochs", numTrainEpochs, "passes over the prompts");
    count("--group_size", groupSize, "GRPO: answers a prompt");
    cmd.add_option("--max_iterations", maxIterations,
                   "stop after this many iterations")
        ->transform(integerAtLeast(1));
    cmd.add_option("--save_interval", saveInterval,
                   "checkpoint every N iterations (0: at the end only)")
        ->capture_default_str()
        ->transform(integerAtLeast(0));
    cmd.add_option("--top_k", topK, "sampling's top-k (0: none)")
        ->capture_default_str()
        ->transform(integerAtLeast(0));
    cmd.add_option("--eos_token_id", eosTokenId,
                   "default: the actor's generation_config.json/config.json")
        ->transform(integerAtLeast(-1));
    cmd.add_option("--pad_token_id", padTokenId, "default: as EOS")
        ->transform(integerAtLeast(0));
    auto zero = [&](const char *flag, int &v) {
      cmd.add_option(flag, v,
                     "ZeRO stage, 0-3 (one rank here: every stage is the "
                     "whole state)")
          ->capture_default_str()
          ->check(CLI::Range(0, 3));
    };
    zero("--actor_zero_stage", actorZeroStage);
    zero("--critic_zero_stage", criticZeroStage);
    auto real = [&](const char *flag, double &v, const char *what) {
      addNumberFlag(cmd, flag, v, what);
    };
    real("--actor_learning_rate", actorLr, "the actor's AdamW lr");
    real("--critic_learning_rate", criticLr, "the critic's AdamW lr");
    real("--actor_weight_decay", actorWeightDecay, "");
    real("--critic_weight_decay", criticWeightDecay, "");
    real("--kl_ctl", klCtl, "PPO: the KL penalty in the reward");
    real("--clip_reward_value", clipRewardValue, "PPO: the score's clip");
    real("--cliprange", cliprange, "the policy ratio's clip");
    cmd.add_option("--clip_high", clipHigh,
                   "GRPO: the ratio's clip above 1 (DAPO's clip-higher; "
                   "default --cliprange)")
        ->transform(nonNegativeNumber());
    real("--cliprange_value", cliprangeValue, "PPO: the value's clip");
    real("--gamma", gamma, "PPO: GAE's discount");
    real("--lambd", lambd, "PPO: GAE's lambda");
    real("--kl_beta", klBeta, "GRPO: the k3 KL term's coefficient");
    real("--temperature", temperature, "sampling temperature");
    real("--top_p", topP, "nucleus sampling (1: none)");
    real("--max_grad_norm", maxGradNorm, "gradient clipping (0: none)");
    cmd.add_flag("--token_level_loss", tokenLevelLoss,
                 "GRPO: average over tokens (DAPO), not per sequence");
    cmd.add_flag("--no_scale_advantages", noScaleAdvantages,
                 "GRPO: advantages not divided by the group's std");
    cmd.add_flag("--enable_hybrid_engine", enableHybridEngine,
                 "accepted: generation and training always share one "
                 "weight store here");
    cmd.add_flag("--release_inference_cache", releaseInferenceCache,
                 "free the actor's KV cache while training");
    cmd.add_option(
           "--actor_lora_dim", actorLoraDim,
           "LoRA adapters of this rank on the actor's linears (0: "
           "none; hybridc --lora-dim, PEFT's files in OUTPUT_DIR/actor)")
        ->capture_default_str()
        ->transform(integerAtLeast(0));
    cmd.add_option("--actor_lora_module_name", actorLoraModuleName,
                   "the linears that get adapters, comma-separated module "
                   "names (PEFT's target_modules; default: every linear of "
                   "the decoder layers)");
    cmd.add_flag("--only_optimize_lora", onlyOptimizeLora,
                 "train the adapters only (the actor's other weights frozen)");
    cmd.add_flag("--enable_ema", enableEma,
                 "keep an EMA of the actor (beta 0.992), saved as "
                 "OUTPUT_DIR/actor_ema");
    cmd.add_flag("--greedy", greedy,
                 "answers by argmax, as DeepSpeed-Chat's generate does by "
                 "default (default: sampling at --temperature)");
    cmd.add_flag("--no-cuda-graph", noCudaGraph,
                 "decode op by op instead of one captured graph");
    cmd.add_flag("--resume", resume,
                 "go on from OUTPUT_DIR's checkpoints and rlhf_state.json");
    cmd.add_option("--seed", seed, "sampling and data order")
        ->capture_default_str()
        ->transform(seedNumber());
  }

  /// The bundle at `given`, or `dir` compiled with `args` into `tmp`.
  int run(const CLI::App &cmd) const {
    const bool ppo = algo == "ppo";
    const std::string &prompts = required(cmd, dataPath, "--data_path");
    const std::string &out = required(cmd, outputDir, "--output_dir");
    if (!actorModel && !actorBundle)
      usageError(cmd, "--actor_model_name_or_path or --actor-bundle is "
                      "required");
    if (ppo && !criticModel && !criticBundle)
      usageError(cmd, "PPO needs --critic_model_name_or_path (or "
                      "--critic-bundle)");
    if (!ppo && (criticModel || criticBundle))
      usageError(cmd, "GRPO has no critic: drop --critic_model_name_or_path");
    const bool rewardModelGiven = rewardModel || rewardBundle;
    if (rewardRule && rewardModelGiven)
      usageError(cmd, "--reward_rule and a reward model exclude each other");
    if (!rewardRule && !rewardModelGiven &&
        !(ppo && (criticModel || criticBundle)))
      usageError(cmd, "no reward: give --reward_model_name_or_path or "
                      "--reward_rule token:ID");
    if (!(cliprange < 1))
      usageError(cmd, "--cliprange must be below 1");
    if ((onlyOptimizeLora || !actorLoraModuleName.empty()) && actorLoraDim == 0)
      usageError(cmd, "--only_optimize_lora and --actor_lora_module_name "
                      "need --actor_lora_dim");
    if (actorLoraDim > 0 && actorBundle)
      usageError(cmd, "--actor_lora_dim compiles the actor: give it to "
                      "hybridc for --actor-bundle instead");
    if (!(gamma <= 1) || !(lambd <= 1))
      usageError(cmd, "--gamma and --lambd must be at most 1");
    if (!(temperature > 0))
      usageError(cmd, "--temperature must be above 0");
    if (!(topP > 0 && topP <= 1))
      usageError(cmd, "--top_p must be in (0, 1]");
    if (!ppo && groupSize < 2)
      usageError(cmd, "--group_size must be at least 2 for GRPO (the "
                      "advantages are relative to the group)");
    if (randomWeights && !actorModel && !actorBundle)
      usageError(cmd, "--random-weights needs the models' folders or "
                      "bundles");
    RewardFunction rule;
    if (rewardRule) {
      const std::string &r = *rewardRule;
      const std::string prefix = "token:";
      if (r.rfind(prefix, 0) != 0 || r.size() == prefix.size() ||
          r.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
        usageError(cmd, "--reward_rule must be token:ID, got '" + r + "'");
      rule = tokenShareReward(std::stoll(r.substr(prefix.size())));
    }
    // Everything that can be checked before compiling is: the data, the
    // output folder.
    std::vector<RlhfRecord> records = readRlhfJsonl(prompts);
    std::vector<std::vector<int64_t>> promptIds;
    for (size_t i = 0; i < records.size(); ++i) {
      if (records[i].prompt.empty())
        throw Error(prompts + ": record " + std::to_string(i + 1) +
                    " has no \"prompt\"");
      promptIds.push_back(records[i].prompt);
    }
    fs::create_directories(out);
    std::shared_ptr<Device> dev = device.open(cmd);

    TempDir tmp;
    const std::string actorDir = actorModel.value_or("");
    const std::string criticDir = criticModel.value_or("");
    const std::string rewardDir =
        rewardModel.value_or(rewardRule ? "" : criticDir);
    std::vector<std::string> actorArgs = {"--train", "--ppo", "--cliprange",
                                          number(cliprange)};
    if (!ppo) {
      actorArgs.insert(actorArgs.end(),
                       {"--grpo", "--group-size", std::to_string(groupSize),
                        "--kl-beta", number(klBeta)});
      if (clipHigh)
        actorArgs.insert(actorArgs.end(), {"--clip-high", number(*clipHigh)});
      if (tokenLevelLoss)
        actorArgs.push_back("--token-level-loss");
      if (noScaleAdvantages)
        actorArgs.push_back("--no-scale-advantages");
    }
    if (actorLoraDim > 0) {
      actorArgs.insert(actorArgs.end(),
                       {"--lora-dim", std::to_string(actorLoraDim)});
      if (!actorLoraModuleName.empty())
        actorArgs.insert(actorArgs.end(),
                         {"--lora-targets", actorLoraModuleName});
      if (onlyOptimizeLora)
        actorArgs.push_back("--only-optimize-lora");
    }
    if (actorZeroStage)
      actorArgs.insert(actorArgs.end(),
                       {"--zero-stage", std::to_string(actorZeroStage)});
    const std::string actorPath =
        bundleFor(actorBundle, actorDir, actorArgs, dtype,
                  (tmp.path / "actor.hyb").string(), "actor");
    std::string criticPath, rewardPath;
    if (ppo) {
      std::vector<std::string> criticArgs = {"--head",
                                             "value",
                                             "--train",
                                             "--ppo",
                                             "--prompt-length",
                                             std::to_string(maxPromptSeqLen),
                                             "--cliprange-value",
                                             number(cliprangeValue),
                                             "--clip-reward-value",
                                             number(clipRewardValue),
                                             "--gamma",
                                             number(gamma),
                                             "--lambd",
                                             number(lambd)};
      if (criticZeroStage)
        criticArgs.insert(criticArgs.end(),
                          {"--zero-stage", std::to_string(criticZeroStage)});
      criticPath = bundleFor(criticBundle, criticDir, criticArgs, dtype,
                             (tmp.path / "critic.hyb").string(), "critic");
    }
    if (!rewardRule) {
      if (rewardBundle)
        rewardPath = *rewardBundle;
      else if (ppo && rewardDir == criticDir && !criticPath.empty())
        rewardPath = criticPath; // the same model: one bundle
      else
        rewardPath = bundleFor(
            std::nullopt, rewardDir, {"--head", "value", "--no-generate"},
            dtype, (tmp.path / "reward.hyb").string(), "reward model");
    }

    // The engines: the actor and its reference share a bundle.
    OpenedEngine actor = openEngine(dev, actorPath);
    OpenedEngine reference = openEngine(dev, actorPath);
    std::unique_ptr<OpenedEngine> critic, reward;
    if (ppo)
      critic = std::make_unique<OpenedEngine>(openEngine(dev, criticPath));
    if (!rewardRule)
      reward = std::make_unique<OpenedEngine>(openEngine(dev, rewardPath));
    CheckpointBinding valueBinding;
    valueBinding.zeroIfMissing = {"v_head.weight"};
    if (randomWeights) {
      actor.engine.initRandom(*randomWeights);
      reference.engine.initRandom(*randomWeights);
      if (critic)
        critic->engine.initRandom(*randomWeights + 1);
      if (reward)
        reward->engine.initRandom(*randomWeights + 2);
    } else {
      if (actorDir.empty())
        usageError(cmd, "--actor-bundle needs --actor_model_name_or_path "
                        "for its weights (or --random-weights)");
      actor.engine.loadWeights(actorDir);
      reference.engine.loadWeights(actorDir);
      if (critic) {
        if (criticDir.empty())
          usageError(cmd, "--critic-bundle needs --critic_model_name_or_path "
                          "for its weights (or --random-weights)");
        critic->engine.loadWeights(criticDir, valueBinding);
      }
      if (reward) {
        if (rewardDir.empty())
          usageError(cmd, "--reward-bundle needs --reward_model_name_or_path "
                          "for its weights (or --random-weights)");
        reward->engine.loadWeights(rewardDir, valueBinding);
      }
    }

    if (enableEma)
      actor.engine.enableEma(0.992f);
    const fs::path actorOut = fs::path(out) / "actor";
    const fs::path criticOut = fs::path(out) / "critic";
    const fs::path stateFile = fs::path(out) / "rlhf_state.json";
    int64_t startIteration = 0, optimizerSteps = 0;
    if (resume) {
      std::ifstream in(stateFile);
      nlohmann::json state = nlohmann::json::parse(in, nullptr, false);
      if (!in || state.is_discarded() || !state.contains("iterations") ||
          !state["iterations"].is_number_integer())
        throw Error(stateFile.string() +
                    ": no saved run to resume (an \"iterations\" count)");
      startIteration = state["iterations"].get<int64_t>();
      optimizerSteps = state.value("optimizer_steps", int64_t{0});
      restoreCheckpoint(actor.engine, actorOut.string());
      if (critic)
        restoreCheckpoint(critic->engine, criticOut.string());
      progress("resuming after iteration " + std::to_string(startIteration));
    }

    SpecialTokens special =
        actorDir.empty() ? SpecialTokens{} : specialTokensOf(actorDir);
    RlhfConfig config;
    config.algorithm = ppo ? RlhfAlgorithm::Ppo : RlhfAlgorithm::Grpo;
    config.generationBatchSize = generationBatchSize;
    config.trainingBatchSize = trainingBatchSize;
    config.generationBatches = generationBatches;
    config.ppoEpochs = ppoEpochs;
    config.maxPromptSeqLen = maxPromptSeqLen;
    config.maxAnswerSeqLen = maxAnswerSeqLen;
    config.actorLearningRate = static_cast<float>(actorLr);
    config.criticLearningRate = static_cast<float>(criticLr);
    config.actorWeightDecay = static_cast<float>(actorWeightDecay);
    config.criticWeightDecay = static_cast<float>(criticWeightDecay);
    config.maxGradNorm = static_cast<float>(maxGradNorm);
    config.klCtl = static_cast<float>(klCtl);
    config.groupSize = ppo ? 1 : groupSize;
    config.greedy = greedy;
    config.temperature = static_cast<float>(temperature);
    config.topK = topK;
    config.topP = static_cast<float>(topP);
    config.eosTokenId = eosTokenId.value_or(special.eos);
    config.padTokenId = padTokenId.value_or(special.pad >= 0 ? special.pad : 0);
    config.releaseInferenceCache = releaseInferenceCache;
    config.cudaGraph = !noCudaGraph;
    config.seed = seed;
    RlhfModels models{actor.engine, reference.engine,
                      critic ? &critic->engine : nullptr,
                      reward ? &reward->engine : nullptr, rule};
    RlhfTrainer trainer(models, config, std::move(promptIds));
    trainer.setIteration(startIteration);

    const int64_t perEpoch =
        (static_cast<int64_t>(records.size()) + generationBatchSize - 1) /
        generationBatchSize;
    const int64_t total =
        maxIterations ? *maxIterations : perEpoch * numTrainEpochs;
    progress(std::string(ppo ? "PPO" : "GRPO") + ": " + std::to_string(total) +
             " iterations of " + std::to_string(generationBatchSize) +
             " prompts" +
             (ppo ? "" : " x " + std::to_string(groupSize) + " answers") +
             ", " + std::to_string(maxPromptSeqLen) + " + " +
             std::to_string(maxAnswerSeqLen) + " tokens" + onDevice(*dev));

    auto save = [&](int64_t done) {
      // A checkpoint's global steps count the engine's optimizer steps.
      saveCheckpoint(actor.engine, actorOut.string(), optimizerSteps,
                     "hybrid-rlhf");
      if (!actorDir.empty())
        copyModelConfig(actorDir, actorOut.string());
      if (enableEma) {
        const fs::path emaOut = fs::path(out) / "actor_ema";
        fs::create_directories(emaOut);
        saveEmaWeights(actor.engine, (emaOut / "model.safetensors").string(),
                       "hybrid-rlhf");
        if (!actorDir.empty())
          copyModelConfig(actorDir, emaOut.string());
      }
      if (critic) {
        saveCheckpoint(critic->engine, criticOut.string(), optimizerSteps,
                       "hybrid-rlhf");
        if (!criticDir.empty())
          copyModelConfig(criticDir, criticOut.string());
      }
      std::ofstream state(stateFile);
      state << nlohmann::json{{"iterations", done},
                              {"optimizer_steps", optimizerSteps},
                              {"algo", algo}}
                   .dump()
            << "\n";
      if (!state)
        throw Error("cannot write " + stateFile.string());
    };

    std::ofstream metrics(fs::path(out) / "metrics.jsonl",
                          resume ? std::ios::app : std::ios::trunc);
    if (!metrics)
      throw Error("cannot write " + (fs::path(out) / "metrics.jsonl").string());
    for (int64_t it = startIteration; it < total; ++it) {
      RlhfIterationReport r = trainer.iteration();
      optimizerSteps += r.steps;
      std::printf("iteration %lld/%lld: reward %.4f, kl %.4f, actor_loss "
                  "%.4f%s, answer %.1f tokens; generate %.3f s, experience "
                  "%.3f s, train %.3f s, total %.3f s\n",
                  static_cast<long long>(it + 1), static_cast<long long>(total),
                  r.rewardMean, r.kl, r.actorLoss,
                  ppo ? (", critic_loss " + number(r.criticLoss)).c_str() : "",
                  r.answerLength, r.generateSeconds, r.experienceSeconds,
                  r.trainSeconds, r.totalSeconds);
      std::fflush(stdout);
      nlohmann::json line = {{"iteration", it + 1},
                             {"reward_mean", r.rewardMean},
                             {"kl", r.kl},
                             {"actor_loss", r.actorLoss},
                             {"answer_length", r.answerLength},
                             {"samples", r.samples},
                             {"steps", r.steps},
                             {"generate_s", r.generateSeconds},
                             {"experience_s", r.experienceSeconds},
                             {"train_s", r.trainSeconds},
                             {"total_s", r.totalSeconds},
                             {"peak_gib", peakMemoryGiB(*dev)}};
      if (ppo)
        line["critic_loss"] = r.criticLoss;
      metrics << line.dump() << "\n" << std::flush;
      if (saveInterval > 0 && (it + 1) % saveInterval == 0 && it + 1 < total)
        save(it + 1);
    }
    save(total);
    std::printf("hybrid-rlhf: step3 %s: %lld iterations, peak %.2f GiB%s -> "
                "%s\n",
                algo.c_str(), static_cast<long long>(total - startIteration),
                peakMemoryGiB(*dev), onDevice(*dev).c_str(), out.c_str());
    return 0;
  }
};

} // namespace

Subcommand addStep3(CLI::App &root) { return subcommand<Step3Options>(root); }

} // namespace hybrid::run
