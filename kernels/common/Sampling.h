// sample and sample_step calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

/// One call: B rows of V logits (f32, bf16 or f16); sample_step's tokens
/// and logprobs have N columns (0 for sample).
struct SampleProblem {
  DType dtype = DType::F32;
  int64_t B = 0, V = 0, N = 0;
};

/// Checks that logits are float [B, V] with V an int (the row kernels index
/// it so), sampling f32 {temperature, top_p, top_k} and rng i64 {seed,
/// counter}, and describes them. Reads no data (scratch sizing).
SampleProblem describeSampling(const ConstTensor &logits,
                               const ConstTensor &sampling,
                               const ConstTensor &rng, const char *kernel);

/// Checks sample (describeSampling, an i64 [B] result, tokens to draw from
/// when there are rows) and describes it.
SampleProblem describeSample(const SampleArgs &a);

/// Checks sample_step (describeSampling; config i64 {eos, pad, min_new,
/// unused}, count i64 [1], finished bool [B], lengths i64 [B]; results
/// token i64 [B], tokens i64 [B, N], logprobs f32 [B, N], lengths,
/// finished, count and rng as their operands; tokens to draw from when
/// there are rows) and describes it.
SampleProblem describeSampleStep(const SampleStepArgs &a);

} // namespace hybrid::kernels
