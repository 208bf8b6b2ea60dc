// Merging the dimensions of a strided walk over a result, as the CPU's
// BroadcastWalk and CUDA's StridedPlan both do: neighbouring dimensions
// fold into one wherever every operand steps over the inner one exactly,
// so equal shapes give one long row, a scalar operand stride 0 and a bias
// row two dimensions, whatever the tensors' ranks.
#pragma once

#include "hybrid/Types.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace hybrid::kernels {

/// A result's dimensions after merging, innermost first, and each operand's
/// stride along them. Plain data with no heap memory: the CPU kernels build
/// walks while they run.
struct MergedDims {
  static constexpr size_t kMaxOperands = 4;
  /// Dimensions of size > 1 that can remain: a result with more holds a
  /// zero dimension (2^64 elements do not exist).
  static constexpr size_t kMaxRank = 64;

  size_t rank = 0;
  int64_t dims[kMaxRank];
  int64_t strides[kMaxRank][kMaxOperands];
};

/// Operand k's stride along out[d] when operands of `shapes` are
/// NumPy-broadcast to `out`, written to strides[d * shapes.size() + k] (0
/// where the operand broadcasts); throws naming `kernel` when one does not
/// broadcast. `strides` holds out.size() * shapes.size() entries.
void broadcastStrides(const Shape &out,
                      std::initializer_list<const Shape *> shapes,
                      int64_t *strides, const char *kernel);

/// Merges the dimensions of `out` for `operands` operands (at most
/// MergedDims::kMaxOperands) whose strides along out[d] are
/// strides[d * operands + k]; size-1 dimensions vanish. False when more
/// than MergedDims::kMaxRank dimensions would remain: the caller's limit
/// is lower, and it says so in its own words.
bool mergeDims(const Shape &out, const int64_t *strides, size_t operands,
               MergedDims &merged);

} // namespace hybrid::kernels
