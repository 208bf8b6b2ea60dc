// The matrix products behind matmul, linear and attention (see Gemm.h): our
// own fixed-order f32 GEMM, an AVX2+FMA register-blocked kernel where the
// CPU has it and the scalar oracle elsewhere, both rounding alike.
#include "Gemm.h"

#include "Activation.h"
#include "Element.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HYBRID_GEMM_AVX2 1
#include <immintrin.h>
#endif

namespace hybrid::cpu {
namespace {

/// One product's operands; a(m, k) and b(k, n) read through the transpose
/// flags.
struct GemmProblem {
  bool transA, transB;
  int64_t M, N, K;
  float alpha;
  const float *A;
  int64_t lda;
  const float *B;
  int64_t ldb;
  float beta;
  float *C;
  int64_t ldc;

  float a(int64_t m, int64_t k) const {
    return transA ? A[k * lda + m] : A[m * lda + k];
  }
  float b(int64_t k, int64_t n) const {
    return transB ? B[n * ldb + k] : B[k * ldb + n];
  }
};

/// Rows [m0, m1) x columns [n0, n1) of C, one element at a time: the
/// sequence of Gemm.h spelled out. The oracle of the fast kernel and the
/// path of CPUs without AVX2 and FMA (std::fma rounds as the instruction
/// does, so both give the same bits).
void referenceBlock(const GemmProblem &p, int64_t m0, int64_t m1, int64_t n0,
                    int64_t n1) {
  for (int64_t m = m0; m < m1; ++m)
    for (int64_t n = n0; n < n1; ++n) {
      float *c = p.C + m * p.ldc + n;
      float t = p.beta == 0.0f ? 0.0f : p.beta * *c;
      for (int64_t k = 0; k < p.K; ++k)
        t = std::fma(p.alpha * p.a(m, k), p.b(k, n), t);
      *c = t;
    }
}

#ifdef HYBRID_GEMM_AVX2

/// Register tile of the AVX2 kernel: 6 rows x 16 columns keep 12
/// accumulators, 2 of B and a broadcast of A in the 16 ymm registers.
constexpr int64_t kTileRows = 6, kTileCols = 16;
/// Depth of one packed chunk of B and columns packed together: 256 x 64
/// floats (64 KB of stack) stay in L2 while every row tile runs over them.
/// Partial sums wait in C between chunks, as floats, so chunking changes no
/// rounding.
constexpr int64_t kDepthChunk = 256, kPackCols = 64;

/// Lane masks for the first `cols` of 8 columns.
__attribute__((target("avx2"), always_inline)) inline __m256i
laneMask(int64_t cols) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(
      _mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(cols, 0, 8))),
      lanes);
}

/// The accumulators of one tile row: columns [0, 8) and [8, 16).
struct TileRow {
  __m256 lo, hi;
};

#define HYBRID_AVX2_INLINE                                                     \
  __attribute__((target("avx2,fma"), always_inline)) inline

/// A tile row's accumulators at the start of a chunk: 0 (first chunk, beta
/// 0: C unread), beta * C (first chunk) or the partial sums in C.
HYBRID_AVX2_INLINE TileRow loadRow(const float *cr, int64_t cols, bool first,
                                   float beta) {
  if (first && beta == 0.0f)
    return {_mm256_setzero_ps(), _mm256_setzero_ps()};
  TileRow t;
  if (cols == kTileCols) {
    t = {_mm256_loadu_ps(cr), _mm256_loadu_ps(cr + 8)};
  } else {
    t = {_mm256_maskload_ps(cr, laneMask(cols)),
         _mm256_maskload_ps(cr + 8, laneMask(cols - 8))};
  }
  if (first) {
    const __m256 vb = _mm256_set1_ps(beta);
    t = {_mm256_mul_ps(vb, t.lo), _mm256_mul_ps(vb, t.hi)};
  }
  return t;
}

HYBRID_AVX2_INLINE void storeRow(float *cr, int64_t cols, const TileRow &t) {
  if (cols == kTileCols) {
    _mm256_storeu_ps(cr, t.lo);
    _mm256_storeu_ps(cr + 8, t.hi);
  } else {
    _mm256_maskstore_ps(cr, laneMask(cols), t.lo);
    _mm256_maskstore_ps(cr + 8, laneMask(cols - 8), t.hi);
  }
}

