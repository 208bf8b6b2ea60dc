// The row sampler of the sample kernel (Sample.cpp), shared with
// sample_step (SampleStep.cpp) so that both draw the same tokens.
#pragma once

#include "Scratch.h"

#include <cstdint>

namespace hybrid::cpu::kernels {

/// A call's sampling parameters (sampling [3] f32, rng [2] i64).
struct SamplingParams {
  float temperature = 0, topP = 1;
  int64_t topK = 0; // 0: all
  uint64_t seed = 0, counter = 0;
};

/// A worker's scratch for one row of V tokens.
struct SampleRowScratch {
  uint64_t *weight; // [V]
  int32_t *order;   // [V]
};

/// The parameters from the sampling and rng operands' data.
SamplingParams readSamplingParams(const float *sampling, const int64_t *rng);

SampleRowScratch carveSampleRow(Carve &carve, int64_t V);

/// The token of one row of V f32 logits drawn with uniform u (Ops.h's
/// Sample; the argmax when greedy).
int64_t sampleRow(const float *logits, int64_t V, const SamplingParams &params,
                  float u, const SampleRowScratch &scratch);

} // namespace hybrid::cpu::kernels
