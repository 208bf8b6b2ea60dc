// Attention's backward on tensor cores (flash attention, version-2 style),
// for bf16 and f16 with heads of 64: nothing of size T x S is stored. Three
// kernels, none with atomics (the same bits every run):
//  1. the tensor-core prompt kernel (AttentionMma.cu) in its statistics
//     mode: per query row the log2 of its softmax denominator (lse, base-2
//     score units) and D = rowsum(dO o O), f32, in scratch;
//  2. dK and dV: a block per 64 keys of a (batch row, KV head), a warp per
//     16 of them, its K and V rows held as A fragments; the group's query
//     heads and their query tiles of 64 rows stream through shared memory
//     (Q, dO, lse, D; cp.async, two tiles in flight). Per tile, on mma.sync
//     with f32 accumulation: S^T = K Q^T, P^T = exp2(S^T - lse),
//     dV += P^T dO, dP^T = V dO^T, dS^T = P^T o (dP^T - D), dK += dS^T Q;
//  3. dQ: a block per 64 query rows of a head (a warp per 16), the visible
//     key tiles of 64 streaming through shared memory: S = Q K^T, P,
//     dP = dO V^T, dS = P o (dP - D), dQ += dS K.
// P and dS are rounded to the storage type before the products that take
// them (as FlashAttention does); scores, softmax and accumulators are f32.
// Invisible keys (causal / sliding-window limits, key padding, an additive
// mask's -inf) give P = 0, so a query row that sees no key adds nothing,
// as in the CPU kernel. dQ and dK are scaled once at the end.
#include "Attention.cuh"
#include "Context.h"
#include "Kernels.h"
#include "Mma.cuh"

#include "common/Attention.h"

namespace hybrid::cuda::kernels {
namespace {

using namespace tensorcore;
constexpr int kHead = 64;             ///< head size
constexpr int kWarps = 4;             ///< per block
constexpr int kThreads = 32 * kWarps; ///< per block
constexpr int kTile = 16 * kWarps;    ///< keys (2) or query rows (3)
constexpr int kStride = kHead + 8;    ///< shared row, elements
constexpr int kChunks = kHead / 8;    ///< 16-byte words per row
constexpr int kTileElements = kTile * kStride;
constexpr int kKk = kHead / 16;        ///< 16-wide slices of a head
constexpr int kOutTiles = kHead / 8;   ///< 8-wide output tiles
constexpr int kScoreTiles = kTile / 8; ///< 8-wide score tiles

/// Shared memory of kernels 2 and 3: two stages of two [kTile][kStride]
/// tiles (Q and dO, or K and V) and two kTile-float rows (lse and D, or the
/// keys' bias).
constexpr size_t kSharedBytes =
    2 * (2 * kTileElements * 2 + 2 * kTile * sizeof(float));

/// Rows r0 .. r0 + 15 of a row-major [*, kHead] matrix as A fragments
/// (zeros for rows at or past `rows`), straight from global memory.
template <typename S>
__device__ __forceinline__ void loadFragments(unsigned (&a)[kKk][4], const S *m,
                                              int64_t r0, int64_t rows) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
  const bool lo = r0 + g < rows, hi = r0 + g + 8 < rows;
  auto word = [&](int64_t r, int col, bool on) {
    return on ? *reinterpret_cast<const unsigned *>(m + r * kHead + col) : 0u;
  };
#pragma unroll
  for (int kk = 0; kk < kKk; ++kk) {
    const int d = kk * 16 + 2 * t;
    a[kk][0] = word(r0 + g, d, lo);
    a[kk][1] = word(r0 + g + 8, d, hi);
    a[kk][2] = word(r0 + g, d + 8, lo);
    a[kk][3] = word(r0 + g + 8, d + 8, hi);
  }
}

/// c[n] (+)= a x B^T for the 8-wide tiles n of `tile` rows: B row-major
/// [kTile][kStride] in shared memory (the forward's keys-as-B pattern).
template <typename S>
__device__ __forceinline__ void
productNT(float (&c)[kScoreTiles][4], const unsigned (&a)[kKk][4], const S *b) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < kKk; ++kk)
#pragma unroll
    for (int n = 0; n < kScoreTiles; n += 2) {
      unsigned f[4];
      loadMatrices(f, b + (n * 8 + (lane / 16) * 8 + lane % 8) * kStride +
                          kk * 16 + ((lane / 8) % 2) * 8);
      mma<S>(c[n], a[kk], f[0], f[1]);
      mma<S>(c[n + 1], a[kk], f[2], f[3]);
    }
}