/// One step of k for one row: acc += (alpha * a) * b, one FMA per lane.
template <bool Scaled>
HYBRID_AVX2_INLINE void stepRow(const float *a, __m256 b0, __m256 b1, __m256 va,
                                TileRow &acc) {
  __m256 x = _mm256_broadcast_ss(a);
  if constexpr (Scaled)
    x = _mm256_mul_ps(va, x);
  acc.lo = _mm256_fmadd_ps(x, b0, acc.lo);
  acc.hi = _mm256_fmadd_ps(x, b1, acc.hi);
}

/// rows x cols (cols <= 16) of C over depth [k0, k0 + kc), each step one
/// FMA per element. `a` points at a(m0, k0); rowStep and depthStep walk A;
/// `panel` holds b(k0 + k, n0 + j) at [k * panelStep + j], zero past
/// `cols` (a packed panel, or B itself when it is not transposed and full).
/// The six rows are named variables, not an array: GCC keeps an array of
/// vectors in memory through the loop, at a third of the speed; the lane
/// masks of edge tiles are made outside the loop for the same reason.
template <int Rows, bool Scaled>
__attribute__((target("avx2,fma"))) void
tileAvx2(const float *a, int64_t rowStep, int64_t depthStep, const float *panel,
         int64_t panelStep, int64_t kc, float *c, int64_t ldc, int64_t cols,
         bool first, float alpha, float beta) {
  const TileRow zero{_mm256_setzero_ps(), _mm256_setzero_ps()};
  TileRow r0 = loadRow(c, cols, first, beta);
  TileRow r1 = Rows > 1 ? loadRow(c + ldc, cols, first, beta) : zero;
  TileRow r2 = Rows > 2 ? loadRow(c + 2 * ldc, cols, first, beta) : zero;
  TileRow r3 = Rows > 3 ? loadRow(c + 3 * ldc, cols, first, beta) : zero;
  TileRow r4 = Rows > 4 ? loadRow(c + 4 * ldc, cols, first, beta) : zero;
  TileRow r5 = Rows > 5 ? loadRow(c + 5 * ldc, cols, first, beta) : zero;
  const __m256 va = _mm256_set1_ps(alpha);
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(panel + k * panelStep);
    const __m256 b1 = _mm256_loadu_ps(panel + k * panelStep + 8);
    const float *ak = a + k * depthStep;
    stepRow<Scaled>(ak, b0, b1, va, r0);
    if constexpr (Rows > 1)
      stepRow<Scaled>(ak + rowStep, b0, b1, va, r1);
    if constexpr (Rows > 2)
      stepRow<Scaled>(ak + 2 * rowStep, b0, b1, va, r2);
    if constexpr (Rows > 3)
      stepRow<Scaled>(ak + 3 * rowStep, b0, b1, va, r3);
    if constexpr (Rows > 4)
      stepRow<Scaled>(ak + 4 * rowStep, b0, b1, va, r4);
    if constexpr (Rows > 5)
      stepRow<Scaled>(ak + 5 * rowStep, b0, b1, va, r5);
  }
  storeRow(c, cols, r0);
  if constexpr (Rows > 1)
    storeRow(c + ldc, cols, r1);
  if constexpr (Rows > 2)
    storeRow(c + 2 * ldc, cols, r2);
  if constexpr (Rows > 3)
    storeRow(c + 3 * ldc, cols, r3);
  if constexpr (Rows > 4)
    storeRow(c + 4 * ldc, cols, r4);
  if constexpr (Rows > 5)
    storeRow(c + 5 * ldc, cols, r5);
}

using TileFn = void (*)(const float *, int64_t, int64_t, const float *, int64_t,
                        int64_t, float *, int64_t, int64_t, bool, float, float);

template <bool Scaled>
constexpr TileFn kTiles[kTileRows + 1] = {nullptr,
                                          tileAvx2<1, Scaled>,
                                          tileAvx2<2, Scaled>,
                                          tileAvx2<3, Scaled>,
                                          tileAvx2<4, Scaled>,
                                          tileAvx2<5, Scaled>,
                                          tileAvx2<6, Scaled>};

