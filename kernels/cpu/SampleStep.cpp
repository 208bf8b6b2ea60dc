// sample_step: the sampling epilogue of a generation step in one kernel
// (Ops.h's SampleStep): EOS banned before min_new tokens, a token drawn by
// the sample kernel's row sampler, its log-probability by log_softmax's
// row statistics, and the generation state advanced, so the results equal
// the composition of those kernels bit for bit.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Sample.h"
#include "Scratch.h"
#include "Softmax.h"

#include "common/Sampling.h"

#include "hybrid/Philox.h"

#include <limits>

namespace hybrid::cpu::kernels {
namespace {

constexpr const char *kKernel = "sample_step";

struct RowScratch {
  SampleRowScratch sample;
  float *row; // [V]: the masked logits, then the same divided by T
};
RowScratch carveRow(Carve &carve, int64_t V) {
  RowScratch r;
  r.sample = carveSampleRow(carve, V);
  r.row = carve.take<float>(V);
  return r;
}

ScratchLayout sampleStepScratch(const KernelCall &call) {
  using In = ops::SampleStep::In;
  const SampleProblem s = describeSampling(
      call.operands.at(In::logits), call.operands.at(In::sampling),
      call.operands.at(In::inRng), kKernel);
  Carve carve;
  carveRow(carve, s.V);
  return {0, carve.used()};
}

} // namespace

void sampleStep(const KernelCall &call) {
  const auto a = SampleStepArgs::bind(call, kKernel);
  const SampleProblem s = describeSampleStep(a);
  const int64_t B = s.B, V = s.V, N = s.N;
  const ScratchLayout layout = sampleStepScratch(call);
  const int threads = scratchThreads(call, layout, kKernel);
  const SamplingParams params =
      readSamplingParams(a.sampling.as<float>(), a.inRng.as<int64_t>());
  const int64_t *config = a.config.as<int64_t>();
  const int64_t eos = config[0], pad = config[1], minNew = config[2];
  const int64_t count = *a.inCount.as<int64_t>();
  const int64_t seed = a.inRng.as<int64_t>()[0];
  // The column is data (the step's index), checked at run time as
  // cache_write checks its offset.
  if (B > 0 && (count < 0 || count >= N))
    fail(kKernel, "column " + std::to_string(count) + " is outside tokens " +
                      shapeToString(a.tokens.shape));
  // Before min_new tokens, EOS is not a choice (HF's MinNewTokensLength).
  const bool banEos = count < minNew && eos >= 0 && eos < V;
  // log_softmax(logits / T)[token], T = 1 when greedy (a NaN T too).
  const float divisor = params.temperature > 0 ? params.temperature : 1.0f;
  const uint8_t *finished = a.inFinished.as<uint8_t>();
  const int64_t *lengths = a.inLengths.as<int64_t>();
  int64_t *tokenOut = a.token.as<int64_t>();
  int64_t *tokens = a.tokens.as<int64_t>();
  float *logprobs = a.logprobs.as<float>();
  int64_t *lengthsOut = a.lengths.as<int64_t>();
  uint8_t *finishedOut = a.finished.as<uint8_t>();
  visitFloat(s.dtype, kKernel, "logits", [&](auto zero) {
    using S = decltype(zero);
    const S *logits = a.logits.as<S>();
    parallelFor(
        B, V * 32,
        [&](int64_t b) {
          Carve carve(threadScratch(call, layout, workerSlot()));
          const RowScratch buf = carveRow(carve, V);
          float *row = buf.row;
          for (int64_t j = 0; j < V; ++j)
            row[j] = toFloat(logits[b * V + j]);
          if (banEos)
            row[eos] = -std::numeric_limits<float>::infinity();
          const float u = philoxUniform(params.seed, params.counter,
                                        static_cast<uint64_t>(b));
          const int64_t token = sampleRow(row, V, params, u, buf.sample);
          for (int64_t j = 0; j < V; ++j)
            row[j] = row[j] / divisor;
          const LogSoftmaxRow stats = logSoftmaxRow(row, V);
          const float logprob = row[token] - stats.max - stats.logSum;
          // Finished rows emit pad (and log-probability 0) from now on.
          const bool done = finished[b] != 0;
          const int64_t emitted = done ? pad : token;
          tokenOut[b] = emitted;
          tokens[b * N + count] = emitted;
          logprobs[b * N + count] = done ? 0.0f : logprob;
          lengthsOut[b] = lengths[b] + (done ? 0 : 1);
          finishedOut[b] = done || emitted == eos;
        },
        threads);
  });
  // After every row read them: count and rng may be updated in place.
  *a.count.as<int64_t>() = count + 1;
  int64_t *rngOut = a.rng.as<int64_t>();
  rngOut[0] = seed;
  rngOut[1] = static_cast<int64_t>(params.counter + 1);
}

size_t sampleStepScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<sampleStepScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
