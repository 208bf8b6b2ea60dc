// The skinny GEMM: C = x W (+ bias, activation, + residual) for a few rows
// of x (M <= 32) against a large weight, the product of a decode step's
// linear layers, bound by reading W once. Every warp streams a tile of W
// with 16-byte loads, several steps in flight before it uses any; bf16/f16
// multiply on tensor cores (mma.sync m16n8k16, f32 accumulation), f32 on
// CUDA cores (exact f32). The warps of a block share one column tile and
// split its K range (their sums meet in shared memory, in warp order);
// when the columns give too few blocks, blocks split K as well and a
// second kernel sums their partials from scratch. The epilogue (bias, the
// activation, the residual, one rounding) runs on the final sums. A norm
// prologue (bf16/f16, one row tile): every block normalises the few rows
// of x into shared memory first (one 16-byte load per thread and row
// chunk, block-wide sums in double, rounded as the layer_norm / rms_norm
// kernels round) and streams W against them.
#include "Activation.cuh"
#include "Device.cuh"
#include "GemmEpilogue.cuh"
#include "NormPrologue.cuh"
#include "SkinnyGemm.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

namespace hybrid::cuda {
namespace {

/// x rows per mma tile (mma's n is 8), and per grid.z slice of the f32
/// kernel.
constexpr int kRowTile = 8;
/// The most blocks a column tile's K range is split over.
constexpr int kMaxSplits = 16;

struct SkinnyParams {
  const void *x = nullptr, *w = nullptr, *bias = nullptr, *residual = nullptr;
  void *out = nullptr;
  /// [splits][M][N] f32 partial sums when blocks split K, else null.
  float *partial = nullptr;
  /// With partial: one zeroed counter per block tile (grid.x * grid.z), or
  /// null for the second kernel that sums the partials.
  unsigned *counters = nullptr;
  int64_t M = 0, N = 0, K = 0;
  int64_t ldx = 0, ldw = 0, ldc = 0, ldr = 0;
  /// K steps each warp takes (the last warps may get fewer or none).
  int64_t stepsPerSlice = 0;
  Activation activation = Activation::None;
  /// The norm prologue (GemmProblem's), or None.
  NormKind norm = NormKind::None;
  const void *normWeight = nullptr, *normBias = nullptr;
  double normEpsilon = 0;
};

/// The most products one launch runs (linear_group's members; more are
/// launched in turns).
constexpr int kMaxGroupMembers = 4;

/// The products of one launch, which share x (and M, K, the dtype, the
/// weight layout and the split count): member i owns the column tiles
/// blockIdx.x in [firstTile[i], firstTile[i + 1]), the last up to
/// gridDim.x. A single GEMM is a group of one.
struct SkinnyGroup {
  SkinnyParams member[kMaxGroupMembers];
  unsigned firstTile[kMaxGroupMembers] = {};
  int count = 1;
  /// Every member's weight is settled (GemmProblem::settledB): the
  /// tensor-core kernel issues its first batch of weight loads before
  /// awaitInputs(), streaming them while the kernel before it drains.
  bool earlyWeights = false;
};

/// This block's member and its column tile within the member. The loop
/// indexes the table with constants only: a dynamic index into kernel
/// parameters would copy the whole table to local memory first.
__device__ __forceinline__ SkinnyParams memberOf(const SkinnyGroup &group,
                                                 int64_t &tile) {
  SkinnyParams p = group.member[0];
  unsigned first = 0;
#pragma unroll
  for (int i = 1; i < kMaxGroupMembers; ++i)
    if (i < group.count && blockIdx.x >= group.firstTile[i]) {
      p = group.member[i];
      first = group.firstTile[i];
    }
  tile = static_cast<int64_t>(blockIdx.x - first);
  return p;
}

/// Element (m, n) of the result from its sum over K: bias, activation,
/// residual, one rounding (GemmProblem's epilogue).
template <typename S>
__device__ __forceinline__ void finishElement(const SkinnyParams &p, int64_t m,
                                              int64_t n, float v) {
  storeWithEpilogue<S>(v, m, n, p.bias, p.activation, p.residual, p.ldr, p.out,
                       p.ldc);
}

/// The K steps [begin, end) of this thread's warp: slice blockIdx.y *
/// kWarps + warp of the split K range.
template <int kWarps>
__device__ __forceinline__ void warpSteps(const SkinnyParams &p, int64_t stepK,
                                          int64_t &begin, int64_t &end) {
  const int64_t steps = (p.K + stepK - 1) / stepK;
  const int64_t slice =
      static_cast<int64_t>(blockIdx.y) * kWarps + threadIdx.x / 32;
  begin = std::min(slice * p.stepsPerSlice, steps);
  end = std::min(begin + p.stepsPerSlice, steps);
}

/// Sums accumulator i of lane l over the block's warps (in warp order, so
/// results do not depend on timing) and hands each sum to its element
/// coord(i, l) -> (m, n): the epilogue, or the block's partial when blocks
/// split K. `red` holds kWarps * kAcc * 32 floats.
template <typename S, int kWarps, int kAcc, typename Coord>
__device__ __forceinline__ void finishBlock(const SkinnyParams &p,
                                            const float (&acc)[kAcc],
                                            float *red, Coord coord) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int i = 0; i < kAcc; ++i)
    red[(warp * kAcc + i) * 32 + lane] = acc[i];
  __syncthreads();
  for (int e = threadIdx.x; e < kAcc * 32; e += 32 * kWarps) {
    float v = 0;
    for (int w = 0; w < kWarps; ++w)
      v += red[w * kAcc * 32 + e];
    int64_t m, n;
    coord(e / 32, e % 32, m, n);
    if (m >= p.M || n >= p.N)
      continue;
    if (p.partial)
      p.partial[(blockIdx.y * p.M + m) * p.N + n] = v;
    else
      finishElement<S>(p, m, n, v);
  }
}