/// dst[i * ldd + r] = src[r * lds + i] for an 8 x 8 block.
__attribute__((target("avx2"))) void transpose8(const float *src, int64_t lds,
                                                float *dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i)
    r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ldd,
                     _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd,
                     _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

/// Copies b(k0 + k, n0 + j) for k < kc, j < cols into panels of 16 columns
/// ([panel][k][16], zero past `cols`).
__attribute__((target("avx2"))) void packB(const GemmProblem &p, int64_t k0,
                                           int64_t kc, int64_t n0, int64_t cols,
                                           float *packed) {
  for (int64_t j0 = 0; j0 < cols; j0 += kTileCols) {
    float *panel = packed + j0 * kc;
    const int64_t width = std::min(kTileCols, cols - j0);
    if (!p.transB) {
      const float *src = p.B + k0 * p.ldb + n0 + j0;
      if (width == kTileCols) {
        for (int64_t k = 0; k < kc; ++k) {
          const float *s = src + k * p.ldb;
          _mm256_store_ps(panel + k * kTileCols, _mm256_loadu_ps(s));
          _mm256_store_ps(panel + k * kTileCols + 8, _mm256_loadu_ps(s + 8));
        }
      } else {
        for (int64_t k = 0; k < kc; ++k)
          for (int64_t j = 0; j < kTileCols; ++j)
            panel[k * kTileCols + j] = j < width ? src[k * p.ldb + j] : 0.0f;
      }
      continue;
    }
    // B [N, K]: each column is a contiguous row of B; full panels go by
    // 8 x 8 transposes in registers, the rest element by element.
    int64_t done = 0;
    if (width == kTileCols) {
      for (; done + 8 <= kc; done += 8)
        for (int64_t j = 0; j < kTileCols; j += 8)
          transpose8(p.B + (n0 + j0 + j) * p.ldb + k0 + done, p.ldb,
                     panel + done * kTileCols + j, kTileCols);
    }
    for (int64_t j = 0; j < kTileCols; ++j) {
      if (j >= width) {
        for (int64_t k = done; k < kc; ++k)
          panel[k * kTileCols + j] = 0.0f;
        continue;
      }
      const float *src = p.B + (n0 + j0 + j) * p.ldb + k0;
      for (int64_t k = done; k < kc; ++k)
        panel[k * kTileCols + j] = src[k];
    }
  }
}

/// Rows [m0, m1) x columns [n0, n1) of C on the calling thread.
__attribute__((target("avx2,fma"))) void avx2Block(const GemmProblem &p,
                                                   int64_t m0, int64_t m1,
                                                   int64_t n0, int64_t n1) {
  alignas(64) float packed[kDepthChunk * kPackCols];
  const TileFn *tiles = p.alpha == 1.0f ? kTiles<false> : kTiles<true>;
  const int64_t rowStep = p.transA ? 1 : p.lda;
  const int64_t depthStep = p.transA ? p.lda : 1;
  if (!p.transB && m1 - m0 <= kTileRows) {
    // One row tile (a decode step): B is read once either way, so full
    // panels are read in place, over all of K at once.
    const int64_t rows = m1 - m0;
    const float *a = p.A + m0 * rowStep;
    int64_t c0 = n0;
    for (; c0 + kTileCols <= n1; c0 += kTileCols)
      tiles[rows](a, rowStep, depthStep, p.B + c0, p.ldb, p.K,
                  p.C + m0 * p.ldc + c0, p.ldc, kTileCols, true, p.alpha,
                  p.beta);
    n0 = c0; // the last partial panel goes through packing
  }
  for (int64_t c0 = n0; c0 < n1; c0 += kPackCols) {
    const int64_t cols = std::min(kPackCols, n1 - c0);
    // K = 0 still runs one (empty) chunk: C becomes beta * C.
    for (int64_t k0 = 0; k0 < std::max<int64_t>(p.K, 1); k0 += kDepthChunk) {
      const int64_t kc = std::clamp<int64_t>(p.K - k0, 0, kDepthChunk);
      packB(p, k0, kc, c0, cols, packed);
      for (int64_t m = m0; m < m1; m += kTileRows) {
        const int64_t rows = std::min(kTileRows, m1 - m);
        const float *a = p.A + m * rowStep + k0 * depthStep;
        for (int64_t j0 = 0; j0 < cols; j0 += kTileCols)
          tiles[rows](a, rowStep, depthStep, packed + j0 * kc, kTileCols, kc,
                      p.C + m * p.ldc + c0 + j0, p.ldc,
                      std::min(kTileCols, cols - j0), k0 == 0, p.alpha, p.beta);
      }
    }
  }
}

