// The CUDA attention and rotary kernels against the CPU oracle: prompts
// (the flash paths: tensor cores for bf16 / f16 heads of 64 and 128, f32
// arithmetic otherwise) and decode steps with long key sequences (the split-K
// path) and at model sizes, causal, sliding-window, GQA, ALiBi, broadcast
// additive masks, T > S, unusual head sizes, fully masked rows; KV-cache
// attention with key_length read from device memory (NaN in the unfilled
// slots, a captured decode step replayed at growing lengths, bad lengths
// give NaN) and key_mask padding; decode steps on both decode kernels (the
// grouped one: groups of 1 to 32 query heads per KV head, T = 1 to 8 rows,
// row tiles, splits finished by counters or the combine kernel; the
// per-row one the context can force), appending the step's keys and values
// to the cache; rotary half-split and interleaved,
// partial rotary_dim, per-batch cos/sin.
#include "CudaTestSupport.h"

#include "cuda/Context.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace hybrid::cuda::test {
namespace {

class AttentionTest : public CudaKernelTest {};

/// The decode kernels: on tensor cores where they apply (bf16 / f16 heads
/// of 64 and 128, up to 16 rows per KV head; else the grouped one), the
/// CUDA-core grouped one, the per-row one.
enum class DecodeKernel { TensorCores, Grouped, PerRow };
const DecodeKernel kDecodeKernels[] = {
    DecodeKernel::TensorCores, DecodeKernel::Grouped, DecodeKernel::PerRow};
const char *kernelName(DecodeKernel k) {
  return k == DecodeKernel::PerRow    ? " (per-row)"
         : k == DecodeKernel::Grouped ? " (grouped)"
                                      : "";
}

/// Runs the test context's decode steps on one kernel while it lives (as
/// HYBRID_CUDA_DECODE_ATTN=old / grouped do for every context).
class DecodeKernelChoice {
public:
  explicit DecodeKernelChoice(DecodeKernel k) {
    testContext()->oldDecodeAttention = k == DecodeKernel::PerRow;
    testContext()->coreDecodeAttention = k == DecodeKernel::Grouped;
  }
  ~DecodeKernelChoice() {
    testContext()->oldDecodeAttention = false;
    testContext()->coreDecodeAttention = false;
  }
  DecodeKernelChoice(const DecodeKernelChoice &) = delete;
  DecodeKernelChoice &operator=(const DecodeKernelChoice &) = delete;
};

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
    {"prefill long gqa", 2, 8, 2, 300, 300, 64, 64, true},
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
    {"decode odd head", 2, 4, 2, 3, 300, 36, 20, true},
    {"empty keys", 1, 2, 2, 3, 0, 16, 16}};

TEST_F(AttentionTest, MatchesTheCpuKernel) {
  for (DecodeKernel decode : kDecodeKernels)
    for (DType dt : kFloatTypes)
      for (const AttnCase &c : kAttnCases) {
        // (Prompts take the flash kernel whatever the decode kernel.)
        if (decode == DecodeKernel::PerRow && c.T > 8 &&
            std::max(c.Dh, c.Dv) <= 256)
          continue;
        const DecodeKernelChoice kernel(decode);
        const HostTensor q =
            randomTensor(dt, {c.B, c.Hq, c.T, c.Dh}, rng, -1, 1);
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
        expectMatchesCpu(
            attrs,
            {q, k, v, mask, slopes, HostTensor::absent(), HostTensor::absent()},
            {HostTensor(dt, {c.B, c.Hq, c.T, c.Dv})},
            std::string("attention ") + c.name + " " + dtypeName(dt) +
                kernelName(decode),
            &tol);
      }
}

