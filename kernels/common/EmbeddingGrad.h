// embedding_grad calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include "hybrid/HostDevice.h"
#include <cstdint>

namespace hybrid::kernels {

/// One call: `positions` ids (i32 or i64) and as many rows of grad_out's
/// `features`, summed into a [rows, features] table of grad_out's dtype.
struct EmbeddingGradProblem {
  DType dtype = DType::F32;
  int64_t positions = 0, rows = 0, features = 0;
};

/// The sizes from the shapes of ids, grad_out and the result alone (scratch
/// sizing; no checks).
EmbeddingGradProblem embeddingGradShape(const Shape &ids, const Shape &gradOut,
                                        const Shape &out);

/// Checks the call (ids i32 or i64; grad_out [..., D] with the ids' shape
/// before D, float; a [rows, D] result of grad_out's dtype) and describes
/// it.
EmbeddingGradProblem describeEmbeddingGrad(const EmbeddingGradArgs &a);

/// The table row id adds to: the id itself in [0, rows), else -1 (nothing).
HYBRID_HOST_DEVICE int64_t tableRowOf(int64_t id, int64_t rows) {
  return id >= 0 && id < rows ? id : -1;
}

} // namespace hybrid::kernels