/// acc (+)= X B with X [16][kTile] in accumulator layout (x, rounded to S)
/// and B row-major [kTile][kStride] in shared memory (the forward's
/// probabilities-times-values pattern).
template <typename S>
__device__ __forceinline__ void productNN(float (&acc)[kOutTiles][4],
                                          const float (&x)[kScoreTiles][4],
                                          const S *b) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int kk = 0; kk < kTile / 16; ++kk) {
    const unsigned a[4] = {pack<S>(x[2 * kk][0], x[2 * kk][1]),
                           pack<S>(x[2 * kk][2], x[2 * kk][3]),
                           pack<S>(x[2 * kk + 1][0], x[2 * kk + 1][1]),
                           pack<S>(x[2 * kk + 1][2], x[2 * kk + 1][3])};
#pragma unroll
    for (int o = 0; o < kOutTiles; o += 2) {
      unsigned f[4];
      loadMatricesTransposed(
          f, b + (kk * 16 + ((lane / 8) % 2) * 8 + lane % 8) * kStride + o * 8 +
                 (lane / 16) * 8);
      mma<S>(acc[o], a, f[0], f[1]);
      mma<S>(acc[o + 1], a, f[2], f[3]);
    }
  }
}

/// Stores rows r0 + g, r0 + g + 8 (those below `rows`) of an accumulator
/// [16][kHead] times `scale` into row-major `out`.
template <typename S>
__device__ __forceinline__ void
storeRows(S *out, const float (&acc)[kOutTiles][4], int64_t r0, int64_t rows,
          float scale) {
  const int g = threadIdx.x % 32 / 4, t = threadIdx.x % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = r0 + g + 8 * r;
    if (row >= rows)
      continue;
#pragma unroll
    for (int o = 0; o < kOutTiles; ++o)
      *reinterpret_cast<unsigned *>(out + row * kHead + o * 8 + 2 * t) =
          pack<S>(acc[o][2 * r] * scale, acc[o][2 * r + 1] * scale);
  }
}

/// A score of query row i against key j in base-2 units: the raw product
/// scaled, the mask and ALiBi bias added (as the forward's
/// AttnParams::score).
template <typename S, bool kPlain>
__device__ __forceinline__ float score2(const AttentionProblem &p, float x,
                                        int64_t b, int64_t h, int64_t i,
                                        int64_t j) {
  if constexpr (kPlain)
    return x * (p.scale * kLog2e);
  float s = x * p.scale;
  if (p.mask)
    s += toFloat(static_cast<const S *>(p.mask)[p.maskAt(b, h, i, j)]);
  if (p.slopes)
    s += alibiBias(toFloat(static_cast<const S *>(p.slopes)[h]), i, j);
  return s * kLog2e;
}

/// exp2(x - lse) where the score is visible, else 0 (also for a row whose
/// lse is -inf, which sees nothing).
__device__ __forceinline__ float probability(float x, float lse, bool visible) {
  return visible && x != -INFINITY ? exp2f(x - lse) : 0.0f;
}

