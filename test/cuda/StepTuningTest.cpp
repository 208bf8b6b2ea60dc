// Which plans and options step tuning tries (kernels/cuda/StepTuning.h):
// host logic over the plans tuning left, no GPU needed.
#include "cuda/StepTuning.h"

#include <gtest/gtest.h>

namespace hybrid::cuda {
namespace {

using Kind = PlanPin::Kind;

/// A product plan that runs cuBLASLt, with what tuning timed (us): an LM
/// head's of OPT-1.3B at batch 1, roughly.
GemmPlan lmHead() {
  GemmPlan plan;
  plan.tuned = true;
  plan.options = {{Kind::CublasLt, -1, 0.0662f},
                  {Kind::Skinny, 4, 0.0850f},
                  {Kind::Stream, 0, 0.0670f},
                  {Kind::Stream, 1, 0.0700f},
                  {Kind::Stream, 2, 0.0900f}};
  return plan;
}

std::vector<std::string> names(const std::vector<PlanOption> &options) {
  std::vector<std::string> out;
  for (const PlanOption &o : options)
    out.push_back(optionName(o));
  return out;
}

TEST(StepTuningTest, ClosePlansOfOtherKindsAndEveryStashAreTried) {
  GemmPlan plan = lmHead();
  std::vector<UsedPlan> used = {{&plan, nullptr, "1x2048x50272"}};
  std::vector<StepChoice> choices = stepChoices(used, 1.25);
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(optionName(choices[0].current), "cublaslt");
  EXPECT_FLOAT_EQ(choices[0].current.ms, 0.0662f);
  // The skinny kernel (85 us) is over 1.25 x 66.2 us; stream:2 is too, but
  // a stash count's gain shows only in the step. Fastest alone first.
  EXPECT_EQ(names(choices[0].alternatives),
            (std::vector<std::string>{"stream:0", "stream:1", "stream:2"}));
  // A wider margin lets the skinny kernel in, in its place by time.
  choices = stepChoices(used, 1.3);
  EXPECT_EQ(names(choices[0].alternatives),
            (std::vector<std::string>{"stream:0", "stream:1", "skinny:4",
                                      "stream:2"}));
}

TEST(StepTuningTest, SettledRepeatedAndLonePlansAreLeftOut) {
  GemmPlan head = lmHead(), settled = lmHead(), lone;
  settled.settled = true;
  lone.tuned = true;
  lone.options = {{Kind::CublasLt, -1, 0.010f}, {Kind::Skinny, 2, 0.020f}};
  GemmPlan fc2;
  fc2.tuned = true;
  fc2.stream = true;
  fc2.stash = 0;
  fc2.options = {{Kind::CublasLt, -1, 0.0300f},
                 {Kind::Stream, 0, 0.0205f},
                 {Kind::Stream, 1, 0.0210f}};
  std::vector<UsedPlan> used = {{&fc2, nullptr, "1x8192x2048"},
                                {&settled, nullptr, "1x2048x50000"},
                                {&lone, nullptr, "1x64x64"},
                                {&head, nullptr, "1x2048x50272"},
                                {&fc2, nullptr, "1x8192x2048"}};
  std::vector<StepChoice> choices = stepChoices(used, 1.25);
  // The slowest alone first; fc2 once; cuBLASLt is 46 % over fc2's best.
  ASSERT_EQ(choices.size(), 2u);
  EXPECT_EQ(choices[0].plan.shape, "1x2048x50272");
  EXPECT_EQ(choices[1].plan.shape, "1x8192x2048");
  EXPECT_EQ(optionName(choices[1].current), "stream:0");
  EXPECT_EQ(names(choices[1].alternatives),
            (std::vector<std::string>{"stream:1"}));
  settle(choices[1].plan);
  EXPECT_TRUE(fc2.settled);
  EXPECT_EQ(stepChoices(used, 1.25).size(), 1u);
}

TEST(StepTuningTest, AnUntimedStashCountIsNoAlternative) {
  // Several rows, or HYBRID_CUDA_GEMV_STASH set: tuning timed the
  // streaming GEMV once, at stash -1 (the environment's count). That is
  // the option the plan runs, not another one to try, and going back to it
  // restores -1.
  GemmPlan plan;
  plan.tuned = true;
  plan.stream = true;
  plan.stash = -1;
  plan.options = {{Kind::CublasLt, -1, 0.0210f}, {Kind::Stream, -1, 0.0200f}};
  UsedPlan used{&plan, nullptr, "4x2048x8192"};
  std::vector<StepChoice> choices = stepChoices({used}, 1.25);
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(optionName(choices[0].current), "stream");
  EXPECT_FLOAT_EQ(choices[0].current.ms, 0.0200f);
  EXPECT_EQ(names(choices[0].alternatives),
            (std::vector<std::string>{"cublaslt"}));
  applyOption(used, choices[0].alternatives[0]);
  EXPECT_FALSE(plan.stream);
  applyOption(used, choices[0].current);
  EXPECT_TRUE(plan.stream);
  EXPECT_EQ(plan.stash, -1);
}

TEST(StepTuningTest, OptionsApplyToProductsAndRoundTrip) {
  GemmPlan plan = lmHead();
  UsedPlan used{&plan, nullptr, "1x2048x50272"};
  for (const PlanOption &o : plan.options) {
    applyOption(used, o);
    const PlanOption now = currentOption(used);
    EXPECT_EQ(optionName(now), optionName(o));
    EXPECT_FLOAT_EQ(now.ms, o.ms);
  }
  applyOption(used, {Kind::Stream, 2});
  EXPECT_TRUE(plan.stream);
  EXPECT_EQ(plan.stash, 2);
  EXPECT_EQ(plan.skinnySplits, 0);
  applyOption(used, {Kind::Skinny, 4});
  EXPECT_FALSE(plan.stream);
  EXPECT_EQ(plan.skinnySplits, 4);
  applyOption(used, {Kind::CublasLt, -1});
  EXPECT_FALSE(plan.stream);
  EXPECT_EQ(plan.skinnySplits, 0);
}

TEST(StepTuningTest, OptionsApplyToGroupsAndRoundTrip) {
  GroupPlan group;
  group.options = {{Kind::Apart, -1, 0.0160f},
                   {Kind::OneLaunch, 3, 0.0170f},
                   {Kind::Stream, 0, 0.0158f},
                   {Kind::Stream, 2, 0.0157f}};
  UsedPlan used{nullptr, &group, "1x2048x2048+2048+2048"};
  for (const PlanOption &o : group.options) {
    applyOption(used, o);
    EXPECT_EQ(optionName(currentOption(used)), optionName(o));
  }
  EXPECT_EQ(group.splits, GroupPlan::kStreamGroup);
  EXPECT_EQ(group.stash, 2);
  applyOption(used, {Kind::OneLaunch, 3});
  EXPECT_EQ(group.splits, 3);
  applyOption(used, {Kind::Apart, -1});
  EXPECT_EQ(group.splits, 0);
  std::vector<StepChoice> choices = stepChoices({used}, 1.25);
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(names(choices[0].alternatives),
            (std::vector<std::string>{"stream:2", "stream:0", "one:3"}));
}

TEST(StepTuningTest, OptionNamesAreWhatThePinsParse) {
  // The tuner's log prints its choices as HYBRID_CUDA_PLANS entries.
  const std::vector<std::pair<std::string, PlanOption>> cases = {
      {"1x2048x50272", {Kind::CublasLt, -1}},
      {"4x2048x8192", {Kind::Skinny, 4}},
      {"1x8192x2048", {Kind::Stream, 1}},
      {"1x2048x2048+512+512", {Kind::Apart, -1}},
      {"4x2048x2048+512+512", {Kind::OneLaunch, 2}},
      {"1x2048x8192+8192", {Kind::Stream, 2}}};
  for (const auto &[shape, option] : cases) {
    std::vector<PlanPin> pins;
    std::string error;
    ASSERT_TRUE(parsePlanPins(shape + "=" + optionName(option), pins, error))
        << error;
    ASSERT_EQ(pins.size(), 1u);
    EXPECT_EQ(pins[0].kind, option.kind) << shape;
    EXPECT_EQ(pins[0].value, option.value) << shape;
  }
}

} // namespace
} // namespace hybrid::cuda
