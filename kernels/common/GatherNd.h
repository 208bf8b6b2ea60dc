// gather_nd (ops::GatherNd, ONNX GatherND with batch_dims) as plain data
// both backends share: i32 or i64 index tuples into any data dtype.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>
#include <limits>

namespace hybrid::kernels {

/// data as [batches, its dimensions b .. b + k - 1, slice]: index tuple t
/// (of k entries, `tuples` per batch) picks one slice of `slice` elements.
struct GatherNdProblem {
  int64_t b = 0;           ///< batch_dims
  int64_t k = 0;           ///< indices per tuple
  int64_t batches = 0;     ///< product of the batch dimensions
  int64_t tuples = 0;      ///< tuples per batch (may be 0)
  int64_t slice = 0;       ///< elements per tuple
  int64_t batchStride = 0; ///< data elements per batch
};

/// Checks the dtypes, ranks, batch_dims, the tuples' length (at most
/// maxTuple, a backend's limit) and the result's shape.
GatherNdProblem
describeGatherNd(const GatherNdArgs &a,
                 int64_t maxTuple = std::numeric_limits<int64_t>::max());

} // namespace hybrid::kernels