/// When blocks split K and counters are given: the block of a tile (its
/// columns [n0, n0 + cols) of rows [m0, m0 + rows) of its member; the
/// counter is the launch's, one per block tile of the grid) that counts last
/// sums the tile's partials in split order, so the result does not depend on
/// which block that is and equals the combine kernel's, applies the
/// epilogue and clears the counter for the next call. Every thread of the
/// block calls it after the block's partials are written.
template <typename S>
__device__ void finishSplitTile(const SkinnyParams &p, int64_t n0, int64_t cols,
                                int64_t m0, int64_t rows) {
  if (!lastBlockToArrive(p.counters + blockIdx.z * gridDim.x + blockIdx.x,
                         gridDim.y))
    return;
  const int64_t width = std::min(n0 + cols, p.N) - n0;
  const int64_t height = std::min(m0 + rows, p.M) - m0;
  for (int64_t e = threadIdx.x; e < width * height; e += blockDim.x) {
    const int64_t m = m0 + e / width, n = n0 + e % width;
    float v = 0;
    for (unsigned s = 0; s < gridDim.y; ++s)
      v += __ldcg(p.partial + (s * p.M + m) * p.N + n);
    finishElement<S>(p, m, n, v);
  }
}

/// Sums the blocks' partials of each element and applies the epilogue.
template <typename S>
__global__ void skinnyCombineKernel(SkinnyParams p, int splits) {
  awaitInputs();
  const int64_t total = p.M * p.N;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    float v = 0;
    for (int s = 0; s < splits; ++s)
      v += p.partial[s * total + e];
    finishElement<S>(p, e / p.N, e % p.N, v);
  }
}

// ---------------------------------------------------------------------------
// bf16 / f16 on tensor cores.
//
// mma.m16n8k16 computes D[16 x 8] += A[16 x 16] B[16 x 8]; we give it A =
// a tile of W^T (16 output columns by 16 k) and B = x^T (16 k by 8 rows of
// x), so D holds 16 columns of 8 result rows. Thread (g = lane / 4, t =
// lane % 4) holds A's rows g and g + 8 and k slots {2t, 2t+1, 2t+8, 2t+9},
// B's column g and the same slots, and D's rows g, g + 8 by columns 2t,
// 2t + 1. A dot product does not care which slot holds which k as long as
// A and B agree, nor D which row holds which column of W as long as the
// epilogue knows: both are chosen so that every thread's share of W is
// whole 16-byte runs of memory.
//  * W [N, K] (nn.Linear): thread (g, t) loads W row n0 + g (and + 8) at
//    k0 + 8t .. 8t + 7; those 8 k fill its slots of two mmas (k0 + 8t + 0..3,
//    then + 4..7). x row m is loaded the same way (16 bytes).
//  * W [K, N] (Conv1D): thread (g, t) loads W rows k0 + 4t + j (j < 4) at
//    columns n0 + 8g .. 8g + 7; A row g of tile c is column n0 + 8g + 2c,
//    row g + 8 column n0 + 8g + 2c + 1, and slots {2t, 2t+1, 2t+8, 2t+9}
//    are k0 + 4t + 0..3, so four mmas (64 columns) take one step's 16 k.
//    x row m is loaded at k0 + 4t .. 4t + 3 (8 bytes).

template <bool NK, int MT> struct MmaConfig {
  /// Warps per block (all on one column tile, splitting K).
  static constexpr int kWarps = NK ? 8 : 4;
  /// 16-column A tiles per warp: [N, K] takes two when x has several row
  /// tiles (each x fragment then serves two mmas, halving its reads).
  static constexpr int kTiles = NK ? (MT == 1 ? 1 : 2) : 4;
  static constexpr int kCols = 16 * kTiles;
  static constexpr int kStepK = NK ? 32 : 16;
  /// Steps whose loads are in flight together (~96 registers of them).
  static constexpr int kUnroll = NK ? (MT == 1   ? 8
                                       : MT == 2 ? 4
                                                 : 3)
                                    : (MT == 4 ? 2 : 4);
  static constexpr int kAcc = kTiles * MT * 4;
};

