// select (ops::Select) as plain data both backends share: cond ? lhs : rhs
// with all three NumPy-broadcast to the result; any dtype (elements move
// as words of their size: select never computes).
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::kernels {

struct SelectProblem {
  size_t elementSize = 0;
};

/// Checks a bool cond, one dtype for lhs, rhs and the result, and the
/// result's shape (the broadcast of the three).
inline SelectProblem describeSelect(const SelectArgs &a) {
  expectDType(a.cond, DType::Bool, "select", "cond");
  expectSameDType(a.lhs, a.rhs, "select", "lhs", "rhs");
  expectDType(a.out, a.lhs.dtype, "select", "result");
  expectShape(
      a.out,
      broadcastShapes({&a.cond.shape, &a.lhs.shape, &a.rhs.shape}, "select"),
      "select", "result");
  return {dtypeSize(a.lhs.dtype)};
}

/// One element: any non-zero cond byte picks lhs.
template <typename W>
HYBRID_HOST_DEVICE W selectValue(uint8_t cond, W lhs, W rhs) {
  return cond ? lhs : rhs;
}

} // namespace hybrid::kernels
