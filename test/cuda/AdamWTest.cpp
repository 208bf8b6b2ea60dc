// The CUDA adamw_update kernel against the CPU one on the same random
// inputs (never zero): parameter and moments equal bit for bit (both round
// each product, sum, quotient and square root on its own); odd sizes (the
// float4 loop and its scalar tail), in and out of place, and replayed from
// a captured graph with new scalars (a schedule's next learning rate); in
// mixed precision, a bf16/f16 gradient and the bf16/f16 working parameter
// (the fourth result) equal too.
#include "CudaTestSupport.h"

#include <cmath>

namespace hybrid::cuda::test {
namespace {

class AdamWTest : public CudaKernelTest {};

HostTensor scalar(double v) { return tensorOf(DType::F32, {1}, {v}); }

/// Operands in Ops.h's AdamWUpdate order: param, grad, exp_avg, exp_avg_sq
/// of `n` elements, then beta1, beta2, eps and the step's scalars for step
/// `t` with learning rate `lr` and weight decay 0.01.
std::vector<HostTensor> randomUpdate(std::mt19937 &rng, int64_t n, double lr,
                                     int t) {
  const float b1 = 0.9f, b2 = 0.999f, tf = static_cast<float>(t);
  const float l = static_cast<float>(lr);
  return {randomTensor(DType::F32, {n}, rng, -1, 1),
          randomTensor(DType::F32, {n}, rng, -0.1, 0.1),
          randomTensor(DType::F32, {n}, rng, -0.05, 0.05),
          randomTensor(DType::F32, {n}, rng, 1e-3, 1e-1),
          scalar(b1),
          scalar(b2),
          scalar(1e-8),
          scalar(l / (1.0f - std::pow(b1, tf))),
          scalar(std::sqrt(1.0f - std::pow(b2, tf))),
          scalar(1.0f - l * 0.01f)};
}

std::vector<HostTensor> resultsFor(int64_t n) {
  return {HostTensor(DType::F32, {n}), HostTensor(DType::F32, {n}),
          HostTensor(DType::F32, {n})};
}

/// Results param, exp_avg and exp_avg_sq in their operands' buffers.
const std::vector<int> kInPlace = {0, 2, 3};

void expectSameUpdate(const std::vector<HostTensor> &gpu,
                      const std::vector<HostTensor> &cpu,
                      const std::string &what) {
  ASSERT_EQ(gpu.size(), 3u) << what;
  const char *names[] = {"param", "exp_avg", "exp_avg_sq"};
  for (size_t i = 0; i < 3; ++i)
    expectClose(gpu[i], cpu[i], Tolerance{}, what + " " + names[i]);
}

TEST_F(AdamWTest, EqualsTheCpuKernel) {
  for (int64_t n : {int64_t(1), int64_t(3), int64_t(4), int64_t(1027),
                    int64_t(50257 * 3), int64_t(2048 * 2048 + 5)})
    for (bool inPlace : {false, true}) {
      const std::vector<HostTensor> operands =
          randomUpdate(rng, n, 1e-3, 1 + static_cast<int>(n % 7));
      const std::vector<int> aliases = inPlace ? kInPlace : std::vector<int>{};
      const std::string what =
          "n " + std::to_string(n) + (inPlace ? " in place" : " out of place");
      expectSameUpdate(runCuda(ops::AdamWUpdate{}, operands, resultsFor(n),
                               /*inPlace=*/false, /*withContext=*/true,
                               aliases),
                       runCpu(ops::AdamWUpdate{}, operands, resultsFor(n),
                              /*inPlace=*/false, aliases),
                       what);
    }
}

/// randomUpdate() with the gradient of dtype `grad` (rounded to it).
std::vector<HostTensor> randomMixedUpdate(std::mt19937 &rng, int64_t n,
                                          DType grad, int t) {
  std::vector<HostTensor> operands = randomUpdate(rng, n, 1e-3, t);
  HostTensor g(grad, {n});
  for (int64_t k = 0; k < n; ++k)
    g.set(k, operands[1].at(k));
  operands[1] = std::move(g);
  return operands;
}

/// The results of an update with working parameter `working` (F32: none).
std::vector<HostTensor> mixedResultsFor(int64_t n, DType working) {
  std::vector<HostTensor> results = resultsFor(n);
  if (working != DType::F32)
    results.push_back(HostTensor(working, {n}));
  return results;
}

void expectSameMixedUpdate(const std::vector<HostTensor> &gpu,
                           const std::vector<HostTensor> &cpu,
                           const std::string &what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  const char *names[] = {"param", "exp_avg", "exp_avg_sq", "working param"};
  for (size_t i = 0; i < cpu.size(); ++i)
    expectClose(gpu[i], cpu[i], Tolerance{}, what + " " + names[i]);
}

TEST_F(AdamWTest, MixedPrecisionEqualsTheCpuKernel) {
  for (DType grad : {DType::F32, DType::BF16, DType::F16})
    for (DType working : {DType::F32, DType::BF16, DType::F16})
      for (int64_t n :
           {int64_t(1), int64_t(3), int64_t(4), int64_t(6), int64_t(1027),
            int64_t(50257 * 3), int64_t(1 << 20) + 7})
        for (bool inPlace : {false, true}) {
          const std::vector<HostTensor> operands =
              randomMixedUpdate(rng, n, grad, 1 + static_cast<int>(n % 5));
          const std::vector<int> aliases =
              inPlace ? kInPlace : std::vector<int>{};
          const ops::AdamWUpdate op{working != DType::F32};
          const std::string what =
              std::string("grad ") + dtypeName(grad) + ", working " +
              (working == DType::F32 ? "none" : dtypeName(working)) + ", n " +
              std::to_string(n) + (inPlace ? " in place" : " out of place");
          expectSameMixedUpdate(
              runCuda(op, operands, mixedResultsFor(n, working),
                      /*inPlace=*/false, /*withContext=*/true, aliases),
              runCpu(op, operands, mixedResultsFor(n, working),
                     /*inPlace=*/false, aliases),
              what);
        }
}

TEST_F(AdamWTest, MixedPrecisionReplaysWithNewScalars) {
  const int64_t n = 4101;
  const ops::AdamWUpdate op{true};
  std::vector<HostTensor> operands = randomMixedUpdate(rng, n, DType::BF16, 1);
  CapturedCall step(op, operands, mixedResultsFor(n, DType::BF16));
  for (int t = 1; t <= 3; ++t) {
    const std::vector<HostTensor> next = randomUpdate(rng, n, 1e-3 * t, t);
    for (size_t i = 7; i < next.size(); ++i) {
      operands[i] = next[i];
      step.setOperand(i, next[i]);
    }
    expectSameMixedUpdate(step.replay(),
                          runCpu(op, operands, mixedResultsFor(n, DType::BF16)),
                          "step " + std::to_string(t));
  }
}

TEST_F(AdamWTest, RejectsAnF32WorkingParam) {
  std::vector<HostTensor> operands = randomUpdate(rng, 8, 1e-3, 1);
  try {
    runCuda(ops::AdamWUpdate{true}, operands, mixedResultsFor(8, DType::F32));
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "adamw_update: expected 10 operand(s) and 4 "
                           "result(s), got 10 and 3");
  }
  std::vector<HostTensor> results = resultsFor(8);
  results.push_back(HostTensor(DType::F32, {8}));
  try {
    runCuda(ops::AdamWUpdate{true}, operands, results);
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "adamw_update: working param result must be bf16 "
                           "or f16, got f32");
  }
}