/// Kernel 2: dK and dV of keys [j0, j0 + kTile) of (b, hk) = blockIdx.y.
template <typename S, bool kPlain>
__global__ void __launch_bounds__(kThreads)
    keyValueGradKernel(AttentionProblem p, const S *q, const S *k, const S *v,
                       const S *gradOut, const float *lse, const float *dsum,
                       S *gradK, S *gradV) {
  awaitInputs();
  extern __shared__ float4 gradShared4[];
  S *Qs = reinterpret_cast<S *>(gradShared4); // [2][kTile][kStride]
  S *Os = Qs + 2 * kTileElements;             // dO, the same
  float *rowStats = reinterpret_cast<float *>(Os + 2 * kTileElements);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t bk = blockIdx.y, b = bk / p.Hkv, hk = bk % p.Hkv;
  const int64_t w0 = j0 + 16 * warp; // the warp's keys
  unsigned ka[kKk][4], va[kKk][4];
  loadFragments(ka, k + bk * p.S * kHead, w0, p.S);
  loadFragments(va, v + bk * p.S * kHead, w0, p.S);
  // This thread's keys (accumulator rows g, g + 8): do they exist and are
  // they tokens?
  bool keyOn[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t j = w0 + g + 8 * r;
    keyOn[r] = j < p.S && p.keyVisible(b, j);
  }
  // Query rows that see any key of the block: [iFirst, iLast).
  const int64_t shift = p.S - p.T; // key j aligns with query j - shift
  int64_t iFirst = 0, iLast = p.T;
  if (p.causal)
    iFirst = std::max<int64_t>(0, j0 - shift);
  if (p.window > 0)
    iLast = std::min<int64_t>(p.T, j0 + kTile - 1 + p.window - shift);
  iFirst = iFirst / kTile * kTile;
  const int64_t tilesPerHead =
      iLast > iFirst ? (iLast - iFirst + kTile - 1) / kTile : 0;
  const int64_t tiles = tilesPerHead * p.group;

  // Stages tile n (head hk G + n / tilesPerHead, rows from i0) into `stage`.
  auto stageTile = [&](int64_t n, int stage) {
    const int64_t h = hk * p.group + n / tilesPerHead;
    const int64_t i0 = iFirst + (n % tilesPerHead) * kTile;
    const int64_t rowBase = (b * p.Hq + h) * p.T;
    S *qs = Qs + stage * kTileElements;
    S *os = Os + stage * kTileElements;
    for (int e = threadIdx.x; e < kTile * kChunks; e += kThreads) {
      const int r = e / kChunks, c = e % kChunks;
      const bool on = i0 + r < p.T;
      const int64_t from = on ? (rowBase + i0 + r) * kHead + c * 8 : 0;
      copy16(qs + r * kStride + c * 8, q + from, on);
      copy16(os + r * kStride + c * 8, gradOut + from, on);
    }
    float *stats = rowStats + stage * 2 * kTile;
    for (int r = threadIdx.x; r < kTile; r += kThreads) {
      const bool on = i0 + r < p.T;
      stats[r] = on ? lse[rowBase + i0 + r] : -INFINITY;
      stats[kTile + r] = on ? dsum[rowBase + i0 + r] : 0.0f;
    }
    commitCopies();
  };

  float dK[kOutTiles][4], dV[kOutTiles][4];
#pragma unroll
  for (int o = 0; o < kOutTiles; ++o)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dK[o][e] = dV[o][e] = 0;
  if (tiles > 0)
    stageTile(0, 0);
  for (int64_t n = 0; n < tiles; ++n) {
    const int stage = static_cast<int>(n % 2);
    waitCopies<0>();
    __syncthreads(); // tile n is here; everyone is done with the other
    if (n + 1 < tiles)
      stageTile(n + 1, stage ^ 1);
    const int64_t h = hk * p.group + n / tilesPerHead;
    const int64_t i0 = iFirst + (n % tilesPerHead) * kTile;
    const S *qs = Qs + stage * kTileElements;
    const S *os = Os + stage * kTileElements;
    const float *stats = rowStats + stage * 2 * kTile;

    float sT[kScoreTiles][4] = {}, dpT[kScoreTiles][4] = {};
    productNT<S>(sT, ka, qs);  // S^T = K Q^T
    productNT<S>(dpT, va, os); // dP^T = V dO^T
#pragma unroll
    for (int c = 0; c < kScoreTiles; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, col = c * 8 + 2 * t + e % 2;
        const int64_t i = i0 + col, j = w0 + g + 8 * r;
        int64_t begin = 0, end = 0;
        if (i < p.T)
          p.keyRange(i, begin, end);
        const bool visible = keyOn[r] && j >= begin && j < end;
        const float x =
            visible ? score2<S, kPlain>(p, sT[c][e], b, h, i, j) : -INFINITY;
        const float prob = probability(x, stats[col], visible);
        sT[c][e] = prob;                                     // P^T
        dpT[c][e] = prob * (dpT[c][e] - stats[kTile + col]); // dS^T
      }
    productNN<S>(dV, sT, os);  // dV += P^T dO
    productNN<S>(dK, dpT, qs); // dK += dS^T Q
  }
  storeRows(gradK + bk * p.S * kHead, dK, w0, p.S, p.scale);
  storeRows(gradV + bk * p.S * kHead, dV, w0, p.S, 1.0f);
}