TEST_F(AttentionTest, FullyMaskedRowsGiveZeros) {
  const double inf = std::numeric_limits<double>::infinity();
  for (int64_t T : {1, 5, 20})
    for (int64_t Hkv : {1, 2}) { // groups of 2 and 1 query heads
      const int64_t S = 30;
      HostTensor mask = randomTensor(DType::F32, {1, 1, T, S}, rng, -1, 1);
      for (int64_t j = 0; j < S; ++j)
        mask.set(j, -inf); // row 0 sees nothing
      ops::Attention attrs;
      attrs.scale = 0.125;
      const Tolerance tol = sumTolerance(DType::F32);
      expectMatchesCpu(attrs,
                       {randomTensor(DType::F32, {1, 2, T, 64}, rng),
                        randomTensor(DType::F32, {1, Hkv, S, 64}, rng),
                        randomTensor(DType::F32, {1, Hkv, S, 64}, rng), mask,
                        HostTensor::absent(), HostTensor::absent(),
                        HostTensor::absent()},
                       {HostTensor(DType::F32, {1, 2, T, 64})},
                       "attention masked row T " + std::to_string(T) +
                           " KV heads " + std::to_string(Hkv),
                       &tol);
    }
}

/// A KV-cache attention case: `length` keys of an S-slot cache exist (-1:
/// no key_length operand), key_mask pads the first keys of each batch row
/// when `padded`.
struct CacheCase {
  const char *name;
  int64_t B, Hq, Hkv, T, S, Dh, Dv;
  bool causal;
  int64_t window, length;
  bool padded;
  Shape mask = {}; ///< additive mask; empty: none
  bool alibi = false;
};

const std::vector<CacheCase> kCacheCases = {
    {"decode empty cache", 2, 4, 2, 1, 300, 64, 64, true, 0, 0, false},
    {"decode first key", 2, 4, 2, 1, 300, 64, 64, true, 0, 1, false},
    {"decode short", 2, 4, 2, 1, 300, 64, 64, true, 0, 37, true},
    {"decode full cache", 2, 4, 4, 1, 300, 64, 64, true, 0, 300, true},
    {"decode split", 1, 2, 1, 1, 2000, 64, 64, true, 0, 1500, true},
    {"decode split plain",
     1,
     2,
     1,
     1,
     2000,
     64,
     64,
     false,
     0,
     777,
     true,
     {1, 1, 1, 2000},
     true},
    {"decode split sliding", 1, 2, 2, 1, 3000, 64, 64, true, 300, 2500, false},
    {"decode batch gqa", 16, 32, 8, 1, 512, 128, 128, true, 0, 200, true},
    {"decode no length", 2, 4, 2, 1, 500, 64, 64, true, 0, -1, true},
    {"decode few rows", 1, 4, 2, 5, 600, 64, 64, true, 0, 450, true},
    {"decode big head", 1, 2, 2, 1, 300, 320, 512, true, 0, 200, true},
    {"decode odd head", 2, 4, 2, 1, 300, 36, 20, true, 0, 150, true},
    {"prefill into cache", 2, 2, 1, 20, 64, 64, 64, true, 0, 40, true},
    {"prefill plain",
     1,
     4,
     2,
     33,
     100,
     64,
     64,
     false,
     0,
     90,
     true,
     {1, 1, 33, 100},
     true},
    {"prefill padded", 2, 2, 2, 40, 40, 64, 64, true, 0, -1, true},
    {"prefill fewer keys than rows", 1, 2, 1, 50, 128, 128, 128, true, 0, 30,
     false},
    {"prefill sliding", 1, 2, 1, 64, 200, 64, 64, true, 17, 150, true},
};

