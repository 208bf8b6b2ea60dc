// Unit tests of the symbolic memory planner.
#include "compiler/Codegen/MemoryPlan.h"

#include <gtest/gtest.h>

using hybrid::SymExpr;
using hybridc::planMemory;
using hybridc::PlannedValue;

namespace {

std::vector<std::string> names = {"batch", "seq"};
SymExpr sym(const char *text) { return SymExpr::parse(text, names, false); }

/// Checks that no two values with overlapping lifetimes overlap in memory,
/// for a few concrete bindings of the symbols.
void expectNoOverlap(const std::vector<PlannedValue> &values,
                     const hybridc::MemoryPlan &plan) {
  for (std::vector<int64_t> binding :
       {std::vector<int64_t>{1, 1}, {2, 16}, {7, 3}, {32, 512}}) {
    int64_t total = plan.totalBytes.evaluate(binding);
    for (size_t a = 0; a < values.size(); ++a) {
      int64_t oa = plan.offsets[a].evaluate(binding);
      int64_t ea = oa + values[a].bytes.evaluate(binding);
      EXPECT_EQ(oa % values[a].alignment, 0);
      EXPECT_LE(ea, total);
      for (size_t b = a + 1; b < values.size(); ++b) {
        bool liveTogether = values[a].firstUse <= values[b].lastUse &&
                            values[b].firstUse <= values[a].lastUse;
        if (!liveTogether)
          continue;
        int64_t ob = plan.offsets[b].evaluate(binding);
        int64_t eb = ob + values[b].bytes.evaluate(binding);
        EXPECT_TRUE(ea <= ob || eb <= oa)
            << "values " << a << " and " << b
            << " overlap at batch=" << binding[0] << " seq=" << binding[1];
      }
    }
  }
}

TEST(MemoryPlan, ReusesDeadSlotsOfTheSameSize) {
  // A chain x0 -> x1 -> x2 -> x3: each value dies when the next is written,
  // so two slots suffice.
  std::vector<PlannedValue> v;
  for (int i = 0; i < 4; ++i)
    v.push_back({sym("256*batch*seq"), 4, i, i + 1});
  auto plan = planMemory(v);
  EXPECT_EQ(plan.numSlots, 2u);
  EXPECT_EQ(plan.totalBytes, sym("512*batch*seq"));
  expectNoOverlap(v, plan);
}

TEST(MemoryPlan, GrowsAFreeSlotItCovers) {
  std::vector<PlannedValue> v = {
      {sym("4*batch*seq"), 4, 0, 1},
      {sym("4*batch*seq*seq"), 4, 2, 3}, // covers the first, which is dead
  };
  auto plan = planMemory(v);
  EXPECT_EQ(plan.numSlots, 1u);
  expectNoOverlap(v, plan);
}

TEST(MemoryPlan, DoesNotShareIncomparableSizes) {
  // batch*64 and seq*64 cannot be ordered for all bindings.
  std::vector<PlannedValue> v = {{sym("64*batch"), 4, 0, 1},
                                 {sym("64*seq"), 4, 2, 3}};
  auto plan = planMemory(v);
  EXPECT_EQ(plan.numSlots, 2u);
  expectNoOverlap(v, plan);
}

TEST(MemoryPlan, KeepsElementAlignment) {
  std::vector<PlannedValue> v = {{sym("batch*seq"), 1, 0, 5},
                                 {sym("8*batch*seq"), 8, 1, 5},
                                 {sym("4*seq"), 4, 2, 5},
                                 {SymExpr(3), 1, 3, 5},
                                 {SymExpr(24), 8, 4, 5}};
  auto plan = planMemory(v);
  expectNoOverlap(v, plan);
}

} // namespace
