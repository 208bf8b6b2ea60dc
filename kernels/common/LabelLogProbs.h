// label_log_probs(_grad) calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

/// One call: `rows` rows of `vocab` logits (f32, bf16 or f16, `dtype`), a
/// label per row (i32 or i64).
struct LabelLogProbsProblem {
  DType dtype = DType::F32;
  int64_t rows = 0, vocab = 0;
};

/// Checks label_log_probs (logits [..., V] float, labels [...] i32 or i64
/// -> f32 [...]) and describes it.
LabelLogProbsProblem describeLabelLogProbs(const LabelLogProbsArgs &a);

/// Checks label_log_probs_grad (label_log_probs' operands and grad f32
/// [...] -> the logits' dtype and shape) and describes it.
LabelLogProbsProblem describeLabelLogProbsGrad(const LabelLogProbsGradArgs &a);

} // namespace hybrid::kernels