/// Decode steps for the grouped kernel: groups of 1, 2, 4, 8 and 32 query
/// heads per KV head, T = 1 to 8 rows (G * T rows per block, in tiles of 8
/// with a partial last tile), split and unsplit rows, per-row masks and
/// ALiBi slopes (each row of a block its own head and position), odd but
/// aligned head sizes (f32 36/20 also runs here, bf16/f16 36/20 on the
/// per-row kernel: rows not whole 16-byte words), Dh != Dv, 256-dim heads
/// (one warp per block).
const std::vector<CacheCase> kGroupedCases = {
    {"group 1", 2, 4, 4, 1, 300, 64, 64, true, 0, 250, true},
    {"group 2", 2, 8, 4, 1, 300, 64, 64, true, 0, 300, true},
    {"group 4 split", 1, 8, 2, 1, 2000, 64, 64, true, 0, 1700, true},
    {"group 8 mask alibi",
     1,
     8,
     1,
     1,
     1000,
     128,
     128,
     false,
     0,
     900,
     false,
     {1, 8, 1, 1000},
     true},
    {"group 32 tiles", 2, 32, 1, 1, 400, 64, 64, true, 0, 380, true},
    {"group 4 T 2", 2, 8, 2, 2, 400, 64, 64, true, 0, 333, true},
    {"group 4 T 3", 2, 8, 2, 3, 400, 64, 64, true, 0, 333, true},
    {"group 4 T 4", 1, 8, 2, 4, 2000, 64, 64, true, 0, 1999, true},
    {"group 4 T 5", 2, 8, 2, 5, 400, 64, 64, true, 0, 5, true},
    {"group 4 T 6", 2, 8, 2, 6, 400, 64, 64, true, 0, 333, true},
    {"group 4 T 7", 1, 8, 2, 7, 400, 64, 64, true, 40, 333, true},
    {"group 4 T 8", 2, 8, 2, 8, 400, 64, 64, true, 0, 400, true},
    {"group 1 T 8", 1, 2, 2, 8, 1000, 64, 64, true, 0, 700, false},
    {"group 2 T 4 sliding", 1, 4, 2, 4, 1500, 64, 64, true, 100, 1200, true},
    {"group 3 T 3 mask alibi",
     2,
     6,
     2,
     3,
     300,
     64,
     64,
     false,
     0,
     290,
     true,
     {2, 6, 3, 300},
     true},
    {"group 2 T 8 causal mask",
     1,
     4,
     2,
     8,
     600,
     64,
     64,
     true,
     0,
     -1,
     false,
     {1, 1, 8, 600},
     true},
    {"group 2 T 2 fewer keys than rows", 1, 4, 2, 2, 64, 64, 64, true, 0, 1,
     true},
    {"group 4 empty cache", 2, 8, 2, 1, 300, 64, 64, true, 0, 0, false},
    {"group 2 head 32/96", 2, 4, 2, 2, 200, 32, 96, true, 0, 150, true},
    {"group 2 head 256", 1, 4, 2, 1, 700, 256, 256, true, 0, 600, true},
    {"group 2 head 96/256 T 3", 1, 4, 2, 3, 300, 96, 256, true, 0, 260, true},
    {"group 2 odd head", 2, 4, 2, 1, 300, 36, 20, true, 0, 150, true},
};

