// broadcast_to (ops::BroadcastTo, ONNX Expand) as plain data both backends
// share. The shape attribute may be symbolic, so the concrete shape is the
// result's; whether the input broadcasts to it is the strided walk's check
// (MergedDims.h's broadcastStrides).
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"

#include <cstddef>

namespace hybrid::kernels {

struct BroadcastToProblem {
  size_t elementSize = 0; ///< elements move as words of this size
};

/// Checks the result's dtype.
inline BroadcastToProblem describeBroadcastTo(const BroadcastToArgs &a) {
  expectDType(a.out, a.input.dtype, "broadcast_to", "result");
  return {dtypeSize(a.input.dtype)};
}

} // namespace hybrid::kernels