/// One step's fragments as loaded from memory.
template <bool NK, int MT> struct MmaStep {
  uint4 a[MmaConfig<NK, MT>::kTiles][2]; ///< W rows g, g + 8 of each tile
  uint4 b[MT];                           ///< x row 8 mt + g
};
template <int MT> struct MmaStep<false, MT> {
  uint4 a[4]; ///< W rows k0 + 4t + j, columns n0 + 8g .. + 7
  uint2 b[MT];
};

template <typename S>
__device__ __forceinline__ void mma(float (&d)[4], uint32_t a0, uint32_t a1,
                                    uint32_t a2, uint32_t a3, uint32_t b0,
                                    uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<S, Bf16>)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap(); // the host runs bf16/f16 here only on sm_80 and later
#endif
}

/// `count` (clamped to [0, 8]) 2-byte elements from p, zeros after them,
/// packed as a 16-byte load would hold them.
__device__ __forceinline__ uint4 gather8(const uint16_t *p, int64_t count) {
  uint32_t word[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t lo = 2 * i < count ? p[2 * i] : 0;
    const uint32_t hi = 2 * i + 1 < count ? p[2 * i + 1] : 0;
    word[i] = lo | hi << 16;
  }
  return make_uint4(word[0], word[1], word[2], word[3]);
}
__device__ __forceinline__ uint2 gather4(const uint16_t *p, int64_t count) {
  const uint4 v = gather8(p, count < 4 ? count : 4);
  return make_uint2(v.x, v.y);
}