/// Runs a KV-cache case on the GPU (the test context's decode kernel, or
/// without a context: 48 KB of shared memory, the combine kernel) and on
/// the CPU and compares them.
void checkCacheCase(const CacheCase &c, DType dt, std::mt19937 &rng,
                    bool withContext, const std::string &suffix) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int64_t n = c.length >= 0 ? c.length : c.S;
  const HostTensor q = randomTensor(dt, {c.B, c.Hq, c.T, c.Dh}, rng, -1, 1);
  HostTensor k = randomTensor(dt, {c.B, c.Hkv, c.S, c.Dh}, rng, -1, 1);
  HostTensor v = randomTensor(dt, {c.B, c.Hkv, c.S, c.Dv}, rng, -1, 1);
  // Row b's first (3 + 7b) % (n + 1) keys are padding, row 0 also key 2.
  HostTensor keyMask = HostTensor::absent();
  if (c.padded) {
    keyMask = HostTensor(c.B % 2 ? DType::I32 : DType::I64, {c.B, c.S});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.S; ++j)
        keyMask.set(b * c.S + j,
                    j >= (3 + 7 * b) % (n + 1) && !(b == 0 && j == 2 && n > 4));
  }
  // Unfilled slots hold NaN: neither kernel may read them. Padding keys
  // too where the CPU takes its row path (decode steps), which never reads
  // them either (its GEMM path multiplies them by 0).
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = 0; j < c.S; ++j) {
      const bool padding = c.padded && c.T == 1 && keyMask.at(b * c.S + j) == 0;
      if (j < n && !padding)
        continue;
      for (int64_t hk = 0; hk < c.Hkv; ++hk) {
        for (int64_t d = 0; d < c.Dh; ++d)
          k.set(((b * c.Hkv + hk) * c.S + j) * c.Dh + d, nan);
        for (int64_t d = 0; d < c.Dv; ++d)
          v.set(((b * c.Hkv + hk) * c.S + j) * c.Dv + d, nan);
      }
    }
  const HostTensor mask = c.mask.empty() ? HostTensor::absent()
                                         : randomTensor(dt, c.mask, rng, -2, 2);
  HostTensor slopes = HostTensor::absent();
  if (c.alibi) {
    slopes = HostTensor(dt, {c.Hq});
    for (int64_t h = 0; h < c.Hq; ++h)
      slopes.set(h, std::pow(2.0, -8.0 * (h + 1) / c.Hq));
  }
  const HostTensor length = c.length >= 0
                                ? tensorOf(DType::I64, {1}, {double(c.length)})
                                : HostTensor::absent();
  ops::Attention attrs;
  attrs.scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
  attrs.causal = c.causal;
  attrs.slidingWindow = c.window;
  const std::vector<HostTensor> operands = {q,      k,      v,      mask,
                                            slopes, length, keyMask};
  const std::vector<HostTensor> results = {
      HostTensor(dt, {c.B, c.Hq, c.T, c.Dv})};
  const std::string what =
      std::string("attention ") + c.name + " " + dtypeName(dt) + suffix;
  const Tolerance tol = sumTolerance(dt);
  if (withContext) {
    expectMatchesCpu(attrs, operands, results, what, &tol);
    return;
  }
  // A call without a context assumes 48 KB of shared memory: one warp's
  // staging of 256-wide f32 value rows (32 KB) with its keys does not fit
  // the per-row kernel, which says so (the backend always passes a context,
  // whose opt-in limit fits them).
  std::vector<HostTensor> got;
  try {
    got = runCuda(attrs, operands, results, false, false);
  } catch (const Error &e) {
    const bool declined =
        std::string(e.what()).find("do not fit the decode kernel's shared "
                                   "memory") != std::string::npos;
    EXPECT_TRUE(declined && dt == DType::F32 && c.Dv >= 256)
        << what << " without a context: " << e.what();
    return;
  }
  expectClose(got[0], runCpu(attrs, operands, results)[0], tol,
              what + " without a context");
}

TEST_F(AttentionTest, KeyLengthAndKeyMaskMatchTheCpuKernel) {
  for (DecodeKernel decode : kDecodeKernels) {
    const DecodeKernelChoice kernel(decode);
    for (DType dt : kFloatTypes)
      for (const CacheCase &c : kCacheCases) {
        if (decode == DecodeKernel::PerRow &&
            c.T > 8) // the flash kernel either way
          continue;
        checkCacheCase(c, dt, rng, true, kernelName(decode));
      }
  }
}

TEST_F(AttentionTest, GroupedDecodeMatchesTheCpuKernel) {
  for (DecodeKernel decode : kDecodeKernels) {
    const DecodeKernelChoice kernel(decode);
    for (DType dt : kFloatTypes)
      for (const CacheCase &c : kGroupedCases)
        checkCacheCase(c, dt, rng, true, kernelName(decode));
  }
  // Without a context: fewer warps (48 KB of shared memory) and split rows
  // finished by the combine kernel instead of the counters.
  for (DType dt : kFloatTypes)
    for (const CacheCase &c : kGroupedCases)
      checkCacheCase(c, dt, rng, false, "");
}

