// HYBRID_CUDA_PLANS' parser (kernels/cuda/PlanPins.h): what it takes, what
// it refuses (one line naming the entry), and how pins are found. Host
// code only: runs without a GPU (CI), unlike hybrid_cuda_kernel_tests.
#include "cuda/PlanPins.h"

#include <gtest/gtest.h>

namespace hybrid::cuda {
namespace {

using Kind = PlanPin::Kind;

std::vector<PlanPin> parsed(const std::string &text) {
  std::vector<PlanPin> pins;
  std::string error;
  EXPECT_TRUE(parsePlanPins(text, pins, error)) << text << ": " << error;
  return pins;
}

std::string refusal(const std::string &text) {
  std::vector<PlanPin> pins;
  std::string error;
  EXPECT_FALSE(parsePlanPins(text, pins, error)) << text;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

TEST(PlanPinsTest, ParsesProductsAndGroups) {
  const std::vector<PlanPin> pins =
      parsed("1x2048x50272=cublaslt,1x8192x2048=stream:1,"
             "1x2048x2048+512+512=one:4,32x2048x8192=skinny,"
             "1x2048x3072+3072=apart,1x2048x2048=stream");
  ASSERT_EQ(pins.size(), 6u);
  EXPECT_EQ(pins[0].M, 1);
  EXPECT_EQ(pins[0].K, 2048);
  EXPECT_EQ(pins[0].N, std::vector<int64_t>{50272});
  EXPECT_EQ(pins[0].kind, Kind::CublasLt);
  EXPECT_EQ(pins[0].value, -1);
  EXPECT_EQ(pins[1].kind, Kind::Stream);
  EXPECT_EQ(pins[1].value, 1);
  EXPECT_EQ(pins[2].N, (std::vector<int64_t>{2048, 512, 512}));
  EXPECT_EQ(pins[2].kind, Kind::OneLaunch);
  EXPECT_EQ(pins[2].value, 4);
  EXPECT_EQ(pins[3].M, 32);
  EXPECT_EQ(pins[3].kind, Kind::Skinny);
  EXPECT_EQ(pins[3].value, -1);
  EXPECT_EQ(pins[4].kind, Kind::Apart);
  EXPECT_EQ(pins[5].value, -1);
}

TEST(PlanPinsTest, EmptyEntriesAndBlanksAreNoPins) {
  EXPECT_TRUE(parsed("").empty());
  EXPECT_TRUE(parsed(",").empty());
  EXPECT_TRUE(parsed(" , \n").empty());
  EXPECT_EQ(parsed(",1x8x8=stream:0,").size(), 1u);
  const std::vector<PlanPin> pins =
      parsed(" 1x8x8=stream:1 ,\n1x8x16=skinny\n");
  ASSERT_EQ(pins.size(), 2u);
  EXPECT_EQ(pins[0].value, 1);
  EXPECT_EQ(pins[1].N, std::vector<int64_t>{16});
}

TEST(PlanPinsTest, RefusesMalformedEntriesNamingThem) {
  EXPECT_NE(refusal("1x2048=stream").find("'1x2048=stream'"),
            std::string::npos);
  EXPECT_NE(refusal("1x2048x0=stream").find("positive width"),
            std::string::npos);
  EXPECT_NE(refusal("0x2048x8=stream").find("positive"), std::string::npos);
  EXPECT_NE(refusal("1x8x8").find("'='"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=fast").find("cublaslt, skinny"), std::string::npos);
  EXPECT_NE(refusal("1x8x8+8=cublaslt").find("for a group"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=apart").find("cublaslt, skinny"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=cublaslt:2").find("cublaslt, skinny"),
            std::string::npos);
  EXPECT_NE(refusal("1x8x8=stream:x").find("after ':'"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=stream:1x").find("after ':'"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=stream:65").find("after ':'"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=skinny:0").find("at least 1"), std::string::npos);
  EXPECT_NE(refusal("1x8x8+8=one:0").find("at least 1"), std::string::npos);
  EXPECT_NE(refusal("1x8x99999999999999=stream").find("positive width"),
            std::string::npos);
  EXPECT_NE(refusal("1x8x8=stream:3").find("0 to 2"), std::string::npos);
  EXPECT_NE(refusal("4x8x8=stream:1").find("one row"), std::string::npos);
  EXPECT_NE(refusal("1x8x8=stream,1x8x8=cublaslt").find("pinned twice"),
            std::string::npos);
  EXPECT_NE(refusal("1x8x8=stre\nam").find("'1x8x8=stre?am'"),
            std::string::npos);
  // A good entry before a bad one is not kept half-parsed.
  std::vector<PlanPin> pins;
  std::string error;
  EXPECT_FALSE(parsePlanPins("1x8x8=stream,1x8x8=nope", pins, error));
  EXPECT_NE(error.find("'1x8x8=nope'"), std::string::npos) << error;
  EXPECT_TRUE(pins.empty());
}

TEST(PlanPinsTest, FindsThePinOfAShapeOrGroup) {
  const std::vector<PlanPin> pins =
      parsed("1x2048x2048=stream:2,1x2048x2048+512+512=apart");
  const PlanPin *one = findPlanPin(pins, 1, 2048, {2048});
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->value, 2);
  const PlanPin *group = findPlanPin(pins, 1, 2048, {2048, 512, 512});
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->kind, Kind::Apart);
  EXPECT_EQ(findPlanPin(pins, 2, 2048, {2048}), nullptr);
  EXPECT_EQ(findPlanPin(pins, 1, 4096, {2048}), nullptr);
  EXPECT_EQ(findPlanPin(pins, 1, 2048, {512, 512, 2048}), nullptr);
}

} // namespace
} // namespace hybrid::cuda
