// hybrid-rlhf's subcommands over hybrid-run's command-line helpers.
#pragma once

#include "CommandLine.h"

namespace hybrid::run {

/// `ppo-step`: one PPO step checked against the oracle's names (PpoStep.cpp).
Subcommand addPpoStepCheck(CLI::App &root);
/// `step1`: DeepSpeed-Chat's step 1, supervised fine-tuning (Step1.cpp).
Subcommand addStep1(CLI::App &root);
/// `step2`: DeepSpeed-Chat's step 2, the reward model (Step2.cpp).
Subcommand addStep2(CLI::App &root);
/// `step3`: DeepSpeed-Chat's step 3, PPO or GRPO (Step3.cpp).
Subcommand addStep3(CLI::App &root);

} // namespace hybrid::run