TEST_F(AttentionTest, DecodeAtModelSizes) {
  // Decode steps as a model runs them: 32 query heads against a 512-slot
  // cache holding 129 to 300 keys (OPT-1.3B's 64-dim heads; Llama-1B's
  // 64-dim heads and Llama's 128-dim heads in groups of 4), batch 1 (split
  // keys) and 32 (unsplit), 16 heads at batch 1 against 4000 slots (many
  // splits), the unfilled slots NaN and, at batch > 1, left padding hidden
  // by key_mask (NaN too): each staged chunk copies only the rows that
  // exist. Both decode kernels; the grouped one also without a context.
  struct Case {
    int64_t B, Hq, Hkv, D, S;
    bool padded;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DecodeKernel decode : kDecodeKernels)
    for (DType dt : {DType::BF16, DType::F32})
      for (const Case &c :
           {Case{1, 32, 32, 64, 512, false}, Case{32, 32, 32, 64, 512, true},
            Case{32, 32, 8, 64, 512, true}, Case{4, 32, 8, 128, 512, true},
            Case{1, 16, 16, 64, 4000, false}})
        for (int64_t n : c.S == 512 ? std::vector<int64_t>{129, 200, 300}
                                    : std::vector<int64_t>{1, 1500, 4000}) {
          const DecodeKernelChoice kernel(decode);
          const int64_t S = c.S;
          const HostTensor q =
              randomTensor(dt, {c.B, c.Hq, 1, c.D}, rng, -1, 1);
          HostTensor k = randomTensor(dt, {c.B, c.Hkv, S, c.D}, rng, -1, 1);
          HostTensor v = randomTensor(dt, {c.B, c.Hkv, S, c.D}, rng, -1, 1);
          HostTensor keyMask = HostTensor::absent();
          if (c.padded) {
            keyMask = HostTensor(DType::I64, {c.B, S});
            for (int64_t b = 0; b < c.B; ++b)
              for (int64_t j = 0; j < S; ++j)
                keyMask.set(b * S + j, j >= (5 * b) % 90);
          }
          for (int64_t b = 0; b < c.B; ++b)
            for (int64_t j = 0; j < S; ++j) {
              if (j < n && (!c.padded || keyMask.at(b * S + j) != 0))
                continue;
              for (int64_t hk = 0; hk < c.Hkv; ++hk)
                for (int64_t d = 0; d < c.D; ++d) {
                  k.set(((b * c.Hkv + hk) * S + j) * c.D + d, nan);
                  v.set(((b * c.Hkv + hk) * S + j) * c.D + d, nan);
                }
            }
          ops::Attention attrs;
          attrs.scale = 1.0 / std::sqrt(static_cast<double>(c.D));
          attrs.causal = true;
          const Tolerance tol = sumTolerance(dt);
          const std::vector<HostTensor> operands = {
              q,
              k,
              v,
              HostTensor::absent(),
              HostTensor::absent(),
              tensorOf(DType::I64, {1}, {double(n)}),
              keyMask};
          const std::vector<HostTensor> results = {
              HostTensor(dt, {c.B, c.Hq, 1, c.D})};
          const std::string what =
              std::string("attention decode ") + dtypeName(dt) + " B " +
              std::to_string(c.B) + " heads " + std::to_string(c.Hq) + "/" +
              std::to_string(c.Hkv) + " dims " + std::to_string(c.D) +
              " keys " + std::to_string(n) + (c.padded ? " padded" : "") +
              kernelName(decode);
          expectMatchesCpu(attrs, operands, results, what, &tol);
          // Without a context: fewer warps (48 KB of shared memory), the
          // combine kernel for split rows.
          if (decode != DecodeKernel::PerRow)
            expectClose(runCuda(attrs, operands, results, false, false)[0],
                        runCpu(attrs, operands, results)[0], tol,
                        what + " without a context");
        }
}

