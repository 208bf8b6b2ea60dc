// cumsum (ops::CumSum) as plain data both backends share: a running sum
// along `axis` (exclusive / reverse as ONNX CumSum) on floats (f32, bf16,
// f16; accumulated in double like PyTorch's CPU cumsum, each output
// rounded once) and integers (i32, i64; wrapping).
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"

#include <cstdint>
#include <type_traits>

namespace hybrid::kernels {

/// The input as [outer, n, inner] around the scanned axis; a scalar scans
/// as a one-element vector.
struct CumSumProblem {
  int64_t outer = 1, n = 1, inner = 1;
  bool exclusive = false, reverse = false;
};

/// The scan's layout alone, from the input's shape (the CPU's scratch
/// sizing, which must not throw for a valid call, uses it too).
inline CumSumProblem cumsumLayout(const Shape &input,
                                  const ops::CumSum &attrs) {
  CumSumProblem p;
  p.exclusive = attrs.exclusive;
  p.reverse = attrs.reverse;
  const int64_t rank = static_cast<int64_t>(input.size());
  if (rank == 0)
    return p;
  const int64_t axis = normalizeAxis(attrs.axis, rank, "cumsum");
  p.outer = product(input, 0, axis);
  p.n = input[axis];
  p.inner = product(input, axis + 1, rank);
  return p;
}

/// Checks the result against the input and the axis.
inline CumSumProblem describeCumSum(const CumSumArgs &a) {
  expectShape(a.out, a.input.shape, "cumsum", "result");
  expectDType(a.out, a.input.dtype, "cumsum", "result");
  return cumsumLayout(a.input.shape, a.attrs);
}

/// The accumulator of an element type: double for floats (any float
/// storage type: what is not an integer), the unsigned type for integers,
/// whose overflow then wraps instead of being undefined.
template <typename S>
using CumSumAccumulator = std::conditional_t<
    std::is_integral_v<S>,
    std::make_unsigned_t<std::conditional_t<std::is_integral_v<S>, S, int>>,
    double>;

} // namespace hybrid::kernels
