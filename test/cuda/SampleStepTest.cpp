// The CUDA sample_step kernel against the CPU one on the same random
// inputs: tokens and every state result equal, log-probabilities within
// 1e-5 relative; greedy and sampled, f32 / bf16 / f16, odd vocabularies
// (rows that start off a 16-byte boundary; tiny ones, mostly the head and
// tail that the kernel reads one logit at a time, EOS ban included), 1 to
// 32 rows, finished rows and the EOS ban; the state updated in place (the
// last block advances count and rng) and without a tile counter (a second
// kernel does); long greedy rows split over blocks (ties, NaN and -inf
// across parts); a captured graph replayed step after step.
#include "CudaTestSupport.h"

#include <cstdio>
#include <cstring>
#include <limits>

namespace hybrid::cuda::test {
namespace {

class SampleStepTest : public CudaKernelTest {};

constexpr int64_t kColumns = 6;

/// A step's operands (Ops.h's SampleStep) and its results' starting
/// contents (tokens and logprobs are written at one column only).
struct Step {
  std::vector<HostTensor> operands, results;
};

HostTensor i64Of(Shape shape, const std::vector<int64_t> &values) {
  HostTensor t(DType::I64, std::move(shape));
  std::memcpy(t.bytes.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

/// Random logits (never zero), EOS the argmax of row 0 (banning it changes
/// the greedy token; emitting it finishes the row), random finished rows
/// (row 0 running), earlier columns filled.
Step randomStep(std::mt19937 &rng, DType dt, int64_t B, int64_t V,
                const std::vector<double> &sampling, int64_t count,
                int64_t minNew) {
  HostTensor logits = randomTensor(dt, {B, V}, rng, -4, 4);
  int64_t eos = 0;
  for (int64_t j = 1; j < V; ++j)
    if (logits.at(j) > logits.at(eos))
      eos = j;
  HostTensor finished = randomTensor(DType::Bool, {B}, rng);
  finished.set(0, 0);
  Step s;
  s.operands = {logits,
                i64Of({4}, {eos, V - 1, minNew, 0}),
                tensorOf(DType::F32, {3}, sampling),
                i64Of({2}, {int64_t(rng() % 100000), int64_t(rng() % 1000)}),
                i64Of({1}, {count}),
                finished,
                randomTensor(DType::I64, {B}, rng, 0, 10)};
  s.results = {HostTensor(DType::I64, {B}),
               randomTensor(DType::I64, {B, kColumns}, rng, 0, V - 1),
               randomTensor(DType::F32, {B, kColumns}, rng, -9, -1),
               HostTensor(DType::I64, {B}),
               HostTensor(DType::Bool, {B}),
               HostTensor(DType::I64, {1}),
               HostTensor(DType::I64, {2})};
  return s;
}

/// Results lengths, finished, count and rng as the operands' own buffers.
const std::vector<int> kInPlace = {-1, -1, -1, 6, 5, 4, 3};

void expectSameStep(const Step &s, bool withContext, bool inPlace,
                    const std::string &what) {
  const std::vector<HostTensor> cpu =
      runCpu(ops::SampleStep{}, s.operands, s.results, /*inPlace=*/true);
  const std::vector<HostTensor> gpu =
      runCuda(ops::SampleStep{}, s.operands, s.results, /*inPlace=*/true,
              withContext, inPlace ? kInPlace : std::vector<int>{});
  ASSERT_EQ(gpu.size(), 7u) << what;
  const char *names[] = {"token",    "tokens", "logprobs", "lengths",
                         "finished", "count",  "rng"};
  Tolerance logprob;
  logprob.rtol = 1e-5;
  logprob.atol = 1e-6;
  for (size_t i = 0; i < 7; ++i)
    expectClose(gpu[i], cpu[i], i == 2 ? logprob : Tolerance{},
                what + " " + names[i]);
}

TEST_F(SampleStepTest, EqualsTheCpuKernel) {
  const std::vector<std::vector<double>> configs = {
      {0, 1, 0}, {0.8, 0.9, 50}, {1.3, 1, 0}, {0.6, 0.5, 0}};
  for (DType dt : kFloatTypes)
    for (int64_t V : {int64_t(7), int64_t(13), int64_t(1000), int64_t(50257),
                      int64_t(128256)})
      for (int64_t B : {int64_t(1), int64_t(3), int64_t(32)})
        for (size_t c = 0; c < configs.size(); ++c)
          for (int64_t minNew : {int64_t(0), int64_t(5)}) {
            const Step s = randomStep(rng, dt, B, V, configs[c], 3, minNew);
            const std::string what =
                std::string(dtypeName(dt)) + " V " + std::to_string(V) + " B " +
                std::to_string(B) + " config " + std::to_string(c) +
                " min_new " + std::to_string(minNew);
            expectSameStep(s, /*withContext=*/true, /*inPlace=*/true, what);
            expectSameStep(s, /*withContext=*/false, /*inPlace=*/true,
                           what + " without a tile counter");
            expectSameStep(s, /*withContext=*/true, /*inPlace=*/false,
                           what + " out of place");
          }
}

TEST_F(SampleStepTest, ManyBlocksAdvanceTheStateOnce) {
  // 64 rows race to the tile counter; count and rng must move by one.
  for (int repeat = 0; repeat < 20; ++repeat) {
    const Step s =
        randomStep(rng, DType::BF16, 64, 50257, {0.9, 0.95, 0}, repeat % 6, 2);
    expectSameStep(s, true, true, "repeat " + std::to_string(repeat));
  }
}

TEST_F(SampleStepTest, GreedyRowsSplitOverBlocksAsOne) {
  // Long greedy rows run on several blocks (a part each, the row's last
  // block combining): argmax ties across parts (the first wins), NaN and
  // -inf in whole parts, the EOS ban, the maximum in the last part.
  const int64_t V = 50257;
  const double inf = std::numeric_limits<double>::infinity(),
               nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : kFloatTypes)
    for (int pattern = 0; pattern < 5; ++pattern) {
      Step s = randomStep(rng, dt, 4, V, {0, 1, 0}, 1, 0);
      HostTensor &logits = s.operands[0];
      for (int64_t b = 0; b < 4; ++b) {
        auto set = [&](int64_t j, double v) { logits.set(b * V + j, v); };
        switch (pattern) {
        case 0: // ties in different parts, the first one wins
          set(V - 3, 9);
          set(20000, 9);
          set(100 + b, 9);
          break;
        case 1: // NaN in the first parts, -inf after them but one
          for (int64_t j = 0; j < V; ++j)
            set(j, j < 9000 ? nan : -inf);
          set(V - 1 - b, 1);
          break;
        case 2: // every logit -inf: the first one
          for (int64_t j = 0; j < V; ++j)
            set(j, -inf);
          break;
        case 3: // every logit NaN: token 0
          for (int64_t j = 0; j < V; ++j)
            set(j, nan);
          break;
        default: // the maximum in the last part, banned at min_new > count
          set(V - 1, 12);
          set(7 * b, 11);
          s.operands[1] = i64Of({4}, {V - 1, 0, 5, 0});
          break;
        }
      }
      const std::string what =
          std::string(dtypeName(dt)) + " pattern " + std::to_string(pattern);
      expectSameStep(s, /*withContext=*/true, /*inPlace=*/true, what);
      expectSameStep(s, /*withContext=*/true, /*inPlace=*/false,
                     what + " out of place");
    }
}

TEST_F(SampleStepTest, GreedySplitRowsReplayInAGraph) {
  // The row counters are left zeroed for the next replay.
  const int64_t B = 2, V = 128256;
  Step s = randomStep(rng, DType::BF16, B, V, {0, 1, 0}, 0, 0);
  CapturedCall step(ops::SampleStep{}, s.operands, s.results,
                    /*withCounters=*/true);
  for (int64_t count = 0; count < kColumns; ++count) {
    s.operands[0] = randomTensor(DType::BF16, {B, V}, rng, -4, 4);
    s.operands[4] = i64Of({1}, {count});
    step.setOperand(0, s.operands[0]);
    step.setOperand(4, s.operands[4]);
    const std::vector<HostTensor> gpu = step.replay();
    const std::vector<HostTensor> cpu =
        runCpu(ops::SampleStep{}, s.operands, s.results, /*inPlace=*/true);
    for (size_t i : {0, 1, 3, 4, 5, 6})
      ASSERT_TRUE(gpu[i].bytes == cpu[i].bytes)
          << "count " << count << " result " << i;
    Tolerance logprob;
    logprob.rtol = 1e-5;
    logprob.atol = 1e-6;
    expectClose(gpu[2], cpu[2], logprob, "count " + std::to_string(count));
    s.results[1] = gpu[1];
    s.results[2] = gpu[2];
  }
  // What the step costs replayed alone (its code and the logits warm in
  // the caches), to set beside what it costs in a decode step
  // (bench/timeline.py): OPT's vocabulary at batch 1.
  Step one = randomStep(rng, DType::BF16, 1, 50272, {0, 1, 0}, 0, 0);
  CapturedCall alone(ops::SampleStep{}, one.operands, one.results,
                     /*withCounters=*/true);
  std::printf("sample_step greedy bf16 [1, 50272] replayed alone: %.1f us "
              "(graph launch included)\n",
              alone.replayMicroseconds(100));
}

TEST_F(SampleStepTest, OneGraphServesEveryStep) {
  // A decode step's epilogue captured once; count and the RNG counter
  // change in device memory between replays.
  const int64_t B = 8, V = 32000;
  Step s = randomStep(rng, DType::F32, B, V, {0.8, 0.9, 40}, 0, 2);
  CapturedCall step(ops::SampleStep{}, s.operands, s.results);
  for (int64_t count = 0; count < kColumns; ++count) {
    s.operands[4] = i64Of({1}, {count});
    s.operands[3] = i64Of({2}, {5, 100 + count});
    step.setOperand(4, s.operands[4]);
    step.setOperand(3, s.operands[3]);
    const std::vector<HostTensor> gpu = step.replay();
    const std::vector<HostTensor> cpu =
        runCpu(ops::SampleStep{}, s.operands, s.results, /*inPlace=*/true);
    // The graph's tokens and logprobs keep earlier steps' columns.
    for (size_t i : {0, 3, 4, 5, 6})
      ASSERT_TRUE(gpu[i].bytes == cpu[i].bytes)
          << "count " << count << " result " << i;
    s.results[1] = gpu[1];
    s.results[2] = gpu[2];
  }
}

TEST_F(SampleStepTest, RejectsBadOperandsAsTheCpuDoes) {
  Step s = randomStep(rng, DType::F32, 2, 10, {0, 1, 0}, 0, 0);
  s.operands[1] = i64Of({3}, {1, 2, 3});
  try {
    runCuda(ops::SampleStep{}, s.operands, s.results, true);
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "sample_step: config [3] must hold {eos, pad, "
                           "min_new, unused}");
  }
}

} // namespace
} // namespace hybrid::cuda::test