TEST_F(AttentionTest, DecodeAtThePpoShape) {
  // A decode step of the PPO-shaped generation (bench/ppo.py: 32 prompts of
  // 256, 256 new tokens, so a 512-slot cache at 384 keys on average; OPT's
  // 32 heads of 64, Llama-1B's 32 query heads on 8 KV heads) and of batch 1,
  // captured as the decode graph captures it, against the CPU kernel. With
  // HYBRID_KERNEL_BENCH=1 it also prints each case's time per call and the
  // rate at which it reads the keys and values (what the step is bound by;
  // an H200 copies at ~3.4-4 TB/s).
  struct Case {
    const char *name;
    int64_t B, Hq, Hkv, D, S, n;
  };
  const char *bench = std::getenv("HYBRID_KERNEL_BENCH");
  const bool timed = bench && std::string(bench) == "1";
  for (const Case &c : {Case{"opt-1.3b ppo", 32, 32, 32, 64, 512, 384},
                        Case{"llama-1b ppo", 32, 32, 8, 64, 512, 384},
                        Case{"opt-1.3b b1", 1, 32, 32, 64, 256, 200}}) {
    const DType dt = DType::BF16;
    const HostTensor q = randomTensor(dt, {c.B, c.Hq, 1, c.D}, rng, -1, 1);
    const HostTensor k = randomTensor(dt, {c.B, c.Hkv, c.S, c.D}, rng, -1, 1);
    const HostTensor v = randomTensor(dt, {c.B, c.Hkv, c.S, c.D}, rng, -1, 1);
    HostTensor keyMask(DType::I64, {c.B, c.S});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.S; ++j)
        keyMask.set(b * c.S + j, j >= b % 3); // a little left padding
    ops::Attention attrs;
    attrs.scale = 1.0 / std::sqrt(static_cast<double>(c.D));
    attrs.causal = true;
    const std::vector<HostTensor> operands = {
        q,
        k,
        v,
        HostTensor::absent(),
        HostTensor::absent(),
        tensorOf(DType::I64, {1}, {double(c.n)}),
        keyMask};
    const std::vector<HostTensor> results = {
        HostTensor(dt, {c.B, c.Hq, 1, c.D})};
    const HostTensor cpu = runCpu(attrs, operands, results)[0];
    for (DecodeKernel decode : kDecodeKernels) {
      const DecodeKernelChoice kernel(decode); // chosen at capture
      CapturedCall step(attrs, operands, results);
      const std::string what =
          std::string("attention decode, ") + c.name + kernelName(decode);
      expectClose(step.replay()[0], cpu, sumTolerance(dt), what);
      if (!timed)
        continue;
      const double us = step.replayMicroseconds(200);
      const double bytes = 2.0 * c.B * c.Hkv * c.n * c.D * dtypeSize(dt);
      std::printf("[ bench    ] %s: %.2f us per call, %.0f GB/s of keys and "
                  "values\n",
                  what.c_str(), us, bytes / us * 1e-3);
    }
  }
}

TEST_F(AttentionTest, CountersAndCombineKernelGiveTheSameBits) {
  // Split rows are combined by their last block (the context's counters)
  // or, without a context, by the combine kernel: the same sums in the
  // same order, the same bits, where both runs use as many warps per
  // block (32-dim bf16 heads: four warps fit in the 48 KB a call without
  // a context assumes). Both runs take the same decode kernel.
  const int64_t S = 2048;
  struct Case {
    int64_t Hq, Hkv, T;
  };
  for (const Case &c : {Case{8, 2, 1}, Case{4, 4, 1}, Case{4, 2, 3}})
    for (int64_t n : {300, 2048}) {
      const std::vector<HostTensor> operands = {
          randomTensor(DType::BF16, {1, c.Hq, c.T, 32}, rng, -1, 1),
          randomTensor(DType::BF16, {1, c.Hkv, S, 32}, rng, -1, 1),
          randomTensor(DType::BF16, {1, c.Hkv, S, 32}, rng, -1, 1),
          HostTensor::absent(),
          HostTensor::absent(),
          tensorOf(DType::I64, {1}, {double(n)}),
          HostTensor::absent()};
      ops::Attention attrs;
      attrs.scale = 0.17;
      attrs.causal = true;
      const std::vector<HostTensor> results = {
          HostTensor(DType::BF16, {1, c.Hq, c.T, 32})};
      EXPECT_EQ(runCuda(attrs, operands, results)[0].bytes,
                runCuda(attrs, operands, results, false, false)[0].bytes)
          << "heads " << c.Hq << "/" << c.Hkv << " T " << c.T << " keys " << n;
    }
}