/// Kernel 3: dQ of query rows [i0, i0 + kTile) of (b, h) = blockIdx.y.
template <typename S, bool kPlain>
__global__ void __launch_bounds__(kThreads)
    queryGradKernel(AttentionProblem p, const S *q, const S *k, const S *v,
                    const S *gradOut, const float *lse, const float *dsum,
                    S *gradQ) {
  awaitInputs();
  extern __shared__ float4 gradShared4[];
  S *Ks = reinterpret_cast<S *>(gradShared4); // [2][kTile][kStride]
  S *Vs = Ks + 2 * kTileElements;
  float *keyBias = reinterpret_cast<float *>(Vs + 2 * kTileElements);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kTile;
  const int64_t bh = blockIdx.y, b = bh / p.Hq, h = bh % p.Hq, hk = h / p.group;
  const S *K = k + (b * p.Hkv + hk) * p.S * kHead;
  const S *V = v + (b * p.Hkv + hk) * p.S * kHead;
  const int64_t r0 = i0 + 16 * warp; // the warp's rows
  unsigned qa[kKk][4], oa[kKk][4];
  loadFragments(qa, q + bh * p.T * kHead, r0, p.T);
  loadFragments(oa, gradOut + bh * p.T * kHead, r0, p.T);
  int64_t rowI[2], rowBegin[2], rowEnd[2];
  float rowLse[2], rowD[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    rowI[r] = r0 + g + 8 * r;
    rowBegin[r] = rowEnd[r] = 0;
    rowLse[r] = -INFINITY;
    rowD[r] = 0;
    if (rowI[r] < p.T) {
      p.keyRange(rowI[r], rowBegin[r], rowEnd[r]);
      rowLse[r] = lse[bh * p.T + rowI[r]];
      rowD[r] = dsum[bh * p.T + rowI[r]];
    }
  }
  // Keys any row of the block sees, in whole tiles.
  int64_t first, last, unused;
  p.keyRange(i0, first, unused);
  p.keyRange(std::min<int64_t>(i0 + kTile, p.T) - 1, unused, last);
  first = first / kTile * kTile;

  auto stageKeys = [&](int64_t j0, int stage) {
    S *ks = Ks + stage * kTileElements;
    S *vs = Vs + stage * kTileElements;
    for (int e = threadIdx.x; e < kTile * kChunks; e += kThreads) {
      const int r = e / kChunks, c = e % kChunks;
      const int64_t j = j0 + r;
      const bool present = j < p.S && p.keyVisible(b, j);
      const int64_t from = present ? j * kHead + c * 8 : 0;
      copy16(ks + r * kStride + c * 8, K + from, present);
      copy16(vs + r * kStride + c * 8, V + from, present);
      if (c == 0)
        keyBias[stage * kTile + r] = present ? 0.0f : -INFINITY;
    }
    commitCopies();
  };

  float dQ[kOutTiles][4];
#pragma unroll
  for (int o = 0; o < kOutTiles; ++o)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dQ[o][e] = 0;
  if (first < last)
    stageKeys(first, 0);
  int stage = 0;
  for (int64_t j0 = first; j0 < last; j0 += kTile, stage ^= 1) {
    waitCopies<0>();
    __syncthreads();
    if (j0 + kTile < last)
      stageKeys(j0 + kTile, stage ^ 1);
    const S *ks = Ks + stage * kTileElements;
    const S *vs = Vs + stage * kTileElements;
    const float *bias = keyBias + stage * kTile;

    float s[kScoreTiles][4] = {}, dp[kScoreTiles][4] = {};
    productNT<S>(s, qa, ks);  // S = Q K^T
    productNT<S>(dp, oa, vs); // dP = dO V^T
#pragma unroll
    for (int c = 0; c < kScoreTiles; ++c)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e / 2, col = c * 8 + 2 * t + e % 2;
        const int64_t j = j0 + col;
        const bool visible =
            bias[col] == 0.0f && j >= rowBegin[r] && j < rowEnd[r];
        const float x = visible
                            ? score2<S, kPlain>(p, s[c][e], b, h, rowI[r], j)
                            : -INFINITY;
        const float prob = probability(x, rowLse[r], visible);
        dp[c][e] = prob * (dp[c][e] - rowD[r]); // dS
      }
    productNN<S>(dQ, dp, ks); // dQ += dS K
  }
  storeRows(gradQ + bh * p.T * kHead, dQ, r0, p.T, p.scale);
}

