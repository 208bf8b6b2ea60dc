// Step tuning: which GEMM plans to time again inside a captured step.
//
// GEMM tuning (Gemm.cu) times each product alone and keeps the fastest
// kernel; a decode step runs the products back to back, where close
// options can rank the other way. The streaming GEMV's stash only pays in
// the step, where its weight loads overlap the kernel before it, and an
// LM head's cuBLASLt kernel that loses alone by 1-2 us won by ~9 us in
// OPT-1.3B's step (bench/RESULTS.md, thirteenth and fourteenth sessions).
// So tuning keeps every option it timed (PlanOption), a capture records
// the plans its step used (Context::usedPlans), and stepChoices names the
// options worth trying there; the device recaptures the step with each
// and keeps what replays faster (runtime/cuda's captureTuned). Host code,
// no GPU needed.
#pragma once

#include "cuda/Context.h"

#include <string>
#include <vector>

namespace hybrid::cuda {

/// A plan a captured step used and the options to time in its place.
struct StepChoice {
  UsedPlan plan;
  PlanOption current;                   ///< what it runs now
  std::vector<PlanOption> alternatives; ///< fastest alone first
};

/// The plans of `used` (each once) worth tuning in the step, the slowest
/// alone first: not settled (PlanPins, "prefer" switches, or tuned in a
/// step before), with at least one alternative to the option the plan
/// runs: another kind whose time alone was at most `within` times the
/// fastest option's, or any other stash count of the streaming GEMV (a
/// stash's gain does not show alone).
std::vector<StepChoice> stepChoices(const std::vector<UsedPlan> &used,
                                    double within);

/// Makes the plan run `option` from its next use on (the next capture).
void applyOption(const UsedPlan &plan, const PlanOption &option);

/// Leaves the plan as it is for every later capture.
void settle(const UsedPlan &plan);

/// The option `plan` runs now (with its time alone, infinite where tuning
/// did not time it).
PlanOption currentOption(const UsedPlan &plan);

/// HYBRID_CUDA_TUNE_LOG=1 (set and not "0", read once): GEMM tuning prints
/// one line on stderr per tuned product or group (its shape, the fastest
/// time of each kind, what it keeps), step tuning one per trial and the
/// plans it kept.
bool tuneLog();

/// The option as HYBRID_CUDA_PLANS writes it ("cublaslt", "skinny:4",
/// "stream:1", "apart", "one:2"), so that a log line can be pinned.
std::string optionName(const PlanOption &option);

} // namespace hybrid::cuda