TEST_F(AdamWTest, ReplaysWithNewScalars) {
  const int64_t n = 4099;
  std::vector<HostTensor> operands = randomUpdate(rng, n, 1e-3, 1);
  CapturedCall step(ops::AdamWUpdate{}, operands, resultsFor(n));
  for (int t = 1; t <= 3; ++t) {
    // A warmup schedule: the learning rate, and with it the step size and
    // decay factor, change between replays of one graph.
    const std::vector<HostTensor> next = randomUpdate(rng, n, 1e-3 * t, t);
    for (size_t i = 7; i < next.size(); ++i) {
      operands[i] = next[i];
      step.setOperand(i, next[i]);
    }
    expectSameUpdate(step.replay(),
                     runCpu(ops::AdamWUpdate{}, operands, resultsFor(n)),
                     "step " + std::to_string(t));
  }
}

TEST_F(AdamWTest, RejectsAScalarOfTwoElements) {
  std::vector<HostTensor> operands = randomUpdate(rng, 8, 1e-3, 1);
  operands[6] = tensorOf(DType::F32, {2}, {1e-8, 1e-8});
  try {
    runCuda(ops::AdamWUpdate{}, operands, resultsFor(8));
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "adamw_update: eps [2] must hold one element");
  }
}

} // namespace
} // namespace hybrid::cuda::test