TEST_F(AttentionTest, OneGraphServesEveryKeyLength) {
  // A decode step against a 2048-slot cache captured once (its split count
  // planned for the capacity) and replayed as the cache fills: each length
  // splits the keys that exist, as many blocks as they need.
  const int64_t B = 2, Hq = 8, Hkv = 2, S = 2048, D = 64;
  const HostTensor q = randomTensor(DType::BF16, {B, Hq, 1, D}, rng, -1, 1);
  const HostTensor k = randomTensor(DType::BF16, {B, Hkv, S, D}, rng, -1, 1);
  const HostTensor v = randomTensor(DType::BF16, {B, Hkv, S, D}, rng, -1, 1);
  ops::Attention attrs;
  attrs.scale = 0.125;
  attrs.causal = true;
  const HostTensor none = HostTensor::absent();
  const HostTensor result(DType::BF16, {B, Hq, 1, D});
  for (DecodeKernel decode : kDecodeKernels) {
    const DecodeKernelChoice kernel(decode); // chosen when the step is captured
    CapturedCall step(
        attrs, {q, k, v, none, none, tensorOf(DType::I64, {1}, {1}), none},
        {result});
    const Tolerance tol = sumTolerance(DType::BF16);
    for (int64_t n : {1, 2, 127, 128, 129, 700, 2047, 2048, 300}) {
      const HostTensor length = tensorOf(DType::I64, {1}, {double(n)});
      step.setOperand(5, length);
      const std::vector<HostTensor> gpu = step.replay();
      const std::vector<HostTensor> cpu =
          runCpu(attrs, {q, k, v, none, none, length, none}, {result});
      expectClose(gpu[0], cpu[0], tol,
                  "replay at key_length " + std::to_string(n) +
                      kernelName(decode));
    }
  }
}

TEST_F(AttentionTest, BadKeyLengthGivesNaNRows) {
  // The CPU kernel raises an error; the device, which reads key_length
  // when it runs, makes every row NaN instead (flash, decode and split
  // decode paths).
  struct Case {
    int64_t T, S, length;
  };
  for (const Case &c : {Case{1, 300, -1}, Case{1, 2000, 2001}, Case{20, 64, 65},
                        Case{3, 64, int64_t(1) << 40}}) {
    const std::vector<HostTensor> operands = {
        randomTensor(DType::F32, {1, 2, c.T, 64}, rng),
        randomTensor(DType::F32, {1, 1, c.S, 64}, rng),
        randomTensor(DType::F32, {1, 1, c.S, 64}, rng),
        HostTensor::absent(),
        HostTensor::absent(),
        tensorOf(DType::I64, {1}, {double(c.length)}),
        HostTensor::absent()};
    ops::Attention attrs;
    attrs.causal = true;
    const HostTensor result(DType::F32, {1, 2, c.T, 64});
    EXPECT_THROW(runCpu(attrs, operands, {result}), Error);
    for (int run = 0; run < 4; ++run) { // each kernel, then no context
      const DecodeKernelChoice kernel(run < 3 ? kDecodeKernels[run]
                                              : DecodeKernel::TensorCores);
      const HostTensor gpu =
          runCuda(attrs, operands, {result}, false, run != 3)[0];
      for (int64_t e = 0; e < gpu.numel(); ++e)
        ASSERT_TRUE(std::isnan(gpu.at(e)))
            << "T " << c.T << " key_length " << c.length << " element " << e
            << " run " << run;
    }
  }
}