__device__ __forceinline__ uint32_t wordOf(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// An x fragment: from global memory through the read-only cache, or (a
/// norm prologue's rows) from shared memory.
template <bool Shared, typename T>
__device__ __forceinline__ T loadX(const uint16_t *at) {
  if constexpr (Shared)
    return *reinterpret_cast<const T *>(at);
  else
    return __ldg(reinterpret_cast<const T *>(at));
}

template <typename S, bool NK, int MT, bool Vec, bool Norm = false>
__global__ void __launch_bounds__(32 * MmaConfig<NK, MT>::kWarps)
    skinnyMmaKernel(SkinnyGroup group) {
  // Nothing but settled weights is read before awaitInputs() below.
  using Cfg = MmaConfig<NK, MT>;
  constexpr int T = Cfg::kTiles;
  __shared__ float red[Cfg::kWarps * Cfg::kAcc * 32];
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  int64_t tile = 0;
  const SkinnyParams p = memberOf(group, tile);
  const int64_t n0 = tile * Cfg::kCols;
  // x: the input rows, or the prologue's normalised rows (M x K, written
  // into shared memory after the wait).
  extern __shared__ uint4 normalisedRows[];
  const auto *x = Norm ? reinterpret_cast<const uint16_t *>(normalisedRows)
                       : static_cast<const uint16_t *>(p.x);
  const int64_t ldx = Norm ? p.K : p.ldx;
  const auto *w = static_cast<const uint16_t *>(p.w);
  // Rows past the end are read as the last row (valid memory): a row of A
  // or a column of B only reaches its own row / column of D, which is not
  // stored.
  const uint16_t *xRow[MT];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
    xRow[mt] = x + std::min<int64_t>(mt * kRowTile + g, p.M - 1) * ldx;
  const uint16_t *wRow[NK ? T : 1][2];
  int64_t col = 0, colVec = 0; // [K, N]: this thread's 8 columns
  if constexpr (NK) {
#pragma unroll
    for (int a = 0; a < T; ++a)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wRow[a][h] =
            w + std::min<int64_t>(n0 + 16 * a + 8 * h + g, p.N - 1) * p.ldw;
  } else {
    col = n0 + 8 * g;
    colVec = std::min<int64_t>(col, p.N - 8); // Vec: N % 8 == 0, so N >= 8
  }

  // A step's W fragments (read-only weights) and its x fragments (the
  // previous kernel's result, or the prologue's rows), loaded apart so that
  // W can be in flight before awaitInputs().
  auto loadW = [&](MmaStep<NK, MT> &f, int64_t step) {
    const bool vec = Vec && (step + 1) * Cfg::kStepK <= p.K;
    if constexpr (NK) {
      const int64_t k = step * Cfg::kStepK + 8 * t;
#pragma unroll
      for (int a = 0; a < T; ++a)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f.a[a][h] =
              vec ? __ldcs(reinterpret_cast<const uint4 *>(wRow[a][h] + k))
                  : gather8(wRow[a][h] + k, p.K - k);
    } else {
      const int64_t k = step * Cfg::kStepK + 4 * t;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if (vec)
          f.a[j] = __ldcs(
              reinterpret_cast<const uint4 *>(w + (k + j) * p.ldw + colVec));
        else if (k + j < p.K)
          f.a[j] = gather8(w + (k + j) * p.ldw + col, p.N - col);
        else
          f.a[j] = make_uint4(0, 0, 0, 0);
      }
    }
  };
  auto loadXStep = [&](MmaStep<NK, MT> &f, int64_t step) {
    const bool vec = Vec && (step + 1) * Cfg::kStepK <= p.K;
    const int64_t k = step * Cfg::kStepK + (NK ? 8 : 4) * t;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (NK)
        f.b[mt] = vec ? loadX<Norm, uint4>(xRow[mt] + k)
                      : gather8(xRow[mt] + k, p.K - k);
      else
        f.b[mt] = vec ? loadX<Norm, uint2>(xRow[mt] + k)
                      : gather4(xRow[mt] + k, p.K - k);
    }
  };
  float acc[T][MT][4] = {};
  auto compute = [&](const MmaStep<NK, MT> &f) {
    if constexpr (NK) {
#pragma unroll
      for (int a = 0; a < T; ++a)
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma<S>(acc[a][mt], f.a[a][0].x, f.a[a][1].x, f.a[a][0].y, f.a[a][1].y,
                 f.b[mt].x, f.b[mt].y);
          mma<S>(acc[a][mt], f.a[a][0].z, f.a[a][1].z, f.a[a][0].w, f.a[a][1].w,
                 f.b[mt].z, f.b[mt].w);
        }
    } else {
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        // Tile c: columns n0 + 8g + 2c (A row g: low halves) and + 1 (row
        // g + 8: high halves) at k0 + 4t + j.
        const uint32_t w0 = wordOf(f.a[0], c), w1 = wordOf(f.a[1], c);
        const uint32_t w2 = wordOf(f.a[2], c), w3 = wordOf(f.a[3], c);
        const uint32_t a0 = __byte_perm(w0, w1, 0x5410);
        const uint32_t a1 = __byte_perm(w0, w1, 0x7632);
        const uint32_t a2 = __byte_perm(w2, w3, 0x5410);
        const uint32_t a3 = __byte_perm(w2, w3, 0x7632);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
          mma<S>(acc[c][mt], a0, a1, a2, a3, f.b[mt].x, f.b[mt].y);
      }
    }
  };

  int64_t s, end;
  warpSteps<Cfg::kWarps>(p, Cfg::kStepK, s, end);
  // Every load of a batch is issued before the first is used (the batch
  // waits for memory once); a short slice is one partial batch. With
  // settled weights the first batch's W loads go out before the wait for
  // the previous kernel (and the prologue), which they then overlap.
  MmaStep<NK, MT> f[Cfg::kUnroll];
  const bool early = group.earlyWeights;
  if (early) {
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u)
      if (s + u < end)
        loadW(f[u], s + u);
  }
  awaitInputs();
  if constexpr (Norm)
    normaliseRows<S, 32 * Cfg::kWarps>(p, normalisedRows);
  for (bool first = true; s < end; s += Cfg::kUnroll, first = false) {
    if (!(early && first)) {
#pragma unroll
      for (int u = 0; u < Cfg::kUnroll; ++u)
        if (s + u < end)
          loadW(f[u], s + u);
    }
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u)
      if (s + u < end)
        loadXStep(f[u], s + u);
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u)
      if (s + u < end)
        compute(f[u]);
  }

  float flat[Cfg::kAcc];
#pragma unroll
  for (int a = 0; a < T; ++a)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int c = 0; c < 4; ++c)
        flat[(a * MT + mt) * 4 + c] = acc[a][mt][c];
  // D element c of (tile a, row tile mt): x row 8 mt + 2t (+ 1 for odd c)
  // and the output column that A row g (+ 8 for c >= 2) of the tile holds
  // (the layouts above).
  finishBlock<S, Cfg::kWarps>(
      p, flat, red, [&](int i, int l, int64_t &m, int64_t &n) {
        const int a = i / (MT * 4), mt = i / 4 % MT, c = i % 4;
        const int gl = l / 4, tl = l % 4;
        m = mt * kRowTile + 2 * tl + (c & 1);
        n = NK ? n0 + 16 * a + gl + 8 * (c >> 1)
               : n0 + 8 * gl + 2 * a + (c >> 1);
      });
  if (p.counters)
    finishSplitTile<S>(p, n0, Cfg::kCols, 0, p.M);
}

// ---------------------------------------------------------------------------
// f32 on CUDA cores: 8 rows of x per grid.z slice, 4 x 8 sums per thread.
//  * W [N, K]: the block's 4 columns; lane l reads each at k0 + 4l .. + 3
//    (a warp reads 512 contiguous bytes of a row); the 32 sums of a lane
//    are reduced over the warp by halving exchanges (lane l ends with sum
//    l: column l / 8, row l % 8).
//  * W [K, N]: lane l owns columns n0 + 4l .. + 3 and walks rows k0 .. + 3
//    (a warp reads 512 contiguous bytes of each).

