// hybrid-rlhf's subcommands over hybrid-run's command-line helpers.
#pragma once

#include "CommandLine.h"

namespace hybrid::run {

/// `ppo-step`: one PPO step checked against the oracle's names (PpoStep.cpp).
Subcommand addPpoStepCheck(CLI::App &root);

} // namespace hybrid::run
