// Compile-time memory plan: places the temporaries of a command list in one
// workspace, reusing space between values whose lifetimes do not overlap.
// Sizes are symbolic (hybrid::SymExpr), so the plan holds for every binding
// of the batch and sequence symbols. Independent of MLIR.
#pragma once

#include "hybrid/SymExpr.h"

#include <vector>

namespace hybridc {

struct PlannedValue {
  hybrid::SymExpr bytes; ///< size in bytes
  unsigned alignment;    ///< element size: 1, 4 or 8
  int firstUse;          ///< index of the command that writes it
  int lastUse;           ///< index of the last command that reads it
};

struct MemoryPlan {
  std::vector<hybrid::SymExpr> offsets; ///< per value, bytes from the base
  hybrid::SymExpr totalBytes;
  size_t numSlots = 0;
};

/// Greedy slot assignment in program order. A value reuses a free slot of its
/// alignment class that is provably large enough (SymExpr::knownGE), or grows
/// a free slot it provably covers, else opens a new slot. Slots are then laid
/// out by decreasing alignment so every offset is a multiple of its element
/// size; constant-sized slots are rounded up to 64 bytes.
MemoryPlan planMemory(const std::vector<PlannedValue> &values);

} // namespace hybridc
