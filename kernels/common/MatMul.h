// matmul calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

/// One call: [M, K] x [K, N] products over the broadcast of the operands'
/// batch shapes (1-D operands promoted as NumPy does).
struct MatMulProblem {
  DType dtype = DType::F32;
  int64_t M = 0, N = 0, K = 0;
  Shape batchA, batchB, batch; ///< lhs's, rhs's and their broadcast
  Shape out;                   ///< the result's shape

  /// Whether the rhs has no batch and the lhs every batch: the lhs batches
  /// are then consecutive rows of one tall product.
  bool stacksRows() const {
    return numElements(batchB) == 1 &&
           numElements(batchA) == numElements(batch);
  }
};

/// The product sizes of lhs x rhs from their shapes alone (scratch sizing);
/// throws naming matmul for rank 0 or differing inner dimensions. dtype is
/// left f32.
MatMulProblem matmulShape(const Shape &lhs, const Shape &rhs);

/// Checks the call (float lhs, rhs of its dtype, the result of its dtype
/// and NumPy's shape) and describes it.
MatMulProblem describeMatMul(const MatMulArgs &a);

} // namespace hybrid::kernels
