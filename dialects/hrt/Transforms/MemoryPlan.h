// Compile-time memory plan: places the buffers of an executable in one
// workspace, reusing space between values whose lifetimes do not overlap.
// Sizes are symbolic (hybrid::SymExpr), so the plan holds for every binding
// of the executable's symbols. Independent of MLIR (unit-tested alone).
#pragma once

#include "hybrid/SymExpr.h"

#include <cstdint>
#include <vector>

namespace hybridc {

struct PlannedValue {
  hybrid::SymExpr bytes; ///< size in bytes
  int firstUse;          ///< index of the first command that touches it
  int lastUse;           ///< index of the last command that touches it
};

/// Offsets are polynomials, and an aligned offset is not (alignUp of a
/// polynomial is no polynomial), so the plan's contract is:
///
///   address of value v = base + alignUp(offsets[v], alignment)
///
/// with base aligned to `alignment`. Every slot reserves enough bytes that
/// the aligned start plus the value's size stays inside it: slots of
/// constant size are rounded up to a multiple of the alignment, slots whose
/// polynomial has only multiples of it as coefficients need nothing more,
/// and any other slot reserves alignment - 1 extra bytes. The runtime
/// aligns each offset when it evaluates the plan.
struct MemoryPlan {
  std::vector<hybrid::SymExpr> offsets; ///< per value, bytes from the base
  hybrid::SymExpr totalBytes;
  size_t numSlots = 0;
};

/// Greedy slot assignment in program order. A value reuses a free slot that
/// is provably large enough (SymExpr::knownGE), or grows a free slot it
/// provably covers, else opens a new slot. Slots that need no padding are
/// laid out first, so their offsets are exact multiples of `alignment` (a
/// power of two).
MemoryPlan planMemory(const std::vector<PlannedValue> &values,
                      int64_t alignment);

} // namespace hybridc