template <typename S>
void launchAll(const AttentionProblem &p, const void *const (&in)[4],
               void *const (&out)[3], const float *lse, const float *dsum,
               cudaStream_t stream) {
  const S *q = static_cast<const S *>(in[0]),
          *k = static_cast<const S *>(in[1]),
          *v = static_cast<const S *>(in[2]),
          *gradOut = static_cast<const S *>(in[3]);
  const bool plain = !p.mask && !p.slopes;
  auto keyValue =
      plain ? keyValueGradKernel<S, true> : keyValueGradKernel<S, false>;
  auto query = plain ? queryGradKernel<S, true> : queryGradKernel<S, false>;
  launch(keyValue,
         dim3(static_cast<unsigned>((p.S + kTile - 1) / kTile),
              static_cast<unsigned>(p.B * p.Hkv)),
         kThreads, kSharedBytes, stream, p, q, k, v, gradOut, lse, dsum,
         static_cast<S *>(out[1]), static_cast<S *>(out[2]));
  checkLaunch("attention_grad");
  launch(query,
         dim3(static_cast<unsigned>((p.T + kTile - 1) / kTile),
              static_cast<unsigned>(p.B * p.Hq)),
         kThreads, kSharedBytes, stream, p, q, k, v, gradOut, lse, dsum,
         static_cast<S *>(out[0]));
  checkLaunch("attention_grad");
}

} // namespace

bool attentionGradMmaPlanned(const AttentionProblem &p) {
  return p.Dh == kHead && p.Dv == kHead && p.B * p.Hq <= 65535 &&
         (p.dtype == DType::BF16 || p.dtype == DType::F16);
}

size_t attentionGradMmaScratch(const AttentionProblem &p) {
  return 2 * ((static_cast<size_t>(p.B * p.Hq * p.T) * sizeof(float) + 255) /
              256 * 256);
}

void attentionGradMma(const AttentionProblem &p, const void *const (&in)[4],
                      void *const (&out)[3], void *scratch, Context *context,
                      cudaStream_t stream) {
  if (!context || context->computeMajor < 8)
    fail("attention_grad", "the tensor-core kernels need a context on a "
                           "device of compute capability 8.0 or later");
  for (const void *ptr : in)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      fail("attention_grad", "operands must start at 16-byte addresses");
  for (void *ptr : out)
    if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
      fail("attention_grad", "results must start at 16-byte addresses");
  const size_t half = attentionGradMmaScratch(p) / 2;
  auto *lse = static_cast<float *>(scratch);
  auto *dsum = reinterpret_cast<float *>(static_cast<char *>(scratch) + half);
  // Kernel 1: the forward's row statistics.
  AttnParams f;
  f.q = in[0];
  f.k = in[1];
  f.v = in[2];
  f.mask = p.mask;
  f.slopes = p.slopes;
  f.keyMask = p.keyMask;
  f.keyMask64 = p.keyMask64;
  f.B = p.B;
  f.Hq = p.Hq;
  f.Hkv = p.Hkv;
  f.T = p.T;
  f.S = p.S;
  f.Dh = p.Dh;
  f.Dv = p.Dv;
  f.group = p.group;
  for (int d = 0; d < 4; ++d)
    f.maskStrides[d] = p.maskStrides[d];
  f.scale = p.scale;
  f.causal = p.causal;
  f.window = p.window;
  f.gradOut = in[3];
  f.rowLse = lse;
  f.rowDsum = dsum;
  if (!launchPromptMma(f, p.dtype, context, stream))
    fail("attention_grad", "the tensor-core statistics kernel does not apply");
  if (p.dtype == DType::BF16)
    launchAll<Bf16>(p, in, out, lse, dsum, stream);
  else
    launchAll<F16>(p, in, out, lse, dsum, stream);
}

} // namespace hybrid::cuda::kernels