TEST_F(AttentionTest, BadKeyLengthAndKeyMaskOperands) {
  const HostTensor q = randomTensor(DType::F32, {2, 2, 1, 8}, rng);
  const HostTensor kv = randomTensor(DType::F32, {2, 2, 5, 8}, rng);
  const HostTensor none = HostTensor::absent();
  auto error = [&](const HostTensor &length, const HostTensor &keyMask) {
    try {
      runCuda(ops::Attention{}, {q, kv, kv, none, none, length, keyMask},
              {HostTensor(DType::F32, {2, 2, 1, 8})});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const HostTensor length = tensorOf(DType::I64, {1}, {3});
  const HostTensor keyMask = randomTensor(DType::I64, {2, 5}, rng, 0, 1);
  for (const std::string &message :
       {error(tensorOf(DType::I32, {1}, {3}), none),
        error(tensorOf(DType::I64, {2}, {3, 3}), none),
        error(length, randomTensor(DType::I64, {2, 4}, rng, 0, 1)),
        error(length, randomTensor(DType::F32, {2, 5}, rng))}) {
    EXPECT_NE(message.find("attention: "), std::string::npos) << message;
    EXPECT_NE(message.find("key_"), std::string::npos) << message;
  }
  EXPECT_EQ(error(length, keyMask), "no error");
  // Operands are positional: all seven, absent ones included.
  EXPECT_THROW(runCuda(ops::Attention{}, {q, kv, kv, none, none},
                       {HostTensor(DType::F32, {2, 2, 1, 8})}),
               Error);
}

/// An attention that appends its step's keys and values to the cache
/// (hrt-fold-kv-appends) against the CPU kernel: the output, and both
/// caches bit for bit (the appended rows written, the rest kept). The
/// grouped kernel appends itself; odd head sizes (rows that are not whole
/// 16-byte words) and the per-row kernel run two cache writes first.
TEST_F(AttentionTest, AppendingToTheCacheMatchesTheCpuKernel) {
  struct Case {
    int64_t B, Hq, Hkv, Tn, cap, at, D;
    DType dt;
  };
  const std::vector<Case> cases = {
      {1, 32, 32, 1, 300, 200, 64, DType::BF16}, // OPT-1.3B decode
      {3, 8, 2, 1, 97, 50, 64, DType::BF16},     // GQA, batch 3
      {1, 32, 8, 1, 260, 0, 64, DType::BF16},    // the first position
      {2, 4, 4, 3, 40, 10, 64, DType::F32},      // three new keys
      {1, 4, 2, 1, 64, 63, 128, DType::F16},     // the last slot
      {2, 4, 2, 1, 50, 20, 36, DType::BF16},     // 72-byte rows
  };
  for (const Case &c : cases)
    for (const DecodeKernel decode : kDecodeKernels) {
      const DecodeKernelChoice kernel(decode);
      const HostTensor none = HostTensor::absent();
      const Shape kvShape = {c.B, c.Hkv, c.cap, c.D},
                  newShape = {c.B, c.Hkv, c.Tn, c.D};
      HostTensor keyMask(DType::I64, {c.B, c.cap});
      for (int64_t e = 0; e < keyMask.numel(); ++e)
        keyMask.set(e, e % c.cap < c.at && e % 7 == 3 ? 0 : 1);
      const std::vector<HostTensor> operands = {
          randomTensor(c.dt, {c.B, c.Hq, c.Tn, c.D}, rng),
          randomTensor(c.dt, kvShape, rng),
          randomTensor(c.dt, kvShape, rng),
          none,
          none,
          tensorOf(DType::I64, {1}, {double(c.at + c.Tn)}),
          keyMask,
          randomTensor(c.dt, newShape, rng),
          randomTensor(c.dt, newShape, rng),
          tensorOf(DType::I64, {1}, {double(c.at)})};
      ops::Attention attrs;
      attrs.scale = 1 / std::sqrt(double(c.D));
      attrs.causal = true;
      attrs.append = true;
      const std::vector<HostTensor> results = {
          HostTensor(c.dt, {c.B, c.Hq, c.Tn, c.D}), HostTensor(c.dt, kvShape),
          HostTensor(c.dt, kvShape)};
      const std::vector<int> caches = {-1, 1, 2}; // updated in place
      const std::string what =
          "B " + std::to_string(c.B) + " Hq " + std::to_string(c.Hq) + " Tn " +
          std::to_string(c.Tn) + " at " + std::to_string(c.at) + " D " +
          std::to_string(c.D) + kernelName(decode);
      const std::vector<HostTensor> cpu =
          runCpu(attrs, operands, results, false, caches);
      const std::vector<HostTensor> gpu =
          runCuda(attrs, operands, results, false, true, caches);
      expectClose(gpu[0], cpu[0], sumTolerance(c.dt), what + " output");
      expectClose(gpu[1], cpu[1], Tolerance{}, what + " key cache");
      expectClose(gpu[2], cpu[2], Tolerance{}, what + " value cache");
      // The CPU kernel is cache_write then attention.
      HostTensor written = operands[1];
      for (int64_t r = 0; r < c.B * c.Hkv; ++r)
        for (int64_t t = 0; t < c.Tn * c.D; ++t)
          written.set((r * c.cap + c.at) * c.D + t,
                      operands[7].at(r * c.Tn * c.D + t));
      expectClose(cpu[1], written, Tolerance{}, what + " CPU key cache");
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