template <bool NK> struct FmaConfig {
  static constexpr int kWarps = 8;
  static constexpr int kCols = NK ? 4 : 128;
  static constexpr int kStepK = NK ? 128 : 4;
  static constexpr int kUnroll = 2;
  static constexpr int kAcc = NK ? 1 : 32;
};

struct FmaStep {
  float4 w[4]; ///< [N, K]: columns n0 + c; [K, N]: rows k0 + j
  float4 x[kRowTile];
};

__device__ __forceinline__ float4 gather4f(const float *p, int64_t count) {
  return make_float4(count > 0 ? p[0] : 0.0f, count > 1 ? p[1] : 0.0f,
                     count > 2 ? p[2] : 0.0f, count > 3 ? p[3] : 0.0f);
}

__device__ __forceinline__ float componentOf(const float4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// Lane l ends with the warp's sum of v[l] (31 exchanges; v is consumed).
__device__ __forceinline__ float reduceScatter(float (&v)[32]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int halving = 0; halving < 5; ++halving) {
    const int o = 16 >> halving;
    const bool upper = lane & o;
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i >= o) // (a constant bound would not unroll before the outer loop)
        continue;
      // Keep the half this lane ends in, send the partner the other.
      const float send = upper ? v[i] : v[i + o];
      const float keep = upper ? v[i + o] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
    }
  }
  return v[0];
}

template <bool NK, bool Vec>
__global__ void __launch_bounds__(32 * FmaConfig<NK>::kWarps)
    skinnyFmaKernel(SkinnyGroup group) {
  awaitInputs();
  using Cfg = FmaConfig<NK>;
  __shared__ float red[Cfg::kWarps * Cfg::kAcc * 32];
  const int lane = threadIdx.x % 32;
  int64_t tile = 0;
  const SkinnyParams p = memberOf(group, tile);
  const int64_t n0 = tile * Cfg::kCols;
  const int64_t m0 = static_cast<int64_t>(blockIdx.z) * kRowTile;
  const auto *x = static_cast<const float *>(p.x);
  const auto *w = static_cast<const float *>(p.w);
  const float *xRow[kRowTile]; // past the end: the last row, not stored
#pragma unroll
  for (int m = 0; m < kRowTile; ++m)
    xRow[m] = x + std::min<int64_t>(m0 + m, p.M - 1) * p.ldx;
  const int64_t col = n0 + 4 * lane;                      // [K, N]
  const int64_t colVec = std::min<int64_t>(col, p.N - 4); // Vec: N % 4 == 0

  auto load = [&](FmaStep &f, int64_t step) {
    const bool vec = Vec && (step + 1) * Cfg::kStepK <= p.K;
    const int64_t k = step * Cfg::kStepK + (NK ? 4 * lane : 0);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      if constexpr (NK) {
        const float *row = w + std::min<int64_t>(n0 + c, p.N - 1) * p.ldw + k;
        f.w[c] = vec ? __ldcs(reinterpret_cast<const float4 *>(row))
                     : gather4f(row, p.K - k);
      } else if (vec) {
        f.w[c] = __ldcs(
            reinterpret_cast<const float4 *>(w + (k + c) * p.ldw + colVec));
      } else {
        f.w[c] = k + c < p.K ? gather4f(w + (k + c) * p.ldw + col, p.N - col)
                             : make_float4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int m = 0; m < kRowTile; ++m)
      f.x[m] = vec ? __ldg(reinterpret_cast<const float4 *>(xRow[m] + k))
                   : gather4f(xRow[m] + k, p.K - k);
  };
  float acc[4][kRowTile] = {};
  auto compute = [&](const FmaStep &f) {
#pragma unroll
    for (int c = 0; c < 4; ++c)
#pragma unroll
      for (int m = 0; m < kRowTile; ++m) {
        const float4 xv = f.x[m];
        if constexpr (NK) {
          const float4 wv = f.w[c];
          acc[c][m] += wv.x * xv.x + wv.y * xv.y + wv.z * xv.z + wv.w * xv.w;
        } else {
          acc[c][m] +=
              componentOf(f.w[0], c) * xv.x + componentOf(f.w[1], c) * xv.y +
              componentOf(f.w[2], c) * xv.z + componentOf(f.w[3], c) * xv.w;
        }
      }
  };

  int64_t s, end;
  warpSteps<Cfg::kWarps>(p, Cfg::kStepK, s, end);
  // Every load of a batch is issued before the first is used (the batch
  // waits for memory once); a short slice is one partial batch.
  for (; s < end; s += Cfg::kUnroll) {
    FmaStep f[Cfg::kUnroll];
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u)
      if (s + u < end)
        load(f[u], s + u);
#pragma unroll
    for (int u = 0; u < Cfg::kUnroll; ++u)
      if (s + u < end)
        compute(f[u]);
  }

  float flat[32];
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int m = 0; m < kRowTile; ++m)
      flat[c * kRowTile + m] = acc[c][m];
  if constexpr (NK) {
    const float mine[1] = {reduceScatter(flat)};
    finishBlock<float, Cfg::kWarps>(p, mine, red,
                                    [&](int, int l, int64_t &m, int64_t &n) {
                                      n = n0 + l / kRowTile;
                                      m = m0 + l % kRowTile;
                                    });
  } else {
    finishBlock<float, Cfg::kWarps>(p, flat, red,
                                    [&](int i, int l, int64_t &m, int64_t &n) {
                                      n = n0 + 4 * l + i / kRowTile;
                                      m = m0 + i % kRowTile;
                                    });
  }
  if (p.counters)
    finishSplitTile<float>(p, n0, Cfg::kCols, m0, kRowTile);
}

