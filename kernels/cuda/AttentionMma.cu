// Prompt attention on tensor cores (flash attention, version-2 style), for
// bf16 and f16 with head size 64 or 128: a block takes 64 query rows of one
// head (four warps of 16 rows), streams the head's visible keys and values
// through shared memory in tiles of 64 (cp.async, two tiles in flight),
// computes each warp's 16 x 64 scores with mma.sync (m16n8k16, f32
// accumulation), applies the limits, masks and ALiBi of AttnParams::score
// to the accumulators in place, keeps an online (running-max) softmax in
// f32 registers, rounds the tile's probabilities to the storage type and
// multiplies them into the 16 x head-size output with mma.sync again. Keys
// past the count and padding keys are staged as zeros and scored -inf, so
// an unfilled slot's bytes never reach a result; a row that sees no key
// gives zeros (the CPU kernel's rule).
//
// Against the f32 flash kernel of Attention.cu the scores and the output
// are the same sums in another order, and the probabilities are rounded to
// the storage type before the second product (as FlashAttention does);
// test/cuda/AttentionTest.cpp holds both to the CPU kernel with the bf16 /
// f16 reduction tolerance.
#include "Attention.cuh"
#include "AttentionTile.cuh"
#include "Context.h"
#include "Mma.cuh"

namespace hybrid::cuda::kernels {
namespace {

using namespace tensorcore;

template <int HD> struct MmaConfig {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRows = 16 * kWarps; ///< query rows per block
  static constexpr int kKeys = 64;          ///< keys per tile
  /// Shared rows are padded by 16 bytes: the 8 rows one ldmatrix reads
  /// then start in 8 different 16-byte bank groups.
  static constexpr int kStride = HD + 8; ///< elements
  static constexpr int kChunks = HD / 8; ///< 16-byte chunks per row
  static constexpr int kStages = 2;
  static constexpr size_t kSharedBytes =
      static_cast<size_t>(kRows + kStages * 2 * kKeys) * kStride * 2 +
      kStages * kKeys * sizeof(float);
};

/// One block: query rows [i0, i0 + kRows) of head (b, h). Each thread of a
/// warp holds, of the warp's 16 rows, rows g = lane / 4 and g + 8, and of
/// every 8 columns (keys of a score tile, or output columns) the two at
/// 2 (lane % 4): the mma accumulator layout.
template <typename S, int HD, bool kPlain, bool kStats = false>
__global__ void __launch_bounds__(MmaConfig<HD>::kThreads)
    promptMmaKernel(AttnParams p) {
  awaitInputs();
  using C = MmaConfig<HD>;
  constexpr int kScoreTiles = C::kKeys / 8, kOutTiles = HD / 8;
  extern __shared__ float4 shared4[];
  S *Qs = reinterpret_cast<S *>(shared4);          // [kRows][kStride]
  S *Ks = Qs + C::kRows * C::kStride;              // [kStages][kKeys][kStride]
  S *Vs = Ks + C::kStages * C::kKeys * C::kStride; // the same
  // 0 for a key that exists and is a token, else -inf.
  float *keyBias =
      reinterpret_cast<float *>(Vs + C::kStages * C::kKeys * C::kStride);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  // The longest (causal) query tiles first.
  const int64_t i0 =
      static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * C::kRows;
  const int64_t bh = blockIdx.y;
  const int64_t b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group;
  const S *Q = static_cast<const S *>(p.q) + bh * p.T * HD;
  const S *K = static_cast<const S *>(p.k) + (b * p.Hkv + hk) * p.S * HD;
  const S *V = static_cast<const S *>(p.v) + (b * p.Hkv + hk) * p.S * HD;
  S *O = static_cast<S *>(p.out) + bh * p.T * HD;
  const int64_t keys = p.keyCount();
  if (keys < 0) { // a bad key_length (keyCount): the rows become NaN
    for (int64_t e = threadIdx.x; e < C::kRows * HD; e += C::kThreads)
      if (i0 + e / HD < p.T)
        O[i0 * HD + e] = fromFloat<S>(NAN);
    return;
  }
  // Keys any row of the block sees.
  int64_t first, last, unused;
  p.keyRange(i0, keys, first, unused);
  p.keyRange(std::min<int64_t>(i0 + C::kRows, p.T) - 1, keys, unused, last);
  first = first / C::kKeys * C::kKeys; // tiles stay aligned

  auto stageKeys = [&](int64_t j0, int stage) {
    S *ks = Ks + stage * C::kKeys * C::kStride;
    S *vs = Vs + stage * C::kKeys * C::kStride;
    for (int e = threadIdx.x; e < C::kKeys * C::kChunks; e += C::kThreads) {
      const int r = e / C::kChunks, c = e % C::kChunks;
      const int64_t j = j0 + r;
      const bool present = j < keys && p.keyVisible(b, j);
      const int64_t from = present ? j * HD + c * 8 : 0;
      copy16(ks + r * C::kStride + c * 8, K + from, present);
      copy16(vs + r * C::kStride + c * 8, V + from, present);
      if (c == 0)
        keyBias[stage * C::kKeys + r] = present ? 0.0f : -INFINITY;
    }
    commitCopies();
  };

  // The block's query rows (zeros past T), then the first key tile.
  for (int e = threadIdx.x; e < C::kRows * C::kChunks; e += C::kThreads) {
    const int r = e / C::kChunks, c = e % C::kChunks;
    const bool present = i0 + r < p.T;
    copy16(Qs + r * C::kStride + c * 8,
           Q + (present ? (i0 + r) * HD + c * 8 : 0), present);
  }
  commitCopies();
  if (first < last) {
    stageKeys(first, 0);
    waitCopies<1>(); // the queries (the key tile may still stream)
  } else {
    waitCopies<0>();
  }
  __syncthreads();
  // The warp's queries as A fragments, one per 16 columns of the head.
  unsigned qa[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk)
    loadMatrices(qa[kk], Qs + (warp * 16 + lane % 16) * C::kStride + kk * 16 +
                             (lane / 16) * 8);

  // This thread's two rows: their visible keys, running max (log2 units)
  // and partial sum, and output columns.
  int64_t rowI[2], rowBegin[2], rowEnd[2];
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0, 0};
  float acc[kOutTiles][4];
#pragma unroll
  for (int n = 0; n < kOutTiles; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc[n][e] = 0;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rowI[r] = i0 + warp * 16 + g + 8 * r;
    p.keyRange(rowI[r], keys, rowBegin[r], rowEnd[r]);
    if (rowI[r] >= p.T) // past the queries: sees nothing (reads no mask)
      rowBegin[r] = rowEnd[r] = 0;
  }
  const float scaleLog2 = p.scale * kLog2e;

