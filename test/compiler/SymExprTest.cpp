// Unit tests of symbolic sizes (runtime/include/hybrid/SymExpr.h).
#include "hybrid/SymExpr.h"

#include <gtest/gtest.h>

using hybrid::SymExpr;

TEST(SymExpr, ParsePrintEvaluate) {
  std::vector<std::string> names;
  SymExpr e = SymExpr::parse("2*batch*seq + seq - 3", names);
  EXPECT_EQ(names, (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(e.str(names), "2*batch*seq + seq - 3");
  EXPECT_EQ(e.evaluate({4, 5}), 2 * 4 * 5 + 5 - 3);
  EXPECT_EQ(SymExpr::parse("-seq+1", names).evaluate({1, 7}), -6);
  EXPECT_THROW(SymExpr::parse("seq/2", names), hybrid::Error);
  EXPECT_THROW(SymExpr::parse("heads", names, /*addUnknown=*/false),
               hybrid::Error);
  const std::vector<std::string> fixed = {"batch"};
  EXPECT_EQ(SymExpr::parse("2*batch", fixed).evaluate({3}), 6);
  EXPECT_THROW(SymExpr::parse("seq", fixed), hybrid::Error);
}

TEST(SymExpr, Arithmetic) {
  std::vector<std::string> names = {"b", "t"};
  SymExpr b = SymExpr::symbol(0), t = SymExpr::symbol(1);
  EXPECT_EQ((b + t) * (b + t), SymExpr::parse("b*b + 2*b*t + t*t", names));
  EXPECT_EQ(*SymExpr::parse("64*b*t", names).divExact(SymExpr(64)), b * t);
  EXPECT_EQ(*SymExpr::parse("64*b*t", names).divExact(b * SymExpr(16)),
            SymExpr(4) * t);
  EXPECT_FALSE(SymExpr::parse("64*b*t + 1", names).divExact(SymExpr(64)));
  EXPECT_FALSE(SymExpr::parse("64*b", names).divExact(t));
  EXPECT_EQ(t.asSymbol(), 1u);
  EXPECT_FALSE((t + 1).asSymbol());
  EXPECT_EQ((t - t).constant(), 0);
}

TEST(SymExpr, KnownGreaterOrEqualIsSound) {
  std::vector<std::string> names = {"b", "t"};
  auto e = [&](const char *s) { return SymExpr::parse(s, names, false); };
  EXPECT_TRUE(SymExpr::knownGE(e("4*b*t*t"), e("4*b*t")));
  EXPECT_TRUE(SymExpr::knownGE(e("t + 1"), e("t")));
  EXPECT_TRUE(SymExpr::knownGE(e("b*t"), e("1")));
  EXPECT_FALSE(SymExpr::knownGE(e("b"), e("t")));
  EXPECT_FALSE(SymExpr::knownGE(e("t"), e("2")));
  EXPECT_FALSE(SymExpr::knownGE(e("b*t"), e("2*b")));
}