// ---------------------------------------------------------------------------
// Host side.

/// How a problem is tiled (from its shape and dtype alone).
struct SkinnyGeometry {
  int rowTiles = 1;    ///< mma: x row tiles of 8 (MT: 1, 2 or 4)
  int64_t cols = 0;    ///< output columns per block
  int64_t stepK = 0;   ///< k per warp step
  int warps = 0;       ///< per block
  int64_t mGroups = 1; ///< f32: grid.z slices of 8 rows
};

template <bool NK, int MT> SkinnyGeometry mmaGeometry() {
  using Cfg = MmaConfig<NK, MT>;
  SkinnyGeometry g;
  g.rowTiles = MT;
  g.cols = Cfg::kCols;
  g.stepK = Cfg::kStepK;
  g.warps = Cfg::kWarps;
  return g;
}

SkinnyGeometry geometryOf(const GemmProblem &p) {
  const int mt = p.M <= 8 ? 1 : p.M <= 16 ? 2 : 4;
  if (p.dtype == DType::F32) {
    SkinnyGeometry g;
    g.cols = p.transB ? FmaConfig<true>::kCols : FmaConfig<false>::kCols;
    g.stepK = p.transB ? FmaConfig<true>::kStepK : FmaConfig<false>::kStepK;
    g.warps = FmaConfig<true>::kWarps;
    g.mGroups = (p.M + kRowTile - 1) / kRowTile;
    return g;
  }
  if (p.transB)
    return mt == 1   ? mmaGeometry<true, 1>()
           : mt == 2 ? mmaGeometry<true, 2>()
                     : mmaGeometry<true, 4>();
  return mt == 1   ? mmaGeometry<false, 1>()
         : mt == 2 ? mmaGeometry<false, 2>()
                   : mmaGeometry<false, 4>();
}

/// HYBRID_CUDA_EARLY_WEIGHTS=0 keeps every weight load after the wait for
/// the previous kernel (to measure what the early loads buy).
bool earlyWeightsAllowed() {
  static const bool allowed = [] {
    const char *v = std::getenv("HYBRID_CUDA_EARLY_WEIGHTS");
    return !(v && std::string(v) == "0");
  }();
  return allowed;
}

bool aligned(const void *ptr, size_t bytes) {
  return reinterpret_cast<uintptr_t>(ptr) % bytes == 0;
}

/// Whether every weight and x load can be one 16-byte word (x rows of the
/// 2-byte [K, N] kernel: 8 bytes): aligned bases, leading dimensions and
/// (for [K, N]) columns in whole words.
bool vectorLoads(const GemmProblem &p) {
  const int64_t perWord = p.dtype == DType::F32 ? 4 : 8;
  return aligned(p.A, 16) && aligned(p.B, 16) && p.lda % perWord == 0 &&
         p.ldb % perWord == 0 && (p.transB || p.N % perWord == 0);
}

template <typename S, bool NK, int MT>
void launchMma(const SkinnyGroup &sp, bool vec, dim3 grid,
               cudaStream_t stream) {
  constexpr int threads = 32 * MmaConfig<NK, MT>::kWarps;
  if constexpr (MT == 1) {
    const SkinnyParams &first = sp.member[0];
    if (first.norm != NormKind::None) {
      // The normalised rows are whole 16-byte words (skinnyGemmSupports).
      const size_t rows = static_cast<size_t>(first.M * first.K) * sizeof(S);
      if (vec)
        launch(skinnyMmaKernel<S, NK, MT, true, true>, grid, threads, rows,
               stream, sp);
      else
        launch(skinnyMmaKernel<S, NK, MT, false, true>, grid, threads, rows,
               stream, sp);
      return;
    }
  }
  if (vec)
    launch(skinnyMmaKernel<S, NK, MT, true>, grid, threads, 0, stream, sp);
  else
    launch(skinnyMmaKernel<S, NK, MT, false>, grid, threads, 0, stream, sp);
}

