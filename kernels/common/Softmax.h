// softmax and log_softmax calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

/// One call: softmax over the n elements of each of outer * inner columns
/// (element (o, i, j) at (o * n + i) * inner + j). A rank-0 input is one
/// element (1 x 1 x 1).
struct SoftmaxProblem {
  DType dtype = DType::F32;
  bool log = false;
  int64_t outer = 1, n = 1, inner = 1;
};

/// The kernel's name in its errors: log_softmax or softmax.
inline const char *softmaxKernel(const ops::Softmax &attrs) {
  return attrs.log ? "log_softmax" : "softmax";
}

/// The input of shape `input` around `axis` (in [-rank, rank)); throws
/// naming `kernel` for an axis out of range. From shapes alone (scratch
/// sizing).
SoftmaxProblem softmaxShape(const Shape &input, int64_t axis,
                            const char *kernel);

/// Checks the call (a result of the input's dtype and shape, a valid axis,
/// a float input) and describes it.
SoftmaxProblem describeSoftmax(const SoftmaxArgs &a);

} // namespace hybrid::kernels
