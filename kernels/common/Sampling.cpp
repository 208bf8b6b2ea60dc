// sample's and sample_step's host-side checks, shared by every backend.
#include "common/Sampling.h"

#include "common/Check.h"

#include <climits>
#include <string>

namespace hybrid::kernels {
namespace {

void expectTokens(const SampleProblem &p, const ConstTensor &logits,
                  const char *kernel) {
  if (p.B > 0 && p.V == 0)
    fail(kernel, "logits " + shapeToString(logits.shape) +
                     " have no tokens to sample from");
}

} // namespace

SampleProblem describeSampling(const ConstTensor &logits,
                               const ConstTensor &sampling,
                               const ConstTensor &rng, const char *kernel) {
  expectFloat(logits.dtype, kernel, "logits");
  expectRank(logits, 2, kernel, "logits");
  expectDType(sampling, DType::F32, kernel, "sampling");
  if (sampling.numel() != 3)
    fail(kernel, "sampling " + shapeToString(sampling.shape) +
                     " must hold {temperature, top_p, top_k}");
  expectDType(rng, DType::I64, kernel, "rng");
  if (rng.numel() != 2)
    fail(kernel,
         "rng " + shapeToString(rng.shape) + " must hold {seed, counter}");
  if (logits.shape[1] > INT32_MAX)
    fail(kernel,
         "vocabulary of " + std::to_string(logits.shape[1]) + " is too large");
  SampleProblem p;
  p.dtype = logits.dtype;
  p.B = logits.shape[0];
  p.V = logits.shape[1];
  return p;
}

SampleProblem describeSample(const SampleArgs &a) {
  constexpr const char *kKernel = "sample";
  const SampleProblem p =
      describeSampling(a.logits, a.sampling, a.rng, kKernel);
  expectDType(a.out, DType::I64, kKernel, "result");
  expectShape(a.out, {p.B}, kKernel, "result");
  expectTokens(p, a.logits, kKernel);
  return p;
}

SampleProblem describeSampleStep(const SampleStepArgs &a) {
  constexpr const char *kKernel = "sample_step";
  SampleProblem p = describeSampling(a.logits, a.sampling, a.inRng, kKernel);
  const int64_t B = p.B;
  expectDType(a.config, DType::I64, kKernel, "config");
  if (a.config.numel() != 4)
    fail(kKernel, "config " + shapeToString(a.config.shape) +
                      " must hold {eos, pad, min_new, unused}");
  expectDType(a.inCount, DType::I64, kKernel, "count");
  if (a.inCount.numel() != 1)
    fail(kKernel,
         "count " + shapeToString(a.inCount.shape) + " must hold one element");
  expectDType(a.inFinished, DType::Bool, kKernel, "finished");
  expectShape(a.inFinished, {B}, kKernel, "finished");
  expectDType(a.inLengths, DType::I64, kKernel, "lengths");
  expectShape(a.inLengths, {B}, kKernel, "lengths");

  expectDType(a.token, DType::I64, kKernel, "token");
  expectShape(a.token, {B}, kKernel, "token");
  expectDType(a.tokens, DType::I64, kKernel, "tokens");
  expectRank(a.tokens, 2, kKernel, "tokens");
  if (a.tokens.shape[0] != B)
    fail(kKernel, "tokens " + shapeToString(a.tokens.shape) + " must have " +
                      std::to_string(B) + " rows like the logits");
  expectDType(a.logprobs, DType::F32, kKernel, "logprobs");
  expectShape(a.logprobs, a.tokens.shape, kKernel, "logprobs");
  expectDType(a.lengths, DType::I64, kKernel, "lengths");
  expectShape(a.lengths, {B}, kKernel, "lengths");
  expectDType(a.finished, DType::Bool, kKernel, "finished");
  expectShape(a.finished, {B}, kKernel, "finished");
  expectDType(a.count, DType::I64, kKernel, "count");
  expectShape(a.count, a.inCount.shape, kKernel, "count");
  expectDType(a.rng, DType::I64, kKernel, "rng");
  expectShape(a.rng, a.inRng.shape, kKernel, "rng");
  p.N = a.tokens.shape[1];
  expectTokens(p, a.logits, kKernel);
  return p;
}

} // namespace hybrid::kernels