  int stage = 0;
  for (int64_t j0 = first; j0 < last; j0 += C::kKeys, stage ^= 1) {
    waitCopies<0>();
    __syncthreads(); // the tile is here; everyone is done with the other
    if (j0 + C::kKeys < last)
      stageKeys(j0 + C::kKeys, stage ^ 1);
    const S *ks = Ks + stage * C::kKeys * C::kStride;
    const S *vs = Vs + stage * C::kKeys * C::kStride;
    const float *bias = keyBias + stage * C::kKeys;

    // Scores of the warp's 16 rows against the tile's 64 keys.
    float s[kScoreTiles][4];
    scoreKeys<S, kScoreTiles, HD, C::kStride>(s, qa, ks, lane);

    // Limits, masks, bias; then the online softmax, row by row.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tileMax = -INFINITY;
#pragma unroll
      for (int n = 0; n < kScoreTiles; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int col = n * 8 + 2 * t + e;
          const int64_t j = j0 + col;
          const bool visible = j >= rowBegin[r] && j < rowEnd[r];
          float &x = s[n][2 * r + e];
          if constexpr (kPlain)
            x = visible ? x * scaleLog2 + bias[col] : -INFINITY;
          else
            x = visible ? p.score<S>(x, b, h, rowI[r], j) * kLog2e + bias[col]
                        : -INFINITY;
          tileMax = fmaxf(tileMax, x);
        }
      softmaxStep(s, acc, m[r], l[r], r, tileMax);
    }

