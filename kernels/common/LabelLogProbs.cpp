// label_log_probs' and its backward's host-side checks, for every backend.
#include "common/LabelLogProbs.h"

#include "common/Check.h"

namespace hybrid::kernels {
namespace {

/// The checks of the logits and labels both ops share.
LabelLogProbsProblem describeRows(const ConstTensor &logits,
                                  const ConstTensor &labels,
                                  const char *kernel) {
  expectFloat(logits.dtype, kernel, "logits");
  expectIndex(labels.dtype, kernel, "labels");
  if (logits.rank() < 1)
    fail(kernel, "logits must have a vocabulary dim, got rank 0");
  const Shape rowShape(logits.shape.begin(), logits.shape.end() - 1);
  expectShape(labels, rowShape, kernel, "labels");
  LabelLogProbsProblem p;
  p.dtype = logits.dtype;
  p.rows = labels.numel();
  p.vocab = logits.shape.back();
  return p;
}

} // namespace

LabelLogProbsProblem describeLabelLogProbs(const LabelLogProbsArgs &a) {
  constexpr const char *kKernel = "label_log_probs";
  const LabelLogProbsProblem p = describeRows(a.logits, a.labels, kKernel);
  expectDType(a.out, DType::F32, kKernel, "result");
  expectShape(a.out, a.labels.shape, kKernel, "result");
  return p;
}

LabelLogProbsProblem describeLabelLogProbsGrad(const LabelLogProbsGradArgs &a) {
  constexpr const char *kKernel = "label_log_probs_grad";
  const LabelLogProbsProblem p = describeRows(a.logits, a.labels, kKernel);
  expectDType(a.grad, DType::F32, kKernel, "grad");
  expectShape(a.grad, a.labels.shape, kKernel, "grad");
  expectDType(a.out, a.logits.dtype, kKernel, "result");
  expectShape(a.out, a.logits.shape, kKernel, "result");
  return p;
}

} // namespace hybrid::kernels
