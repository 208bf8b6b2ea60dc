// copy (ops::Copy) as plain data both backends share: the same bytes in
// another buffer of the same dtype and element count (a reshape is a copy
// into a result of another shape).
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"

#include <cstddef>

namespace hybrid::kernels {

struct CopyProblem {
  size_t bytes = 0; ///< 0 when there is nothing to move (empty, or in place)
};

/// Checks the result's dtype and element count.
inline CopyProblem describeCopy(const CopyArgs &a) {
  expectDType(a.out, a.input.dtype, "copy", "result");
  if (a.input.numel() != a.out.numel())
    fail("copy", "input " + shapeToString(a.input.shape) + " and result " +
                     shapeToString(a.out.shape) +
                     " have different element counts");
  if (a.input.numel() == 0 || a.input.data == a.out.data)
    return {};
  return {a.input.numel() * dtypeSize(a.input.dtype)};
}

} // namespace hybrid::kernels
