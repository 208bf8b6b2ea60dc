// The CUDA sample kernel draws exactly the CPU kernel's tokens: random
// logits of every float dtype (with ties, -inf, NaN and +inf), vocabularies
// up to 128K (flat, peaked and tied rows that take the radix selection down
// to the index bits), every combination of temperature, top-k and top-p and
// many seeds and counters; greedy ties and NaN rows; a captured graph
// replayed with new counters; the CPU kernel's errors.
#include "CudaTestSupport.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace hybrid::cuda::test {
namespace {

class SampleTest : public CudaKernelTest {};

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

HostTensor samplingOf(double temperature, double topP, double topK) {
  return tensorOf(DType::F32, {3}, {temperature, topP, topK});
}

HostTensor rngOf(int64_t seed, int64_t counter) {
  HostTensor t(DType::I64, {2});
  std::memcpy(t.bytes.data(), &seed, 8);
  std::memcpy(t.bytes.data() + 8, &counter, 8);
  return t;
}

/// Both kernels on `logits`; the tokens must be identical.
void expectSameTokens(const HostTensor &logits, double temperature, double topP,
                      double topK, int64_t seed, int64_t counter,
                      const std::string &what) {
  expectMatchesCpu(
      ops::Sample{},
      {logits, samplingOf(temperature, topP, topK), rngOf(seed, counter)},
      {HostTensor(DType::I64, {logits.shape[0]})},
      what + " T " + std::to_string(temperature) + " top_p " +
          std::to_string(topP) + " top_k " + std::to_string(topK) + " seed " +
          std::to_string(seed) + " counter " + std::to_string(counter));
}

TEST_F(SampleTest, GreedyTakesTheFirstLargestAndIgnoresNaN) {
  for (DType dt : kFloatTypes)
    for (double temperature : {0.0, -1.0, kNaN}) {
      const HostTensor logits =
          tensorOf(dt, {5, 4}, {1,     3,     3,     2,     // tie: the first
                                kNaN,  -1,    kNaN,  -2,    // NaN ignored
                                -kInf, -kInf, -kInf, -kInf, // all -inf
                                kNaN,  kNaN,  kNaN,  kNaN,  // nothing: 0
                                0,     0,     kInf,  5});
      expectSameTokens(logits, temperature, 0.5, 2, 1, 2,
                       std::string("greedy ") + dtypeName(dt));
    }
}

TEST_F(SampleTest, EveryParameterCombination) {
  // Random logits (bf16 and f16 ones tie often) with -inf and NaN entries,
  // rows of only -inf, only NaN and with +inf, over the parameters and
  // their edges; V around the weight-bit steps (8191 / 8192).
  for (DType dt : kFloatTypes)
    for (int64_t V : {int64_t(1), int64_t(7), int64_t(100), int64_t(3000),
                      int64_t(8191), int64_t(8192)}) {
      const int64_t B = 24;
      HostTensor logits = randomTensor(dt, {B, V}, rng, -6, 6);
      for (int64_t e = 3; e < logits.numel(); e += 17)
        logits.set(e, -kInf);
      for (int64_t e = 5; e < logits.numel(); e += 29)
        logits.set(e, kNaN);
      for (int64_t j = 0; j < V; ++j) {
        logits.set(1 * V + j, -kInf);
        logits.set(2 * V + j, kNaN);
      }
      logits.set(3 * V + V / 2, kInf);
      logits.set(4 * V + V - 1, kInf);
      logits.set(4 * V, kInf);
      for (double temperature : {0.0, 0.3, 1.0, 4.0})
        for (double topK : {0.0, 1.0, 5.0, 64.0, double(V), 2.5})
          for (double topP : {1.0, 0.95, 0.5, 0.0})
            expectSameTokens(
                logits, temperature, topP, topK, 9,
                std::uniform_int_distribution<int64_t>(0, int64_t(1)
                                                              << 40)(rng),
                std::string(dtypeName(dt)) + " V " + std::to_string(V));
    }
}

TEST_F(SampleTest, LargeVocabulariesDeepSelections) {
  // 128,256 tokens (Llama 3) and 50,257 (GPT-2): rows that keep thousands
  // of candidates through top-p (flat, equal, huge temperature), peaked
  // rows, bf16 rows full of ties, rows with a few finite logits.
  for (int64_t V : {int64_t(128256), int64_t(50257)})
    for (DType dt : {DType::F32, DType::BF16}) {
      const int64_t B = 6;
      HostTensor logits(dt, {B, V});
      std::normal_distribution<double> normal(0, 1);
      for (int64_t j = 0; j < V; ++j) {
        logits.set(0 * V + j, 0.25);                    // all equal
        logits.set(1 * V + j, 0.05 * normal(rng));      // nearly flat
        logits.set(2 * V + j, 3.0 * normal(rng));       // peaked
        logits.set(3 * V + j, std::round(normal(rng))); // few values: ties
        logits.set(4 * V + j, j % 1000 == 0 ? normal(rng) : -kInf);
        logits.set(5 * V + j, 12.0 * normal(rng) - 0.001 * j); // very peaked
      }
      for (double temperature : {0.7, 1.0, 1e30})
        for (double topK : {0.0, 50.0, 5000.0})
          for (double topP : {1.0, 0.9, 0.999})
            for (int64_t counter : {0, 1})
              expectSameTokens(logits, temperature, topP, topK, 1234, counter,
                               std::string(dtypeName(dt)) + " V " +
                                   std::to_string(V));
    }
}

TEST_F(SampleTest, ManySeedsAndRows) {
  // 256 rows of a GPT-2-sized vocabulary under 8 (seed, counter) pairs: the
  // draws spread over the distribution's tail as well as its head.
  const int64_t V = 50257;
  HostTensor logits = randomTensor(DType::BF16, {256, V}, rng, -8, 8);
  for (int64_t seed : {7, 1 << 20})
    for (int64_t counter = 0; counter < 4; ++counter)
      expectSameTokens(logits, 1.0, 0.95, 0, seed, counter, "256 rows");
}

TEST_F(SampleTest, OneGraphServesEveryStep) {
  // A decode step's draw captured once; the RNG counter changes in device
  // memory between replays, as generation advances it.
  const int64_t B = 8, V = 32000;
  const HostTensor logits = randomTensor(DType::F32, {B, V}, rng, -5, 5);
  const HostTensor sampling = samplingOf(0.8, 0.9, 40);
  CapturedCall step(ops::Sample{}, {logits, sampling, rngOf(5, 0)},
                    {HostTensor(DType::I64, {B})});
  for (int64_t counter = 0; counter < 10; ++counter) {
    const HostTensor r = rngOf(5, counter);
    step.setOperand(2, r);
    const std::vector<HostTensor> gpu = step.replay();
    const std::vector<HostTensor> cpu = runCpu(
        ops::Sample{}, {logits, sampling, r}, {HostTensor(DType::I64, {B})});
    ASSERT_TRUE(gpu[0].bytes == cpu[0].bytes) << "counter " << counter;
  }
}

TEST_F(SampleTest, RejectsBadOperandsAsTheCpuDoes) {
  const HostTensor logits = randomTensor(DType::F32, {2, 3}, rng);
  const HostTensor sampling = samplingOf(1, 1, 0), r = rngOf(1, 2);
  const HostTensor result(DType::I64, {2});
  auto error = [&](const HostTensor &l, const HostTensor &s,
                   const HostTensor &g, const HostTensor &out) {
    try {
      runCuda(ops::Sample{}, {l, s, g}, {out});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  auto expectError = [](const std::string &message, const char *part) {
    EXPECT_NE(message.find(std::string("sample: ")), std::string::npos)
        << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  expectError(error(logits, tensorOf(DType::F32, {2}, {1, 1}), r, result),
              "must hold {temperature, top_p, top_k}");
  expectError(error(logits, tensorOf(DType::F16, {3}, {1, 1, 0}), r, result),
              "sampling must be f32");
  expectError(
      error(logits, sampling, tensorOf(DType::I64, {3}, {1, 2, 3}), result),
      "must hold {seed, counter}");
  expectError(error(logits, sampling, r, HostTensor(DType::I32, {2})),
              "result must be i64");
  expectError(error(logits, sampling, r, HostTensor(DType::I64, {3})),
              "result has shape");
  expectError(error(tensorOf(DType::I64, {2, 3}, {1, 2, 3, 4, 5, 6}), sampling,
                    r, result),
              "unsupported element type i64 for logits");
  expectError(error(HostTensor(DType::F32, {2, 0}), sampling, r, result),
              "no tokens");
}

} // namespace
} // namespace hybrid::cuda::test
