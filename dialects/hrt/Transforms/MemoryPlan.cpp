// Greedy symbolic memory planning (see MemoryPlan.h).
#include "dialects/hrt/Transforms/MemoryPlan.h"

#include <algorithm>
#include <numeric>

using hybrid::SymExpr;

namespace hybridc {

namespace {

/// The bytes a slot of `bytes` reserves so that an aligned start fits (see
/// MemoryPlan.h), and whether that reservation keeps offsets aligned.
std::pair<SymExpr, bool> reservation(const SymExpr &bytes, int64_t alignment) {
  if (std::optional<int64_t> c = bytes.constant())
    return {SymExpr((*c + alignment - 1) / alignment * alignment), true};
  bool multiple = std::all_of(
      bytes.terms().begin(), bytes.terms().end(),
      [&](const auto &term) { return term.second % alignment == 0; });
  if (multiple)
    return {bytes, true};
  return {bytes + SymExpr(alignment - 1), false};
}

} // namespace

MemoryPlan planMemory(const std::vector<PlannedValue> &values,
                      int64_t alignment) {
  struct Slot {
    SymExpr bytes;
    int freeAfter; // last use of the value now in the slot
  };
  std::vector<Slot> slots;
  std::vector<size_t> slotOf(values.size());

  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return values[a].firstUse < values[b].firstUse;
  });

  for (size_t v : order) {
    const PlannedValue &pv = values[v];
    long best = -1;
    bool bestGrows = true;
    for (size_t s = 0; s < slots.size(); ++s) {
      Slot &slot = slots[s];
      if (slot.freeAfter >= pv.firstUse)
        continue;
      bool fits = SymExpr::knownGE(slot.bytes, pv.bytes);
      bool covers = SymExpr::knownGE(pv.bytes, slot.bytes);
      if (!fits && !covers)
        continue;
      // Prefer a slot that already fits; among those, the smallest.
      if (best < 0 || (bestGrows && fits) ||
          (fits && SymExpr::knownGE(slots[best].bytes, slot.bytes))) {
        best = static_cast<long>(s);
        bestGrows = !fits;
      }
    }
    if (best < 0) {
      slots.push_back({pv.bytes, pv.lastUse});
      slotOf[v] = slots.size() - 1;
      continue;
    }
    Slot &slot = slots[best];
    if (bestGrows)
      slot.bytes = pv.bytes;
    slot.freeAfter = pv.lastUse;
    slotOf[v] = static_cast<size_t>(best);
  }

  // Slots whose reservation keeps the cursor aligned first.
  std::vector<std::pair<SymExpr, bool>> reserved;
  for (const Slot &slot : slots)
    reserved.push_back(reservation(slot.bytes, alignment));
  std::vector<size_t> slotOrder(slots.size());
  std::iota(slotOrder.begin(), slotOrder.end(), 0);
  std::stable_sort(slotOrder.begin(), slotOrder.end(), [&](size_t a, size_t b) {
    return reserved[a].second > reserved[b].second;
  });
  std::vector<SymExpr> slotOffset(slots.size());
  SymExpr cursor(0);
  for (size_t s : slotOrder) {
    slotOffset[s] = cursor;
    cursor = cursor + reserved[s].first;
  }

  MemoryPlan plan;
  plan.offsets.resize(values.size());
  for (size_t v = 0; v < values.size(); ++v)
    plan.offsets[v] = slotOffset[slotOf[v]];
  plan.totalBytes = cursor;
  plan.numSlots = slots.size();
  return plan;
}

} // namespace hybridc
