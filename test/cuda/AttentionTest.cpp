// The CUDA attention and rotary kernels against the CPU oracle: prompts
// (the flash path) and decode steps with long key sequences (the split-K
// path), causal, sliding-window, GQA, ALiBi, broadcast additive masks,
// T > S, unusual head sizes, fully masked rows; rotary half-split and
// interleaved, partial rotary_dim, per-batch cos/sin.
#include "CudaTestSupport.h"

#include <cmath>
#include <limits>

namespace hybrid::cuda::test {
namespace {

class AttentionTest : public CudaKernelTest {};

struct AttnCase {
  const char *name;
  int64_t B, Hq, Hkv, T, S, Dh, Dv;
  bool causal = false;
  int64_t window = 0;
  Shape mask; ///< empty: none
  bool alibi = false;
};

const std::vector<AttnCase> kAttnCases = {
    {"prefill causal", 2, 4, 4, 100, 100, 64, 64, true},
    {"prefill plain odd", 1, 3, 3, 17, 33, 64, 64},
    {"prefill gqa", 2, 8, 2, 67, 67, 128, 128, true},
    {"prefill sliding", 1, 4, 2, 130, 130, 64, 64, true, 37},
    {"prefill alibi mask",
     2,
     4,
     4,
     40,
     40,
     64,
     64,
     true,
     0,
     {2, 1, 40, 40},
     true},
    {"prefill head mask", 1, 2, 1, 20, 50, 32, 32, false, 0, {1, 2, 1, 50}},
    {"prefill odd heads", 1, 2, 2, 33, 41, 80, 48, true},
    {"prefill 256", 1, 2, 1, 40, 40, 256, 256, true},
    {"prefill 2d mask", 2, 2, 2, 24, 24, 64, 64, false, 0, {24, 24}},
    {"prefill T > S", 1, 2, 2, 50, 20, 64, 64, true},
    {"prefill chunk", 1, 4, 4, 16, 300, 64, 64, true},
    {"decode long", 1, 4, 4, 1, 4000, 64, 64, true},
    {"decode gqa", 2, 8, 2, 1, 1000, 128, 128, true},
    {"decode batch", 32, 4, 4, 1, 129, 64, 64, true},
    {"decode sliding", 1, 2, 1, 1, 3000, 64, 64, true, 500},
    {"decode alibi mask",
     2,
     4,
     4,
     1,
     777,
     64,
     64,
     false,
     0,
     {2, 1, 1, 777},
     true},
    {"decode few rows", 1, 4, 2, 5, 600, 64, 64, true},
    {"decode big head", 1, 2, 2, 1, 300, 320, 512, true},
    {"decode tiny", 1, 1, 1, 1, 1, 8, 8, true},
    {"empty keys", 1, 2, 2, 3, 0, 16, 16}};

TEST_F(AttentionTest, MatchesTheCpuKernel) {
  for (DType dt : kFloatTypes)
    for (const AttnCase &c : kAttnCases) {
      const HostTensor q = randomTensor(dt, {c.B, c.Hq, c.T, c.Dh}, rng, -1, 1);
      const HostTensor k =
          randomTensor(dt, {c.B, c.Hkv, c.S, c.Dh}, rng, -1, 1);
      const HostTensor v =
          randomTensor(dt, {c.B, c.Hkv, c.S, c.Dv}, rng, -1, 1);
      const HostTensor mask = c.mask.empty()
                                  ? HostTensor::absent()
                                  : randomTensor(dt, c.mask, rng, -2, 2);
      HostTensor slopes = HostTensor::absent();
      if (c.alibi) {
        slopes = HostTensor(dt, {c.Hq});
        for (int64_t h = 0; h < c.Hq; ++h)
          slopes.set(h, std::pow(2.0, -8.0 * (h + 1) / c.Hq));
      }
      ops::Attention attrs;
      attrs.scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
      attrs.causal = c.causal;
      attrs.slidingWindow = c.window;
      const Tolerance tol = sumTolerance(dt);
      expectMatchesCpu(attrs, {q, k, v, mask, slopes},
                       {HostTensor(dt, {c.B, c.Hq, c.T, c.Dv})},
                       std::string("attention ") + c.name + " " + dtypeName(dt),
                       &tol);
    }
}

TEST_F(AttentionTest, FullyMaskedRowsGiveZeros) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t T : {1, 20}) {
    const int64_t S = 30;
    HostTensor mask = randomTensor(DType::F32, {1, 1, T, S}, rng, -1, 1);
    for (int64_t j = 0; j < S; ++j)
      mask.set(j, -inf); // row 0 sees nothing
    ops::Attention attrs;
    attrs.scale = 0.125;
    const Tolerance tol = sumTolerance(DType::F32);
    expectMatchesCpu(attrs,
                     {randomTensor(DType::F32, {1, 2, T, 64}, rng),
                      randomTensor(DType::F32, {1, 2, S, 64}, rng),
                      randomTensor(DType::F32, {1, 2, S, 64}, rng), mask,
                      HostTensor::absent()},
                     {HostTensor(DType::F32, {1, 2, T, 64})},
                     "attention masked row T " + std::to_string(T), &tol);
  }
}

TEST_F(AttentionTest, RotaryConventions) {
  struct Case {
    Shape in;
    Shape cs;
    bool interleaved;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5, 64}, {1, 5, 64}, false}, {{2, 3, 5, 64}, {1, 5, 64}, true},
      {{2, 3, 7, 80}, {2, 7, 32}, false}, {{2, 3, 7, 80}, {2, 1, 7, 32}, true},
      {{1, 1, 1, 2}, {1, 2}, false},      {{1, 4, 17, 128}, {17, 128}, false}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      expectMatchesCpu(ops::Rotary{c.interleaved},
                       {randomTensor(dt, c.in, rng, -2, 2),
                        randomTensor(dt, c.cs, rng, -1, 1),
                        randomTensor(dt, c.cs, rng, -1, 1)},
                       {HostTensor(dt, c.in)},
                       std::string("rotary ") + dtypeName(dt) + " " +
                           shapeToString(c.in) +
                           (c.interleaved ? " interleaved" : ""));
}

} // namespace
} // namespace hybrid::cuda::test
