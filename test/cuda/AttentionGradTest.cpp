// The CUDA attention_grad (attention's backward through cuBLASLt products
// and two row kernels) against the CPU oracle: odd sizes, causal limits
// with T = S and T < S, sliding windows, left padding with rows and a
// whole batch row that see no key, additive masks of several broadcast
// shapes holding -inf (a row of only -inf too), ALiBi slopes (alone, with
// a mask, with padding; on both paths), grouped KV heads (2 and 4 query
// heads per KV head), several chunks of heads, f32, bf16 and f16.
// Tolerances are relative to each gradient's largest magnitude: f32 1e-4
// (the GEMMs run without TF32); bf16 3e-2 and f16 1e-2, since the GPU rounds
// the scores, probabilities, dp and ds matrices to the storage type where
// the CPU keeps them in f32.
#include "CudaTestSupport.h"

#include <cstdio>
#include <cstdlib>

#include <cmath>
#include <limits>

namespace hybrid::cuda::test {
namespace {

class AttentionGradTest : public CudaKernelTest {};

struct GradCase {
  const char *name;
  int64_t B, Hq, Hkv, T, S, Dh, Dv;
  bool causal = false;
  int64_t window = 0;
  Shape mask = {}; ///< empty: none
  /// Leading padding keys per batch row (key_mask); empty: none.
  std::vector<int64_t> padding = {};
  DType keyMaskType = DType::I64;
  bool alibi = false; ///< one slope per query head
};

const std::vector<GradCase> kCases = {
    {"plain odd", 2, 3, 3, 7, 11, 5, 6},
    {"causal", 2, 4, 4, 67, 67, 64, 64, true},
    {"causal T < S", 1, 2, 1, 5, 33, 24, 24, true},
    {"sliding window", 1, 4, 2, 130, 130, 64, 64, true, 37},
    {"left padding", 3, 2, 2, 40, 40, 32, 32, true, 0, {}, {0, 7, 40}},
    {"left padding i32",
     2,
     2,
     1,
     19,
     19,
     16,
     16,
     false,
     0,
     {},
     {3, 19},
     DType::I32},
    {"mask [B,1,T,S]", 2, 2, 2, 24, 29, 40, 40, false, 0, {2, 1, 24, 29}},
    {"mask [T,S] causal", 1, 2, 2, 33, 33, 64, 64, true, 0, {33, 33}},
    {"mask [B,1,1,S] padded",
     2,
     4,
     4,
     17,
     17,
     8,
     8,
     true,
     0,
     {2, 1, 1, 17},
     {5, 0}},
    {"gqa 2", 2, 8, 4, 45, 45, 64, 64, true},
    {"gqa 4 window padded", 2, 8, 2, 50, 50, 32, 32, true, 9, {}, {11, 0}},
    {"model head", 1, 4, 4, 128, 128, 128, 128, true},
    {"alibi odd", 1, 3, 3, 9, 13, 5, 5, true, 0, {}, {}, DType::I64, true},
    {"alibi causal",
     2,
     4,
     4,
     67,
     67,
     64,
     64,
     true,
     0,
     {},
     {},
     DType::I64,
     true},
    {"alibi T < S gqa mask padded",
     2,
     8,
     4,
     40,
     50,
     64,
     64,
     true,
     0,
     {2, 1, 40, 50},
     {6, 0},
     DType::I64,
     true},
};

/// Random inputs (never zeros); the mask holds -inf at every fifth entry
/// and in its whole first row (when it has rows), a row that sees no key.
std::vector<HostTensor> operandsOf(const GradCase &c, DType dt,
                                   std::mt19937 &rng) {
  std::vector<HostTensor> in = {
      randomTensor(dt, {c.B, c.Hq, c.T, c.Dh}, rng, -1, 1),
      randomTensor(dt, {c.B, c.Hkv, c.S, c.Dh}, rng, -1, 1),
      randomTensor(dt, {c.B, c.Hkv, c.S, c.Dv}, rng, -1, 1),
      randomTensor(dt, {c.B, c.Hq, c.T, c.Dv}, rng, -1, 1),
      HostTensor::absent(),
      HostTensor::absent(),
      HostTensor::absent()};
  const double inf = std::numeric_limits<double>::infinity();
  if (!c.mask.empty()) {
    HostTensor mask = randomTensor(dt, c.mask, rng, -2, 2);
    for (int64_t e = 0; e < mask.numel(); e += 5)
      mask.set(e, -inf);
    if (c.mask.size() >= 2 && c.mask[c.mask.size() - 2] > 1)
      for (int64_t j = 0; j < c.mask.back(); ++j)
        mask.set(j, -inf);
    in[4] = mask;
  }
  if (c.alibi)
    in[5] = randomTensor(dt, {c.Hq}, rng, 0.05, 0.8);
  if (!c.padding.empty()) {
    HostTensor keyMask(c.keyMaskType, {c.B, c.S});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.S; ++j)
        keyMask.set(b * c.S + j, j < c.padding[b] ? 0 : 1);
    in[6] = keyMask;
  }
  return in;
}

Tolerance toleranceOf(DType dt) {
  switch (dt) {
  case DType::F32:
    return {1e-4, 1e-4, true};
  case DType::BF16:
    return {3e-2, 3e-2, true};
  default:
    return {1e-2, 1e-2, true};
  }
}

void expectGradMatchesCpu(const GradCase &c, DType dt, std::mt19937 &rng) {
  const std::vector<HostTensor> in = operandsOf(c, dt, rng);
  const ops::AttentionGrad op{1.0 / std::sqrt(static_cast<double>(c.Dh)),
                              c.causal, c.window};
  const Tolerance tol = toleranceOf(dt);
  expectMatchesCpu(
      op, in,
      {HostTensor(dt, in[0].shape), HostTensor(dt, in[1].shape),
       HostTensor(dt, in[2].shape)},
      std::string("attention_grad ") + c.name + " " + dtypeName(dt), &tol);
}

TEST_F(AttentionGradTest, MatchesCpu) {
  for (const GradCase &c : kCases)
    for (DType dt : kFloatTypes)
      expectGradMatchesCpu(c, dt, rng);
}

TEST_F(AttentionGradTest, SeveralChunks) {
  // One pair's [2 x 4096, 4096] f32 probabilities take 128 MB, the chunk
  // cap's half: two pairs run as two chunks.
  expectGradMatchesCpu({"two chunks", 1, 4, 2, 4096, 4096, 16, 16, true},
                       DType::F32, rng);
}

TEST_F(AttentionGradTest, CapturedCallReplays) {
  // No host synchronisation, copy or allocation: the call captures into a
  // graph (as a training step on the GPU does) and replays with new inputs.
  const GradCase c{"captured", 2, 4, 2, 33, 33, 64, 64, true};
  std::vector<HostTensor> in = operandsOf(c, DType::BF16, rng);
  const ops::AttentionGrad op{0.125, true, 0};
  const std::vector<HostTensor> results = {
      HostTensor(DType::BF16, in[0].shape),
      HostTensor(DType::BF16, in[1].shape),
      HostTensor(DType::BF16, in[2].shape)};
  // The first call plans and tunes the GEMMs outside the capture.
  (void)runCuda(op, in, results);
  CapturedCall captured(op, in, results);
  for (int replay = 0; replay < 2; ++replay) {
    in[3] = randomTensor(DType::BF16, in[3].shape, rng, -1, 1);
    captured.setOperand(3, in[3]);
    const std::vector<HostTensor> gpu = captured.replay();
    const std::vector<HostTensor> cpu = runCpu(op, in, results);
    for (size_t r = 0; r < 3; ++r)
      expectClose(gpu[r], cpu[r], toleranceOf(DType::BF16),
                  "replay " + std::to_string(replay));
  }
}

TEST_F(AttentionGradTest, AtTheTrainingShape) {
  // OPT-1.3B's layer in bench/train.py (8 x 512 tokens, 32 heads of 64,
  // causal, key padding) against the CPU kernel, captured as a training
  // step captures it; with HYBRID_KERNEL_BENCH=1 also timed.
  const GradCase c{
      "training shape",         8, 32, 32, 512, 512, 64, 64, true, 0, {},
      {0, 3, 0, 0, 17, 0, 0, 1}};
  const std::vector<HostTensor> in = operandsOf(c, DType::BF16, rng);
  const ops::AttentionGrad op{0.125, true, 0};
  const std::vector<HostTensor> results = {
      HostTensor(DType::BF16, in[0].shape),
      HostTensor(DType::BF16, in[1].shape),
      HostTensor(DType::BF16, in[2].shape)};
  (void)runCuda(op, in, results); // plans (and tunes) outside the capture
  CapturedCall captured(op, in, results);
  const std::vector<HostTensor> gpu = captured.replay();
  const std::vector<HostTensor> cpu = runCpu(op, in, results);
  for (size_t r = 0; r < 3; ++r)
    expectClose(gpu[r], cpu[r], toleranceOf(DType::BF16),
                "training shape, gradient " + std::to_string(r));
  const char *bench = std::getenv("HYBRID_KERNEL_BENCH");
  if (bench && std::string(bench) == "1")
    std::printf("[ bench    ] attention_grad [8,32,512,64] causal bf16: "
                "%.1f us per call\n",
                captured.replayMicroseconds(20));
}

// Needs no device. The runtime sizes scratch from shapes before any buffer
// exists: OPT-1.3B's layer at 8 x 512 tokens in bf16 runs on tensor cores
// and keeps two f32 statistics per query row (8 x 32 x 512 x 4 bytes each);
// in f32 it takes one chunk of its 256 (batch row, head) pairs, 32 MB of
// GEMM workspace and two [128, 512, 512] f32 matrices (two chunks).
TEST(AttentionGradScratch, FromShapesAlone) {
  const Op op = ops::AttentionGrad{0.125, true, 0};
  CudaCall call;
  call.op = &op;
  const Shape heads = {8, 32, 512, 64};
  for (int i = 0; i < 4; ++i)
    call.operands.emplace_back(nullptr, DType::BF16, heads);
  call.operands.push_back(ConstTensor::absent());
  call.operands.push_back(ConstTensor::absent());
  call.operands.emplace_back(nullptr, DType::I64, Shape{8, 512});
  for (int i = 0; i < 3; ++i)
    call.results.push_back(Tensor{nullptr, DType::BF16, heads});
  const KernelEntry entry = findKernel(op);
  ASSERT_NE(entry.scratch, nullptr);
  EXPECT_EQ(entry.scratch(call), 2 * (size_t(512) << 10));
  for (int i = 0; i < 4; ++i)
    call.operands[i].dtype = DType::F32;
  for (int i = 0; i < 3; ++i)
    call.results[i].dtype = DType::F32;
  EXPECT_EQ(entry.scratch(call), (size_t(32) << 20) + 2 * (size_t(128) << 20));
}

TEST_F(AttentionGradTest, RejectsInconsistentCalls) {
  const std::vector<HostTensor> in = {
      randomTensor(DType::F32, {1, 4, 3, 8}, rng),
      randomTensor(DType::F32, {1, 3, 5, 8}, rng),
      randomTensor(DType::F32, {1, 3, 5, 8}, rng),
      randomTensor(DType::F32, {1, 4, 3, 8}, rng),
      HostTensor::absent(),
      HostTensor::absent(),
      HostTensor::absent()};
  try {
    (void)runCuda(ops::AttentionGrad{}, in,
                  {HostTensor(DType::F32, in[0].shape),
                   HostTensor(DType::F32, in[1].shape),
                   HostTensor(DType::F32, in[2].shape)});
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "attention_grad: 4 query heads are not a multiple of 3 KV heads");
  }
}

} // namespace
} // namespace hybrid::cuda::test
