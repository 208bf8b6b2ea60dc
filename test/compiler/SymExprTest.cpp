// Unit tests of symbolic sizes (runtime/base/include/hybrid/SymExpr.h).
#include "hybrid/SymExpr.h"

#include <gtest/gtest.h>

using hybrid::SymExpr;

TEST(SymExpr, ParsePrintEvaluate) {
  std::vector<std::string> names;
  SymExpr e = *SymExpr::parseAddingNames("2*batch*seq + seq - 3", names);
  EXPECT_EQ(names, (std::vector<std::string>{"batch", "seq"}));
  EXPECT_EQ(e.str(names), "2*batch*seq + seq - 3");
  EXPECT_EQ(e.evaluate({4, 5}), 2 * 4 * 5 + 5 - 3);
  EXPECT_EQ(SymExpr::parse("-seq+1", names)->evaluate({1, 7}), -6);
  const std::vector<std::string> fixed = {"batch"};
  EXPECT_EQ(SymExpr::parse("2*batch", fixed)->evaluate({3}), 6);
}

TEST(SymExpr, ParseErrorsAreValuesNotExceptions) {
  const std::vector<std::string> names = {"batch", "seq"};
  std::string why;
  EXPECT_FALSE(SymExpr::parse("seq/2", names, &why));
  EXPECT_EQ(why, "bad symbolic size 'seq/2': unexpected '/'");
  EXPECT_FALSE(SymExpr::parse("heads", names, &why));
  EXPECT_EQ(why, "bad symbolic size 'heads': unknown symbol 'heads'");
  EXPECT_FALSE(SymExpr::parse("2*", names, &why));
  EXPECT_FALSE(SymExpr::parse("99999999999999999999", names, &why));
  EXPECT_EQ(why, "bad symbolic size '99999999999999999999': integer too "
                 "large");
  // Monomials number symbols in a byte: the 256th name is refused.
  std::vector<std::string> many;
  for (int i = 0; i < 255; ++i)
    ASSERT_TRUE(SymExpr::parseAddingNames("s" + std::to_string(i), many));
  EXPECT_FALSE(SymExpr::parseAddingNames("one_more", many, &why));
  EXPECT_EQ(many.size(), 255u);
}

TEST(SymExpr, Arithmetic) {
  std::vector<std::string> names = {"b", "t"};
  SymExpr b = SymExpr::symbol(0), t = SymExpr::symbol(1);
  auto e = [&](const char *s) { return *SymExpr::parse(s, names); };
  EXPECT_EQ((b + t) * (b + t), e("b*b + 2*b*t + t*t"));
  EXPECT_EQ(*e("64*b*t").divExact(SymExpr(64)), b * t);
  EXPECT_EQ(*e("64*b*t").divExact(b * SymExpr(16)), SymExpr(4) * t);
  EXPECT_FALSE(e("64*b*t + 1").divExact(SymExpr(64)));
  EXPECT_FALSE(e("64*b").divExact(t));
  EXPECT_EQ(t.asSymbol(), 1u);
  EXPECT_FALSE((t + 1).asSymbol());
  EXPECT_EQ((t - t).constant(), 0);
}

TEST(SymExpr, KnownGreaterOrEqualIsSound) {
  std::vector<std::string> names = {"b", "t"};
  auto e = [&](const char *s) { return *SymExpr::parse(s, names); };
  EXPECT_TRUE(SymExpr::knownGE(e("4*b*t*t"), e("4*b*t")));
  EXPECT_TRUE(SymExpr::knownGE(e("t + 1"), e("t")));
  EXPECT_TRUE(SymExpr::knownGE(e("b*t"), e("1")));
  EXPECT_FALSE(SymExpr::knownGE(e("b"), e("t")));
  EXPECT_FALSE(SymExpr::knownGE(e("t"), e("2")));
  EXPECT_FALSE(SymExpr::knownGE(e("b*t"), e("2*b")));
}