    // Output += probabilities x values.
    accumulateValues<S, C::kKeys, kOutTiles, C::kStride>(s, vs, acc, lane);
  }

#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = l[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    if constexpr (kStats) {
      // The backward's statistics: rowsum(dO o O) with O = acc / total in
      // f32, over this thread's columns, then its quad.
      const float inv = total > 0 ? 1.0f / total : 0.0f;
      float dsum = 0;
      if (rowI[r] < p.T) {
        const S *dO = static_cast<const S *>(p.gradOut) + bh * p.T * HD +
                      rowI[r] * HD + 2 * t;
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n)
          dsum += toFloat(dO[n * 8]) * (acc[n][2 * r] * inv) +
                  toFloat(dO[n * 8 + 1]) * (acc[n][2 * r + 1] * inv);
      }
      dsum += __shfl_xor_sync(0xffffffffu, dsum, 1);
      dsum += __shfl_xor_sync(0xffffffffu, dsum, 2);
      if (t == 0 && rowI[r] < p.T) {
        p.rowLse[bh * p.T + rowI[r]] =
            total > 0 ? m[r] + log2f(total) : -INFINITY;
        p.rowDsum[bh * p.T + rowI[r]] = dsum;
      }
      continue;
    }
    if (rowI[r] >= p.T)
      continue;
    const float inv = total > 0 ? 1.0f / total : 0.0f;
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) {
      const unsigned two =
          pack<S>(acc[n][2 * r] * inv, acc[n][2 * r + 1] * inv);
      *reinterpret_cast<unsigned *>(O + rowI[r] * HD + n * 8 + 2 * t) = two;
    }
  }
}

template <typename S, int HD>
void launchMma(const AttnParams &p, Context *context, cudaStream_t stream) {
  using C = MmaConfig<HD>;
  const bool plain = !p.mask && !p.slopes;
  auto kernel = p.rowLse ? (plain ? promptMmaKernel<S, HD, true, true>
                                  : promptMmaKernel<S, HD, false, true>)
                         : (plain ? promptMmaKernel<S, HD, true>
                                  : promptMmaKernel<S, HD, false>);
  if (C::kSharedBytes > 48 * 1024)
    allowSharedMemory(context, reinterpret_cast<const void *>(kernel),
                      C::kSharedBytes, "attention");
  const dim3 grid(static_cast<unsigned>((p.T + C::kRows - 1) / C::kRows),
                  static_cast<unsigned>(p.B * p.Hq));
  launch(kernel, grid, C::kThreads, C::kSharedBytes, stream, p);
  checkLaunch("attention");
}

} // namespace

bool launchPromptMma(const AttnParams &p, DType dtype, Context *context,
                     cudaStream_t stream) {
  const bool aligned = reinterpret_cast<uintptr_t>(p.q) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(p.k) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(p.v) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(p.out) % 16 == 0;
  if (!context || context->computeMajor < 8 || !aligned || p.Dh != p.Dv ||
      (p.Dh != 64 && p.Dh != 128) || p.B * p.Hq > 65535 ||
      (dtype != DType::BF16 && dtype != DType::F16))
    return false;
  const size_t need =
      p.Dh == 64 ? MmaConfig<64>::kSharedBytes : MmaConfig<128>::kSharedBytes;
  if (need > sharedLimit(context))
    return false;
  const bool bf16 = dtype == DType::BF16;
  if (p.Dh == 64)
    bf16 ? launchMma<Bf16, 64>(p, context, stream)
         : launchMma<F16, 64>(p, context, stream);
  else
    bf16 ? launchMma<Bf16, 128>(p, context, stream)
         : launchMma<F16, 128>(p, context, stream);
  return true;
}

} // namespace hybrid::cuda::kernels
