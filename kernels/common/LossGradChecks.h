// The checks of label_log_probs, label_log_probs_grad and embedding_grad
// (Ops.h), one definition for the CPU and CUDA kernels: the tensor types of
// either backend bring its expectDType / expectShape / expectRank /
// expectSameDType (argument-dependent lookup), and `fail(message)` throws
// the backend's error for the kernel.
#pragma once

#include "hybrid/Types.h"

#include <string>

namespace hybrid::losschecks {

/// "unsupported element type X for WHAT (expected EXPECTED)", as both
/// backends' dtype checks word it.
template <typename Fail>
void failUnsupportedType(DType dt, const char *what, const char *expected,
                         Fail fail) {
  fail(std::string("unsupported element type ") + dtypeName(dt) + " for " +
       what + " (expected " + expected + ")");
}

template <typename Fail>
void expectIndexDType(DType dt, const char *what, Fail fail) {
  if (dt != DType::I32 && dt != DType::I64)
    failUnsupportedType(dt, what, "i32 or i64", fail);
}

/// Rows and vocabulary of logits [..., V].
struct LabelRows {
  int64_t rows = 0, vocab = 0;
};

/// label_log_probs (logits [..., V] float, labels [...] i32/i64 -> f32 [...])
/// and, with `grad`, label_log_probs_grad (..., grad f32 [...] -> logits'
/// dtype and shape).
template <typename Call, typename Fail>
LabelRows checkLabelLogProbs(const Call &call, bool grad, const char *kernel,
                             Fail fail) {
  const auto &logits = call.operands.at(0), &labels = call.operands.at(1);
  const auto &result = call.results.at(0);
  if (!isFloatDType(logits.dtype))
    failUnsupportedType(logits.dtype, "logits", "f32, bf16 or f16", fail);
  expectIndexDType(labels.dtype, "labels", fail);
  if (logits.rank() < 1)
    fail("logits must have a vocabulary dim, got rank 0");
  const Shape rowShape(logits.shape.begin(), logits.shape.end() - 1);
  expectShape(labels, rowShape, kernel, "labels");
  if (grad) {
    const auto &g = call.operands.at(2);
    expectDType(g, DType::F32, kernel, "grad");
    expectShape(g, labels.shape, kernel, "grad");
    expectDType(result, logits.dtype, kernel, "result");
    expectShape(result, logits.shape, kernel, "result");
  } else {
    expectDType(result, DType::F32, kernel, "result");
    expectShape(result, labels.shape, kernel, "result");
  }
  return {labels.numel(), logits.shape.back()};
}

/// Positions (ids), table rows and features of embedding_grad.
struct EmbeddingGradShape {
  int64_t positions = 0, rows = 0, features = 0;
};

/// The shape from the operands alone (scratch functions see no data and do
/// no checking).
template <typename Call>
EmbeddingGradShape embeddingGradShape(const Call &call) {
  const auto &ids = call.operands.at(0), &g = call.operands.at(1);
  const auto &out = call.results.at(0);
  return {ids.numel(), out.shape.empty() ? 0 : out.shape[0],
          g.shape.empty() ? 0 : g.shape.back()};
}

/// embedding_grad: ids [...] i32/i64, grad_out [..., D] -> [rows, D] of
/// grad_out's dtype.
template <typename Call, typename Fail>
EmbeddingGradShape checkEmbeddingGrad(const Call &call, const char *kernel,
                                      Fail fail) {
  const auto &ids = call.operands.at(0), &gradOut = call.operands.at(1);
  const auto &result = call.results.at(0);
  expectIndexDType(ids.dtype, "ids", fail);
  expectRank(result, 2, kernel, "result");
  const EmbeddingGradShape s = embeddingGradShape(call);
  Shape wanted = ids.shape;
  wanted.push_back(s.features);
  expectShape(gradOut, wanted, kernel, "grad_out");
  expectShape(result, {s.rows, s.features}, kernel, "result");
  expectSameDType(result, gradOut, kernel, "result", "grad_out");
  return s;
}

} // namespace hybrid::losschecks
