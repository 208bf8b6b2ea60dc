// Throughput metrics as the benchmarks report them.
//
// The model FLOPs of a training step (PaLM's accounting), model FLOPs
// utilisation, the median of timed samples and the device's peak memory.
// Plain functions of their arguments; safe from any thread.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"
#include "hybrid/Executable.h"

#include <cstdint>
#include <vector>

namespace hybrid {

/// The model FLOPs of one training step. Dense: 6 x trainable parameters x
/// tokens (2 forward, 4 backward per parameter and token; embeddings
/// included, a tied LM head counted once, as its GEMM). Attention's scores
/// and weighted sum: 12 x layers x width x seq per token (PaLM's count, no
/// causal halving), layers and width (heads x head size) read off
/// @forward's attention commands; 0 when it has none.
struct StepFlops {
  int64_t trainable = 0, layers = 0, width = 0;
  double dense = 0, attention = 0;
  double total() const { return dense + attention; }
};

/// The FLOPs of `trainStep` (an executable returning grad.<parameter> per
/// trainable parameter) on `batch` sequences of `seq` tokens.
StepFlops stepFlopsOf(const BundleDesc &bundle, const Executable &trainStep,
                      int64_t batch, int64_t seq);

/// The median of `samples` (of an even count, the mean of the middle two);
/// 0 for none.
double medianOf(std::vector<double> samples);

/// The device allocator's high-water mark so far, in GiB.
double peakMemoryGiB(const Device &device);

} // namespace hybrid
