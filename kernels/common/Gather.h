// gather (ops::Gather, ONNX Gather) as plain data both backends share:
// slices of data along `axis` at i32 or i64 indices, negative ones counting
// from the end, as rows of bytes.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

/// data as [outer, dim, row bytes] around axis; the result is [outer,
/// count, row bytes], its row (o, k) data's row (o, indices[k]).
struct GatherProblem {
  int64_t axis = 0;
  int64_t outer = 0, count = 0, dim = 0;
  int64_t rowBytes = 0;
};

/// Checks the dtypes, axis and the result's shape (the indices' values
/// are the CPU kernel's to check: device memory cannot be read here).
GatherProblem describeGather(const GatherArgs &a);

} // namespace hybrid::kernels
