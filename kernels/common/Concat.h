// concat (ops::Concat) as plain data both backends share: the inputs
// checked against each other once, and the copy as rows of bytes. Concat's
// inputs are variadic, so it reads the call's operands (no ConcatArgs).
#pragma once

#include "common/Call.h"

#include <cstdint>

namespace hybrid::kernels {

/// The result as `outer` rows of outRow bytes; input t fills bytes
/// [sum of the inputs before it, + t.shape[axis] * inner) of each row.
struct ConcatProblem {
  int64_t axis = 0;
  int64_t outer = 0;
  int64_t inner = 0; ///< bytes per index along axis
  int64_t outRow = 0;
};

/// Checks at least one input, one dtype, equal shapes outside axis and the
/// result's dtype and shape.
ConcatProblem describeConcat(const Call &call);

} // namespace hybrid::kernels
