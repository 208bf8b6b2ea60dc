// Which plans and options step tuning times: see StepTuning.h.
#include "cuda/StepTuning.h"

#include <algorithm>
#include <cstdlib>

namespace hybrid::cuda {
namespace {

using Kind = PlanPin::Kind;

const std::vector<PlanOption> &optionsOf(const UsedPlan &plan) {
  return plan.product ? plan.product->options : plan.group->options;
}

bool same(const PlanOption &a, const PlanOption &b) {
  return a.kind == b.kind && a.value == b.value;
}

} // namespace

PlanOption currentOption(const UsedPlan &plan) {
  PlanOption now;
  if (const GemmPlan *p = plan.product) {
    if (p->stream)
      now = {Kind::Stream, p->stash}; // (-1: the count was not timed)
    else if (p->skinnySplits > 0)
      now = {Kind::Skinny, p->skinnySplits};
    else
      now = {Kind::CublasLt, -1};
  } else {
    const GroupPlan &g = *plan.group;
    if (g.splits == GroupPlan::kStreamGroup)
      now = {Kind::Stream, g.stash};
    else if (g.splits > 0)
      now = {Kind::OneLaunch, g.splits};
    else
      now = {Kind::Apart, -1};
  }
  for (const PlanOption &o : optionsOf(plan))
    if (same(o, now))
      now.ms = o.ms;
  return now;
}

std::vector<StepChoice> stepChoices(const std::vector<UsedPlan> &used,
                                    double within) {
  std::vector<StepChoice> choices;
  for (size_t i = 0; i < used.size(); ++i) {
    const UsedPlan &plan = used[i];
    if (!plan.product == !plan.group)
      continue; // (names neither or both: nothing to tune)
    const bool repeated =
        std::any_of(used.begin(), used.begin() + static_cast<long>(i),
                    [&](const UsedPlan &u) {
                      return u.product == plan.product && u.group == plan.group;
                    });
    const bool settled =
        plan.product ? plan.product->settled : plan.group->settled;
    if (repeated || settled)
      continue;
    StepChoice choice{plan, currentOption(plan), {}};
    float fastest = INFINITY;
    for (const PlanOption &o : optionsOf(plan))
      fastest = std::min(fastest, o.ms);
    for (const PlanOption &o : optionsOf(plan)) {
      const bool close = o.ms <= fastest * within ||
                         (o.kind == Kind::Stream && std::isfinite(o.ms));
      if (!same(o, choice.current) && close)
        choice.alternatives.push_back(o);
    }
    if (choice.alternatives.empty())
      continue;
    std::stable_sort(
        choice.alternatives.begin(), choice.alternatives.end(),
        [](const PlanOption &a, const PlanOption &b) { return a.ms < b.ms; });
    choices.push_back(std::move(choice));
  }
  std::stable_sort(choices.begin(), choices.end(),
                   [](const StepChoice &a, const StepChoice &b) {
                     return a.current.ms > b.current.ms;
                   });
  return choices;
}

void applyOption(const UsedPlan &plan, const PlanOption &option) {
  if (GemmPlan *p = plan.product) {
    p->stream = option.kind == Kind::Stream;
    p->skinnySplits = option.kind == Kind::Skinny ? option.value : 0;
    if (p->stream)
      p->stash = option.value;
    return;
  }
  GroupPlan &g = *plan.group;
  g.splits = option.kind == Kind::Stream      ? GroupPlan::kStreamGroup
             : option.kind == Kind::OneLaunch ? option.value
                                              : 0;
  if (option.kind == Kind::Stream)
    g.stash = option.value;
}

void settle(const UsedPlan &plan) {
  if (plan.product)
    plan.product->settled = true;
  if (plan.group)
    plan.group->settled = true;
}

bool tuneLog() {
  static const bool on = [] {
    const char *v = std::getenv("HYBRID_CUDA_TUNE_LOG");
    return v && std::string(v) != "0";
  }();
  return on;
}

std::string optionName(const PlanOption &option) {
  const std::string count =
      option.value >= 0 ? ":" + std::to_string(option.value) : "";
  switch (option.kind) {
  case Kind::CublasLt:
    return "cublaslt";
  case Kind::Skinny:
    return "skinny" + count;
  case Kind::Stream:
    return "stream" + count;
  case Kind::Apart:
    return "apart";
  case Kind::OneLaunch:
    return "one" + count;
  }
  return "?";
}

} // namespace hybrid::cuda
