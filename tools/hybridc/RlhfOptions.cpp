// `hybridc compile`'s RLHF loss options: --ppo (DeepSpeed-Chat's actor and
// critic losses, the experience maths), --grpo, with their
// hyper-parameters, and --reward (the reward model's ranking loss)
// (Options.h).
#include "Options.h"

#include <initializer_list>

namespace hybridc::tool {
namespace {

cl::opt<bool> ppo("ppo",
                  cl::desc("With --train: also DeepSpeed-Chat's PPO actor loss "
                           "(@ppo_actor_loss over old_logprobs, advantages and "
                           "action_mask) and @ppo_actor_forward_backward"),
                  inCompile);
cl::opt<double>
    cliprange("cliprange",
              cl::desc("--ppo: the policy ratio's clip range (default 0.2)"),
              cl::value_desc("EPS"), cl::init(0.2), inCompile);
cl::opt<double>
    clipHigh("clip-high",
             cl::desc("--ppo: the ratio's clip above 1 when it differs from "
                      "--cliprange (DAPO's clip-higher)"),
             cl::value_desc("EPS"), inCompile);
cl::opt<bool> grpo("grpo",
                   cl::desc("With --ppo: also GRPO's loss (@grpo_loss, "
                            "@grpo_forward_backward) and @grpo_advantages"),
                   inCompile);
cl::opt<Count> groupSize(
    "group-size",
    cl::desc("--grpo: samples per prompt (default 1), a prompt's samples "
             "contiguous in a batch"),
    cl::value_desc("G"), Range{1, int64_t(1) << 20, "a count from 1"},
    cl::init(Count{1}), inCompile);
cl::opt<double>
    klBeta("kl-beta",
           cl::desc("--grpo: the k3 KL penalty's coefficient (default 0.04; 0: "
                    "none)"),
           cl::value_desc("B"), cl::init(0.04), inCompile);
cl::opt<bool> tokenAveraging(
    "token-level-loss",
    cl::desc("--grpo: average the loss over tokens (DAPO) instead of per "
             "sequence (GRPO)"),
    inCompile);
cl::opt<bool> noScaleAdvantages(
    "no-scale-advantages",
    cl::desc("--grpo: advantages are score - group mean, not divided by "
             "the group's std"),
    inCompile);
cl::opt<double> cliprangeValue(
    "cliprange-value",
    cl::desc("--ppo, a value model: the value's clip around the old value "
             "(default 0.2)"),
    cl::value_desc("EPS"), cl::init(0.2), inCompile);
cl::opt<Count> promptLength(
    "prompt-length",
    cl::desc("--ppo, a value model: the prompts' padded length, where "
             "@ppo_experience's GAE starts (DeepSpeed-Chat's "
             "max_prompt_seq_len)"),
    cl::value_desc("P"), Range{1, int64_t(1) << 20, "a length from 1"},
    inCompile);
cl::opt<double> clipRewardValue(
    "clip-reward-value",
    cl::desc("--ppo, a value model: the reward score's clip (default 5)"),
    cl::value_desc("R"), cl::init(5.0), inCompile);
cl::opt<double> gamma("gamma",
                      cl::desc("--ppo, a value model: GAE's discount "
                               "(default 1)"),
                      cl::value_desc("G"), cl::init(1.0), inCompile);
cl::opt<double> lambd("lambd",
                      cl::desc("--ppo, a value model: GAE's lambda (default "
                               "0.95)"),
                      cl::value_desc("L"), cl::init(0.95), inCompile);
cl::opt<bool> reward(
    "reward",
    cl::desc("With --head value --train: DeepSpeed-Chat's reward-model "
             "ranking loss (step 2): @reward_loss over chosen-then-rejected "
             "rows (right padding) and @reward_forward_backward"),
    inCompile);
} // namespace

std::optional<std::string> rlhfOptionsError(bool train) {
  if (ppo && !train)
    return std::string("--ppo applies to --train");
  if (reward && !train)
    return std::string("--reward applies to --train");
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &cliprange, &clipHigh, &cliprangeValue, &promptLength,
           &clipRewardValue, &gamma, &lambd, &grpo})
    if (o->getNumOccurrences() && !ppo)
      return "--" + o->ArgStr.str() + " applies to --ppo";
  for (const cl::Option *o : std::initializer_list<const cl::Option *>{
           &groupSize, &klBeta, &tokenAveraging, &noScaleAdvantages})
    if (o->getNumOccurrences() && !grpo)
      return "--" + o->ArgStr.str() + " applies to --grpo";
  if (!(klBeta >= 0))
    return std::string("--kl-beta must be >= 0");
  if (!(cliprangeValue >= 0) || !(clipRewardValue >= 0))
    return std::string("--cliprange-value and --clip-reward-value must be "
                       ">= 0");
  if (!(gamma >= 0 && gamma <= 1) || !(lambd >= 0 && lambd <= 1))
    return std::string("--gamma and --lambd must be in [0, 1]");
  if (!(cliprange >= 0 && cliprange < 1))
    return std::string("--cliprange must be in [0, 1)");
  if (clipHigh.getNumOccurrences() && !(clipHigh >= 0))
    return std::string("--clip-high must be >= 0");
  return std::nullopt;
}

void applyRlhfOptions(CompileOptions &options) {
  options.ppo = ppo;
  options.reward = reward;
  options.clipLow = cliprange;
  options.clipHigh = clipHigh.getNumOccurrences() ? clipHigh : cliprange;
  options.grpo = grpo;
  options.groupSize = groupSize.getValue().value;
  options.klBeta = klBeta;
  options.perSequence = !tokenAveraging;
  options.scaleAdvantages = !noScaleAdvantages;
  options.cliprangeValue = cliprangeValue;
  options.promptLength =
      promptLength.getNumOccurrences() ? promptLength.getValue().value : 0;
  options.clipRewardValue = clipRewardValue;
  options.gamma = gamma;
  options.lambda = lambd;
}

} // namespace hybridc::tool
