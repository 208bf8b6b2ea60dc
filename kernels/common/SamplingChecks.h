// The checks of the sampling kernels' operands (sample, sample_step)
// beyond their logits' dtype, one definition for the CPU and CUDA kernels:
// the tensor types of either backend bring its expectDType / expectShape /
// expectRank (argument-dependent lookup), and `fail(message)` throws the
// backend's error for the kernel.
#pragma once

#include "hybrid/Types.h"

#include <climits>
#include <cstdint>
#include <string>

namespace hybrid::sampling {

/// Operand and result positions (Ops.h).
enum SampleStepOperand {
  Logits,
  Config,
  Sampling,
  Rng,
  Count,
  Finished,
  Lengths
};
enum SampleStepResult {
  TokenOut,
  TokensOut,
  LogprobsOut,
  LengthsOut,
  FinishedOut,
  CountOut,
  RngOut
};

/// Checks that logits are [B, V] with V an int (the row kernels index it
/// so), sampling f32 {temperature, top_p, top_k} and rng i64 {seed,
/// counter}; the logits' float dtype is the caller's check.
template <typename Tensor, typename Fail>
void checkSamplingOperands(const Tensor &logits, const Tensor &sampling,
                           const Tensor &rng, const char *kernel, Fail fail) {
  expectRank(logits, 2, kernel, "logits");
  expectDType(sampling, DType::F32, kernel, "sampling");
  if (sampling.numel() != 3)
    fail("sampling " + shapeToString(sampling.shape) +
         " must hold {temperature, top_p, top_k}");
  expectDType(rng, DType::I64, kernel, "rng");
  if (rng.numel() != 2)
    fail("rng " + shapeToString(rng.shape) + " must hold {seed, counter}");
  if (logits.shape[1] > INT32_MAX)
    fail("vocabulary of " + std::to_string(logits.shape[1]) + " is too large");
}

/// Checks the generation state's operands and every result against the
/// logits' B rows; returns N, the columns of tokens and logprobs.
template <typename Call, typename Fail>
int64_t checkSampleStepState(const Call &call, const char *kernel, int64_t B,
                             Fail fail) {
  const auto &config = call.operands.at(Config),
             &count = call.operands.at(Count);
  expectDType(config, DType::I64, kernel, "config");
  if (config.numel() != 4)
    fail("config " + shapeToString(config.shape) +
         " must hold {eos, pad, min_new, unused}");
  expectDType(count, DType::I64, kernel, "count");
  if (count.numel() != 1)
    fail("count " + shapeToString(count.shape) + " must hold one element");
  expectDType(call.operands.at(Finished), DType::Bool, kernel, "finished");
  expectShape(call.operands.at(Finished), {B}, kernel, "finished");
  expectDType(call.operands.at(Lengths), DType::I64, kernel, "lengths");
  expectShape(call.operands.at(Lengths), {B}, kernel, "lengths");

  const auto &tokens = call.results.at(TokensOut);
  expectDType(call.results.at(TokenOut), DType::I64, kernel, "token");
  expectShape(call.results.at(TokenOut), {B}, kernel, "token");
  expectDType(tokens, DType::I64, kernel, "tokens");
  expectRank(tokens, 2, kernel, "tokens");
  if (tokens.shape[0] != B)
    fail("tokens " + shapeToString(tokens.shape) + " must have " +
         std::to_string(B) + " rows like the logits");
  expectDType(call.results.at(LogprobsOut), DType::F32, kernel, "logprobs");
  expectShape(call.results.at(LogprobsOut), tokens.shape, kernel, "logprobs");
  expectDType(call.results.at(LengthsOut), DType::I64, kernel, "lengths");
  expectShape(call.results.at(LengthsOut), {B}, kernel, "lengths");
  expectDType(call.results.at(FinishedOut), DType::Bool, kernel, "finished");
  expectShape(call.results.at(FinishedOut), {B}, kernel, "finished");
  expectDType(call.results.at(CountOut), DType::I64, kernel, "count");
  expectShape(call.results.at(CountOut), count.shape, kernel, "count");
  expectDType(call.results.at(RngOut), DType::I64, kernel, "rng");
  expectShape(call.results.at(RngOut), call.operands.at(Rng).shape, kernel,
              "rng");
  return tokens.shape[1];
}

} // namespace hybrid::sampling