template <bool NK>
void launchFma(const SkinnyGroup &sp, bool vec, dim3 grid,
               cudaStream_t stream) {
  constexpr int threads = 32 * FmaConfig<NK>::kWarps;
  if (vec)
    launch(skinnyFmaKernel<NK, true>, grid, threads, 0, stream, sp);
  else
    launch(skinnyFmaKernel<NK, false>, grid, threads, 0, stream, sp);
}

} // namespace

bool skinnyGemmSupports(const GemmProblem &p) {
  const bool floating =
      p.dtype == DType::F32 || p.dtype == DType::BF16 || p.dtype == DType::F16;
  if (!(floating && p.batch == 1 && !p.transA && p.M >= 1 &&
        p.M <= kSkinnyMaxRows && p.N >= 1 && p.K >= 1 &&
        (p.N + 3) / 4 <= INT_MAX))
    return false;
  if (p.norm == NormKind::None)
    return true;
  // A prologue: 2-byte types, one row tile, rows of whole aligned 16-byte
  // words that the block's threads hold kNormChunks at a time.
  const int64_t threads = 32 * (p.transB ? MmaConfig<true, 1>::kWarps
                                         : MmaConfig<false, 1>::kWarps);
  return (p.norm == NormKind::LayerNorm || p.norm == NormKind::RmsNorm) &&
         p.dtype != DType::F32 && p.M <= kRowTile && p.K % 8 == 0 &&
         p.lda % 8 == 0 && aligned(p.A, 16) &&
         (!p.normWeight || aligned(p.normWeight, 16)) &&
         (!p.normBias || aligned(p.normBias, 16)) &&
         (p.norm == NormKind::LayerNorm || !p.normBias) &&
         p.M * p.K <= 8 * kNormChunks * threads;
}

size_t skinnyGemmScratchBytes(const GemmProblem &p, int splits) {
  return splits > 1 ? static_cast<size_t>(splits) * p.M * p.N * sizeof(float)
                    : 0;
}

std::vector<int> skinnySplitCandidates(const GemmProblem &p,
                                       size_t scratchBytes, int smCount) {
  std::vector<int> splits;
  if (!skinnyGemmSupports(p))
    return splits;
  splits.push_back(1);
  const SkinnyGeometry g = geometryOf(p);
  const int64_t blocks = (p.N + g.cols - 1) / g.cols * g.mGroups;
  const int64_t steps = (p.K + g.stepK - 1) / g.stepK;
  // Up to the first count that gives every multiprocessor two blocks.
  for (int s = 2; s <= kMaxSplits && blocks * (s / 2) < 2 * smCount; s *= 2) {
    if (int64_t(s) * g.warps > steps ||
        skinnyGemmScratchBytes(p, s) > scratchBytes)
      break;
    splits.push_back(s);
  }
  return splits;
}

size_t skinnyCounterCount(const GemmProblem &p) {
  const SkinnyGeometry g = geometryOf(p);
  return static_cast<size_t>((p.N + g.cols - 1) / g.cols * g.mGroups);
}

size_t skinnyGemmGroupScratchBytes(const GemmProblem *problems, size_t count,
                                   int splits) {
  size_t bytes = 0;
  for (size_t i = 0; i < count; ++i)
    bytes += skinnyGemmScratchBytes(problems[i], splits);
  return bytes;
}

size_t skinnyGroupCounterCount(const GemmProblem *problems, size_t count) {
  // Launches of up to kMaxGroupMembers run in turn and reuse the counters.
  size_t most = 0;
  for (size_t first = 0; first < count; first += kMaxGroupMembers) {
    size_t tiles = 0;
    for (size_t i = first; i < std::min(count, first + kMaxGroupMembers); ++i)
      tiles += skinnyCounterCount(problems[i]);
    most = std::max(most, tiles);
  }
  return most;
}

bool skinnyGemmGroupSupports(const GemmProblem *problems, size_t count) {
  if (count == 0)
    return false;
  const GemmProblem &a = problems[0];
  for (size_t i = 0; i < count; ++i) {
    const GemmProblem &p = problems[i];
    if (!skinnyGemmSupports(p) ||
        (count > 1 && (p.norm != NormKind::None || p.residual)) ||
        p.dtype != a.dtype || p.transB != a.transB || p.M != a.M ||
        p.K != a.K || p.A != a.A || p.lda != a.lda ||
        p.activation != a.activation)
      return false;
  }
  return true;
}