bool haveAvx2Fma() {
  static const bool have =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return have;
}

#endif // HYBRID_GEMM_AVX2

void gemmBlock(const GemmProblem &p, int64_t m0, int64_t m1, int64_t n0,
               int64_t n1) {
#ifdef HYBRID_GEMM_AVX2
  if (haveAvx2Fma()) {
    avx2Block(p, m0, m1, n0, n1);
    return;
  }
#endif
  referenceBlock(p, m0, m1, n0, n1);
}

/// Products below this many multiply-adds stay on one thread (see
/// kParallelMinWork).
constexpr int64_t kParallelGemmWork = 1 << 20;

/// Column blocks of the thread split: whole packed groups, so a thread
/// packs only the columns it computes.
constexpr int64_t kSplitCols = 64;

/// Block sizes of convertingGemm: large enough that the f32 GEMM runs near
/// its peak, small enough that converting A once per column block and B
/// once per row block adds about 1% to the work.
constexpr int64_t kBlockM = 128, kBlockN = 256, kBlockK = 256;

struct ConvertBlocks {
  int64_t mb, nb, kb;
};

ConvertBlocks convertBlocks(int64_t M, int64_t N, int64_t K) {
  return {std::max<int64_t>(1, std::min(M, kBlockM)),
          std::max<int64_t>(1, std::min(N, kBlockN)),
          std::max<int64_t>(1, std::min(K, kBlockK))};
}

template <typename S>
void convertingGemmOf(int64_t M, int64_t N, int64_t K, const S *A, int64_t lda,
                      const S *B, int64_t ldb, bool transB,
                      const GemmEpilogue &epilogue, S *C, int64_t ldc,
                      char *scratch, size_t perThread, int threads) {
  const S *bias = static_cast<const S *>(epilogue.bias);
  const S *residual = static_cast<const S *>(epilogue.residual);
  const Activation act = epilogue.activation;
  const ConvertBlocks blocks = convertBlocks(M, N, K);
  const int64_t tilesM = (M + blocks.mb - 1) / blocks.mb;
  const int64_t tilesN = (N + blocks.nb - 1) / blocks.nb;
  const bool parallel = M * N * std::max<int64_t>(K, 1) >= kParallelGemmWork;
  parallelChunkIndices(
      tilesM * tilesN, parallel ? threads : 1, [&](int64_t tile) {
        Carve carve(scratch + perThread * workerSlot());
        float *a = carve.take<float>(blocks.mb * blocks.kb);
        float *b = carve.take<float>(blocks.kb * blocks.nb);
        float *c = carve.take<float>(blocks.mb * blocks.nb);
        const int64_t i0 = tile / tilesN * blocks.mb,
                      j0 = tile % tilesN * blocks.nb;
        const int64_t mm = std::min(blocks.mb, M - i0),
                      nn = std::min(blocks.nb, N - j0);
        if (K == 0)
          std::fill(c, c + mm * nn, 0.0f);
        // Chunks of K continue each element's sum from the previous
        // chunk's (beta 1): the sequence of one product over all of K.
        for (int64_t k0 = 0; k0 < K; k0 += blocks.kb) {
          const int64_t kk = std::min(blocks.kb, K - k0);
          for (int64_t i = 0; i < mm; ++i)
            for (int64_t k = 0; k < kk; ++k)
              a[i * kk + k] = toFloat(A[(i0 + i) * lda + k0 + k]);
          if (transB) {
            for (int64_t j = 0; j < nn; ++j)
              for (int64_t k = 0; k < kk; ++k)
                b[j * kk + k] = toFloat(B[(j0 + j) * ldb + k0 + k]);
          } else {
            for (int64_t k = 0; k < kk; ++k)
              for (int64_t j = 0; j < nn; ++j)
                b[k * nn + j] = toFloat(B[(k0 + k) * ldb + j0 + j]);
          }
          gemmBlock({false, transB, mm, nn, kk, 1.0f, a, kk, b,
                     transB ? kk : nn, k0 == 0 ? 0.0f : 1.0f, c, nn},
                    0, mm, 0, nn);
        }
        for (int64_t i = 0; i < mm; ++i) {
          S *row = C + (i0 + i) * ldc + j0;
          const S *res =
              residual ? residual + (i0 + i) * epilogue.ldr + j0 : nullptr;
          const float *ci = c + i * nn;
          for (int64_t j = 0; j < nn; ++j) {
            float v = ci[j];
            if (bias)
              v += toFloat(bias[j0 + j]);
            v = activate(act, v);
            if (res)
              v += toFloat(res[j]);
            row[j] = fromFloat<S>(v);
          }
        }
      });
}

} // namespace

