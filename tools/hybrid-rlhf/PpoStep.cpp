// hybrid-rlhf ppo-step: one DeepSpeed-Chat PPO step of an actor (an HF
// folder), its reference (a copy), a critic and a reward model (value
// models of the actor's architecture, weights in one file under `critic.`
// and `reward.`) on one batch of experience, writing what the PPO oracles
// of ../shared/fixtures/ppo hold, by their names.
#include "RlhfCommands.h"
#include "RlhfCommon.h"

#include "hybrid/EngineState.h"
#include "hybrid/Ppo.h"
#include "hybrid/SafeTensors.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace hybrid::run {

namespace {

namespace fs = std::filesystem;

struct PpoStepOptions {
  static constexpr const char *kName = "ppo-step";
  std::optional<std::string> actor, valueModels, experience, out;
  std::optional<std::string> actorBundle, valueBundle;
  DeviceFlags device;
  double klCtl = 0.1, clipRewardValue = 5, gamma = 1, lambd = 0.95,
         cliprange = 0.2, cliprangeValue = 0.2;
  float actorLr = 1e-3f, criticLr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f,
        eps = 1e-8f, weightDecay = 0;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "One PPO step (DeepSpeed-Chat's step-3 maths) of an actor, its "
             "reference, a critic and a reward model on one batch of "
             "experience",
             "DIR is an HF folder (config.json and weights): the actor; the "
             "reference is a copy. The critic and the reward model are value "
             "models of the same architecture (trunk + v_head) whose weights "
             "FILE holds under 'critic.' and 'reward.'. The experience file "
             "holds prompts [B,P], input_ids and attention_mask [B,S] "
             "(prompts left-padded, answers after them). OUT gets logprobs, "
             "ref_logprobs, values, reward_scores, rewards, advantages, "
             "returns, actor_loss, critic_loss, actor_grad.<HF name>, "
             "critic_grad.trunk.<name> / critic_grad.v_head.weight and "
             "actor_logits_after (after one AdamW step). The models are "
             "compiled by hybridc ($HYBRIDC, beside hybrid-rlhf, or on PATH).");
    cmd.add_option("--actor", actor, "the actor's HF folder")->type_name("DIR");
    cmd.add_option("--value-models", valueModels,
                   "safetensors with critic.* and reward.* weights")
        ->type_name("FILE");
    cmd.add_option("--experience", experience,
                   "safetensors with prompts, input_ids, attention_mask")
        ->type_name("FILE");
    cmd.add_option("--out", out, "safetensors file to write")
        ->type_name("FILE");
    cmd.add_option("--actor-bundle", actorBundle,
                   "the actor compiled already (hybridc compile DIR --train "
                   "--ppo), e.g. where no hybridc is")
        ->type_name("BUNDLE");
    cmd.add_option("--value-bundle", valueBundle,
                   "the value model compiled already (hybridc compile DIR "
                   "--head value --train --ppo --prompt-length P)")
        ->type_name("BUNDLE");
    device.addTo(cmd);
    auto number = [&](const char *flag, auto &value, const char *what) {
      cmd.add_option(flag, value, what)
          ->capture_default_str()
          ->transform(nonNegativeNumber());
    };
    number("--kl_ctl", klCtl, "the KL penalty's coefficient");
    number("--clip_reward_value", clipRewardValue, "the score's clip");
    number("--gamma", gamma, "GAE's discount");
    number("--lambd", lambd, "GAE's lambda");
    number("--cliprange", cliprange, "the policy ratio's clip");
    number("--cliprange_value", cliprangeValue, "the value's clip");
    number("--actor_learning_rate", actorLr, "the actor's AdamW lr");
    number("--critic_learning_rate", criticLr, "the critic's AdamW lr");
  }

  int run(const CLI::App &cmd) const {
    const std::string &actorDir = required(cmd, actor, "--actor");
    const std::string &valueFile = required(cmd, valueModels, "--value-models");
    const std::string &experienceFile =
        required(cmd, experience, "--experience");
    const std::string &outFile = required(cmd, out, "--out");
    for (const std::string *in : {&actorDir, &valueFile, &experienceFile})
      if (fs::exists(outFile) && fs::exists(*in) &&
          fs::equivalent(outFile, *in))
        usageError(cmd, "--out would replace the input " + *in);
    if (!(cliprange < 1))
      usageError(cmd, "--cliprange must be below 1");
    std::shared_ptr<Device> dev = device.open(cmd);

    // The batch, before any compile: a bad file fails fast.
    SafeTensorsFile file = SafeTensorsFile::open(experienceFile);
    const HostTensor ids = file.toHost(file.get("input_ids"), DType::I64);
    const HostTensor mask = file.toHost(file.get("attention_mask"), DType::I64);
    const SafeTensorsEntry &prompts = file.get("prompts");
    if (prompts.shape.size() != 2 || ids.shape().size() != 2)
      throw Error(experienceFile +
                  ": prompts and input_ids must be [batch, length]");
    const int64_t promptLength = prompts.shape[1];

    TempDir tmp;
    const auto start = std::chrono::steady_clock::now();
    const std::string actorPath =
        actorBundle ? *actorBundle : (tmp.path / "actor.hyb").string();
    const std::string valuePath =
        valueBundle ? *valueBundle : (tmp.path / "value.hyb").string();
    if (!actorBundle) {
      progress("compiling the actor of " + actorDir);
      runHybridc({"compile", actorDir, "--train", "--ppo", "--no-generate",
                  "--cliprange", number(cliprange), "-o", actorPath, "-q"});
    }
    if (!valueBundle) {
      progress("compiling the value models of " + actorDir);
      runHybridc({"compile", actorDir, "--head", "value", "--train", "--ppo",
                  "--prompt-length", std::to_string(promptLength),
                  "--cliprange-value", number(cliprangeValue),
                  "--clip-reward-value", number(clipRewardValue), "--gamma",
                  number(gamma), "--lambd", number(lambd), "-o", valuePath,
                  "-q"});
    }

    OpenedEngine actorEngine = openEngine(dev, actorPath);
    OpenedEngine referenceEngine = openEngine(dev, actorPath);
    OpenedEngine criticEngine = openEngine(dev, valuePath);
    OpenedEngine rewardEngine = openEngine(dev, valuePath);
    actorEngine.engine.loadWeights(actorDir);
    referenceEngine.engine.loadWeights(actorDir);
    CheckpointBinding critic, reward;
    critic.prefix = "critic.";
    reward.prefix = "reward.";
    criticEngine.engine.loadWeights(valueFile, critic);
    rewardEngine.engine.loadWeights(valueFile, reward);

    PpoModels models{actorEngine.engine, referenceEngine.engine,
                     criticEngine.engine, &rewardEngine.engine};
    progress("experience of " + shapeToString(ids.shape()) + " tokens");
    PpoExperience e = makePpoExperience(models, ids, mask, promptLength,
                                        static_cast<float>(klCtl));
    PpoLosses losses = ppoBackward(models, e);
    NamedTensors result = {
        {"prompts", file.toHost(prompts, DType::I64)},
        {"input_ids", ids},
        {"attention_mask", mask},
        {"logprobs", e.logprobs},
        {"ref_logprobs", e.refLogprobs},
        {"values", e.values},
        {"reward_scores", e.rewardScores},
        {"rewards", e.rewards},
        {"advantages", e.advantages},
        {"returns", e.returns},
        {"actor_loss", HostTensor::fromVector<float>({1}, {losses.actor})},
        {"critic_loss", HostTensor::fromVector<float>({1}, {losses.critic})}};
    for (auto &[name, grad] : accumulatedGradients(models.actor))
      result["actor_" + name] = grad; // grad.<HF name>
    for (auto &[name, grad] : accumulatedGradients(models.critic)) {
      const std::string param = name.substr(std::strlen("grad."));
      result["critic_grad." +
             (param == "v_head.weight" ? param : "trunk." + param)] = grad;
    }
    StepConfig step;
    step.lr = actorLr;
    step.beta1 = beta1;
    step.beta2 = beta2;
    step.eps = eps;
    step.weightDecay = weightDecay;
    models.actor.step(step);
    step.lr = criticLr;
    models.critic.step(step);
    models.actor.eval();
    result["actor_logits_after"] =
        models.actor.forward({{"input_ids", ids}, {"attention_mask", mask}})
            .at("logits");
    writeSafeTensors(outFile, result);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf(
        "hybrid-rlhf: ppo-step %s: actor_loss %.7g, critic_loss "
        "%.7g, reward mean %.5g, %zu tensors -> %s (%.2f s%s)\n",
        modelNameOf(*actorEngine.bundle).c_str(), losses.actor, losses.critic,
        [&] {
          double sum = 0;
          for (float s : e.rewardScores.toVector<float>())
            sum += s;
          return sum / e.rewardScores.numel();
        }(),
        result.size(), outFile.c_str(), seconds, onDevice(*dev).c_str());
    return 0;
  }
};

} // namespace

Subcommand addPpoStepCheck(CLI::App &root) {
  return subcommand<PpoStepOptions>(root);
}

} // namespace hybrid::run
