// slice (ops::Slice, ONNX Slice semantics) as plain data both backends
// share: the attributes' clamping, negative steps included, checked once.
#pragma once

#include "common/KernelArgs.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hybrid::kernels {

/// The result as a strided view of the input: result element i (a
/// multi-index) is input element offset + sum_d i[d] * strides[d]. An
/// empty result's strides are 0.
struct SliceProblem {
  Shape shape; ///< the result's
  std::vector<int64_t> strides;
  int64_t offset = 0;
  size_t elementSize = 0;
};

/// Checks the attributes (axes listed once, non-zero steps, equal lengths)
/// and the result against the input; missing axes mean the leading
/// dimensions and missing steps 1, as in ONNX.
SliceProblem describeSlice(const SliceArgs &a);

} // namespace hybrid::kernels