void checkGemmSizes(int64_t M, int64_t N, int64_t K, const char *kernel) {
  // Leading dimensions are at most max(M, N, K) in every caller.
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX)
    throw Error(std::string(kernel) + ": a product of " + std::to_string(M) +
                "x" + std::to_string(K) + " by " + std::to_string(K) + "x" +
                std::to_string(N) + " exceeds the 32-bit GEMM interface");
}

void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc) {
  if (std::max({M, N, K, lda, ldb, ldc}) > INT_MAX)
    throw Error("gemm: sizes exceed the 32-bit GEMM interface");
  if (M == 0 || N == 0)
    return;
  const GemmProblem p{transA, transB, M,   N,    K, alpha, A,
                      lda,    B,      ldb, beta, C, ldc};
  const int threads = inParallelLoop() ? 1 : numThreads();
  if (threads == 1 || M * N * K < kParallelGemmWork) {
    gemmBlock(p, 0, M, 0, N);
    return;
  }
  // Column blocks first (each thread packs only its columns of B, the
  // weights usually); rows split as well when there are too few of them to
  // go round. Every element is computed whole by one thread, so the split
  // changes no bits.
  const int64_t chunks = threads * kChunksPerThread;
  const int64_t colBlocks = (N + kSplitCols - 1) / kSplitCols;
  const int64_t rowBlocks = std::clamp<int64_t>(
      (chunks + colBlocks - 1) / colBlocks, 1, (M + 23) / 24);
  parallelChunkIndices(rowBlocks * colBlocks, threads, [&](int64_t c) {
    const int64_t r = c / colBlocks, b = c % colBlocks;
    const int64_t n0 = b * kSplitCols, n1 = std::min(N, n0 + kSplitCols);
    gemmBlock(p, M * r / rowBlocks, M * (r + 1) / rowBlocks, n0, n1);
  });
}

void referenceGemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
                   float alpha, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float beta, float *C, int64_t ldc) {
  referenceBlock({transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc},
                 0, M, 0, N);
}

size_t convertingGemmScratch(int64_t M, int64_t N, int64_t K) {
  const ConvertBlocks b = convertBlocks(M, N, K);
  Carve carve;
  carve.take<float>(b.mb * b.kb);
  carve.take<float>(b.kb * b.nb);
  carve.take<float>(b.mb * b.nb);
  return carve.used();
}

void convertingGemm(DType dtype, int64_t M, int64_t N, int64_t K, const void *A,
                    int64_t lda, const void *B, int64_t ldb, bool transB,
                    const GemmEpilogue &epilogue, void *C, int64_t ldc,
                    void *scratch, size_t perThread, int threads) {
  if (M == 0 || N == 0)
    return;
  auto run = [&](auto zero) {
    using S = decltype(zero);
    convertingGemmOf<S>(M, N, K, static_cast<const S *>(A), lda,
                        static_cast<const S *>(B), ldb, transB, epilogue,
                        static_cast<S *>(C), ldc, static_cast<char *>(scratch),
                        perThread, threads);
  };
  if (dtype == DType::BF16)
    run(Bf16{});
  else
    run(F16{});
}

} // namespace hybrid::cpu
