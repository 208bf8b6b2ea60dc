// transpose (ops::Transpose) as plain data both backends share: the
// permutation checked once, the result as a strided view of the input, and
// when that view calls for tiles (the permutation moves the input's
// contiguous dimension away from the result's last).
#pragma once

#include "common/KernelArgs.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybrid::kernels {

struct TransposeProblem {
  Shape shape;                  ///< the result's
  std::vector<int64_t> strides; ///< the input's along each result dimension
  size_t elementSize = 0;
};

/// Checks perm (a permutation of the input's dimensions, negative entries
/// counting from the end) and the result's dtype and shape.
TransposeProblem describeTranspose(const TransposeArgs &a);

/// The result's dimensions merged where they stay neighbours in the input,
/// outermost first, with their input strides. A plain strided copy reads
/// the input with stride inStrides.back() along the result's rows; tiles
/// of dimensions p and last read and write contiguously.
struct TransposeTiles {
  std::vector<int64_t> dims, inStrides;
  size_t p = 0; ///< the dimension contiguous in the input
};

/// The tiles of a non-empty transpose; false when its last merged
/// dimension is contiguous in the input already (or none is: a
/// broadcast), so that a strided copy is as good. Each backend decides
/// from the sizes whether its tiles pay.
bool transposeTiles(const TransposeProblem &p, TransposeTiles &tiles);

} // namespace hybrid::kernels
