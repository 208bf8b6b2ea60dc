// Unit tests of the symbolic memory planner (dialects/hrt/Transforms).
#include "dialects/hrt/Transforms/MemoryPlan.h"

#include <gtest/gtest.h>

using hybrid::SymExpr;
using hybridc::planMemory;
using hybridc::PlannedValue;

namespace {

constexpr int64_t kAlign = 256;
std::vector<std::string> names = {"batch", "seq"};
SymExpr sym(const char *text) { return *SymExpr::parse(text, names); }

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

/// Checks the plan's contract (MemoryPlan.h) for a few concrete bindings:
/// each value, at its aligned offset, stays inside the workspace, and no
/// two values with overlapping lifetimes overlap in memory.
void expectValidPlan(const std::vector<PlannedValue> &values,
                     const hybridc::MemoryPlan &plan) {
  for (std::vector<int64_t> binding :
       {std::vector<int64_t>{1, 1}, {2, 16}, {7, 3}, {32, 512}, {3, 1001}}) {
    int64_t total = plan.totalBytes.evaluate(binding);
    for (size_t a = 0; a < values.size(); ++a) {
      int64_t oa = alignUp(plan.offsets[a].evaluate(binding));
      int64_t ea = oa + values[a].bytes.evaluate(binding);
      EXPECT_LE(ea, total) << "value " << a << " at batch=" << binding[0]
                           << " seq=" << binding[1];
      for (size_t b = a + 1; b < values.size(); ++b) {
        bool liveTogether = values[a].firstUse <= values[b].lastUse &&
                            values[b].firstUse <= values[a].lastUse;
        if (!liveTogether)
          continue;
        int64_t ob = alignUp(plan.offsets[b].evaluate(binding));
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
    v.push_back({sym("256*batch*seq"), i, i + 1});
  auto plan = planMemory(v, kAlign);
  EXPECT_EQ(plan.numSlots, 2u);
  EXPECT_EQ(plan.totalBytes, sym("512*batch*seq"));
  expectValidPlan(v, plan);
}

TEST(MemoryPlan, GrowsAFreeSlotItCovers) {
  std::vector<PlannedValue> v = {
      {sym("4*batch*seq"), 0, 1},
      {sym("4*batch*seq*seq"), 2, 3}, // covers the first, which is dead
  };
  auto plan = planMemory(v, kAlign);
  EXPECT_EQ(plan.numSlots, 1u);
  expectValidPlan(v, plan);
}

TEST(MemoryPlan, DoesNotShareIncomparableSizes) {
  // batch*64 and seq*64 cannot be ordered for all bindings.
  std::vector<PlannedValue> v = {{sym("64*batch"), 0, 1},
                                 {sym("64*seq"), 2, 3}};
  auto plan = planMemory(v, kAlign);
  EXPECT_EQ(plan.numSlots, 2u);
  expectValidPlan(v, plan);
}

TEST(MemoryPlan, AlignsEverySlot) {
  std::vector<PlannedValue> v = {
      {sym("batch*seq"), 0, 5}, {sym("8*batch*seq"), 1, 5},
      {sym("4*seq"), 2, 5},     {SymExpr(3), 3, 5},
      {SymExpr(24), 4, 5},      {sym("512*batch"), 4, 5}};
  auto plan = planMemory(v, kAlign);
  expectValidPlan(v, plan);
  // Constant slots and slots of 256-multiple polynomials come first and
  // start exactly on 256-byte boundaries; the others reserve 255 spare
  // bytes so their aligned start still fits.
  EXPECT_EQ(plan.offsets[3], SymExpr(0));
  EXPECT_EQ(plan.offsets[4], SymExpr(256));
  EXPECT_EQ(plan.offsets[5], SymExpr(512));
  EXPECT_EQ(plan.totalBytes, sym("9*batch*seq + 4*seq + 512*batch + 1277"));
}

} // namespace
