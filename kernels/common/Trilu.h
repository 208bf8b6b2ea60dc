// trilu (ops::Trilu) as plain data both backends share: keep the upper
// (j - i >= k) or lower (j - i <= k) triangle of the last two dimensions
// and zero the rest; any dtype (elements move as words).
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::kernels {

struct TriluProblem {
  int64_t matrices = 0, rows = 0, cols = 0;
  bool upper = true;
  int64_t k = 0; ///< may lie far outside the matrix
  size_t elementSize = 0;
};

/// Checks the result against the input, which must have rank >= 2.
inline TriluProblem describeTrilu(const TriluArgs &a) {
  const ConstTensor &input = a.input;
  expectShape(a.out, input.shape, "trilu", "result");
  expectDType(a.out, input.dtype, "trilu", "result");
  const int64_t rank = input.rank();
  if (rank < 2)
    fail("trilu",
         "input must have rank >= 2, got " + shapeToString(input.shape));
  TriluProblem p;
  p.matrices = product(input.shape, 0, rank - 2);
  p.rows = input.shape[rank - 2];
  p.cols = input.shape[rank - 1];
  p.upper = a.attrs.upper;
  p.k = a.attrs.k;
  p.elementSize = dtypeSize(input.dtype);
  return p;
}

} // namespace hybrid::kernels