void skinnyGemmGroup(const GemmProblem *problems, size_t count, int splits,
                     void *scratch, size_t scratchBytes, cudaStream_t stream,
                     const char *kernel, unsigned *counters,
                     size_t counterCount) {
  if (!skinnyGemmGroupSupports(problems, count)) {
    const GemmProblem &p = problems[0];
    fail(kernel, "the skinny GEMM does not take this group of " +
                     std::to_string(count) + " products (the first " +
                     std::to_string(p.M) + " x " + std::to_string(p.K) + " x " +
                     std::to_string(p.N) + ", " + std::to_string(p.batch) +
                     " batches)");
  }
  if (splits < 1 || splits > 65535)
    fail(kernel, "invalid skinny GEMM split count " + std::to_string(splits));
  const size_t need = skinnyGemmGroupScratchBytes(problems, count, splits);
  if (need > scratchBytes)
    fail(kernel, "the skinny GEMM with " + std::to_string(splits) +
                     " splits needs " + std::to_string(need) +
                     " bytes of scratch, got " + std::to_string(scratchBytes));
  const bool countersFit =
      counters && counterCount >= skinnyGroupCounterCount(problems, count);
  // What the members share: the tiling, x, the split of K.
  const GemmProblem &shared = problems[0];
  const SkinnyGeometry g = geometryOf(shared);
  const int64_t steps = (shared.K + g.stepK - 1) / g.stepK;
  const int64_t slices = int64_t(splits) * g.warps;
  auto *partial = static_cast<float *>(scratch);
  for (size_t first = 0; first < count; first += kMaxGroupMembers) {
    const size_t last = std::min(count, first + kMaxGroupMembers);
    SkinnyGroup group;
    group.count = static_cast<int>(last - first);
    group.earlyWeights = earlyWeightsAllowed();
    int64_t tiles = 0;
    bool vec = true;
    for (size_t i = first; i < last; ++i) {
      const GemmProblem &p = problems[i];
      SkinnyParams &sp = group.member[i - first];
      sp.x = p.A;
      sp.w = p.B;
      sp.bias = p.bias;
      sp.residual = p.residual;
      sp.out = p.C;
      if (splits > 1) {
        sp.partial = partial;
        partial += static_cast<size_t>(splits) * p.M * p.N;
        sp.counters = countersFit ? counters : nullptr;
      }
      sp.M = p.M;
      sp.N = p.N;
      sp.K = p.K;
      sp.ldx = p.lda;
      sp.ldw = p.ldb;
      sp.ldc = p.ldc;
      sp.ldr = p.ldr;
      sp.activation = p.activation;
      sp.norm = p.norm;
      sp.normWeight = p.normWeight;
      sp.normBias = p.normBias;
      sp.normEpsilon = p.normEpsilon;
      sp.stepsPerSlice = (steps + slices - 1) / slices;
      group.earlyWeights = group.earlyWeights && p.settledB;
      group.firstTile[i - first] = static_cast<unsigned>(tiles);
      tiles += (p.N + g.cols - 1) / g.cols;
      vec = vec && vectorLoads(p);
    }
    if (tiles > INT_MAX)
      fail(kernel, "the skinny GEMM group has too many column tiles");
    const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(splits),
                    static_cast<unsigned>(g.mGroups));
    visitFloat(shared.dtype, kernel, "operands", [&](auto zero) {
      using S = decltype(zero);
      if constexpr (std::is_same_v<S, float>) {
        if (shared.transB)
          launchFma<true>(group, vec, grid, stream);
        else
          launchFma<false>(group, vec, grid, stream);
      } else {
        switch (g.rowTiles * (shared.transB ? 1 : -1)) {
        case 1:
          return launchMma<S, true, 1>(group, vec, grid, stream);
        case 2:
          return launchMma<S, true, 2>(group, vec, grid, stream);
        case 4:
          return launchMma<S, true, 4>(group, vec, grid, stream);
        case -1:
          return launchMma<S, false, 1>(group, vec, grid, stream);
        case -2:
          return launchMma<S, false, 2>(group, vec, grid, stream);
        default:
          return launchMma<S, false, 4>(group, vec, grid, stream);
        }
      }
    });
    checkLaunch(kernel);
    if (splits > 1 && !countersFit) {
      for (int i = 0; i < group.count; ++i) {
        const SkinnyParams &sp = group.member[i];
        visitFloat(shared.dtype, kernel, "operands", [&](auto zero) {
          using S = decltype(zero);
          launch(skinnyCombineKernel<S>, gridFor(sp.M * sp.N), kThreads, 0,
                 stream, sp, splits);
        });
        checkLaunch(kernel);
      }
    }
  }
}

void skinnyGemm(const GemmProblem &p, int splits, void *scratch,
                size_t scratchBytes, cudaStream_t stream, const char *kernel,
                unsigned *counters, size_t counterCount) {
  if (!skinnyGemmSupports(p))
    fail(kernel, "the skinny GEMM does not take a " + std::to_string(p.M) +
                     " x " + std::to_string(p.K) + " x " + std::to_string(p.N) +
                     " product of " + std::to_string(p.batch) + " batches");
  skinnyGemmGroup(&p, 1, splits, scratch, scratchBytes, stream, kernel,
                  counters, counterCount);
}

} // namespace hybrid::cuda
