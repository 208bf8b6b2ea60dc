// The hrt dialect's kind enums and the bundle's (hybrid/Ops.h) are two
// spellings of one list: same values, same names, same count.
#include "dialects/hrt/IR/HrtOps.h"
#include "hybrid/Ops.h"

#include <gtest/gtest.h>

namespace {

TEST(HrtKinds, BinaryKindsMatchTheBundle) {
  for (int k = 0; k < hybrid::kBinaryKinds; ++k)
    EXPECT_EQ(hybridc::hrt::stringifyBinaryKind(
                  static_cast<hybridc::hrt::BinaryKind>(k)),
              hybrid::binaryKindName(static_cast<hybrid::BinaryKind>(k)));
  EXPECT_FALSE(hybridc::hrt::symbolizeBinaryKind(hybrid::kBinaryKinds));
}

TEST(HrtKinds, UnaryKindsMatchTheBundle) {
  for (int k = 0; k < hybrid::kUnaryKinds; ++k)
    EXPECT_EQ(hybridc::hrt::stringifyUnaryKind(
                  static_cast<hybridc::hrt::UnaryKind>(k)),
              hybrid::unaryKindName(static_cast<hybrid::UnaryKind>(k)));
  EXPECT_FALSE(hybridc::hrt::symbolizeUnaryKind(hybrid::kUnaryKinds));
}

TEST(HrtKinds, ReduceAndCollectiveKindsMatchTheBundle) {
  for (int k = 0; k < hybrid::kReduceKinds; ++k)
    EXPECT_EQ("reduce_" + hybridc::hrt::stringifyReduceKind(
                              static_cast<hybridc::hrt::ReduceKind>(k))
                              .str(),
              hybrid::reduceKindName(static_cast<hybrid::ReduceKind>(k)));
  EXPECT_FALSE(hybridc::hrt::symbolizeReduceKind(hybrid::kReduceKinds));
  for (int k = 0; k < hybrid::kCollectiveKinds; ++k)
    EXPECT_EQ(
        hybridc::hrt::stringifyCollectiveKind(
            static_cast<hybridc::hrt::CollectiveKind>(k)),
        hybrid::collectiveKindName(static_cast<hybrid::CollectiveKind>(k)));
  EXPECT_FALSE(hybridc::hrt::symbolizeCollectiveKind(hybrid::kCollectiveKinds));
}

} // namespace
