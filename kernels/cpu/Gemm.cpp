// The matrix products behind matmul and linear (see Gemm.h).
#include "Gemm.h"

#include "Activation.h"
#include "Element.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>
#include <cblas.h>
#include <climits>
#include <string>

namespace hybrid::cpu {
namespace {

/// OpenBLAS keeps its own thread pool; pin it to one thread so that only
/// OpenMP threads run (see Gemm.h). Done once, before the first product.
void useSingleThreadedBlas() {
#ifdef HYBRID_HAVE_OPENBLAS
  static const bool once = (openblas_set_num_threads(1), true);
  (void)once;
#endif
}

void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
           float alpha, const float *A, int64_t lda, const float *B,
           int64_t ldb, float beta, float *C, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
              static_cast<int>(ldc));
}

/// Products below this many multiply-adds stay on one thread (see
/// kParallelMinWork).
constexpr int64_t kParallelGemmWork = 1 << 20;

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
          sgemm(false, transB, mm, nn, kk, 1.0f, a, kk, b, transB ? kk : nn,
                k0 == 0 ? 0.0f : 1.0f, c, nn);
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
                std::to_string(N) + " exceeds the 32-bit BLAS interface");
}

void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc) {
  if (std::max({M, N, K, lda, ldb, ldc}) > INT_MAX)
    throw Error("gemm: sizes exceed the 32-bit BLAS interface");
  if (M == 0 || N == 0)
    return;
  useSingleThreadedBlas();
  const int threads = inParallelLoop() ? 1 : numThreads();
  if (threads == 1 || M * N * K < kParallelGemmWork) {
    sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Split the longer side of C into a few blocks per thread: columns keep
  // each block's share of B (the weights, usually) to itself; rows do the
  // same for A. Column blocks are multiples of 16 to keep the BLAS kernels
  // on full vectors.
  if (M >= N) {
    const int64_t chunks = std::min<int64_t>(M, threads * kChunksPerThread);
    parallelChunkIndices(chunks, threads, [&](int64_t c) {
      const int64_t m0 = M * c / chunks, m1 = M * (c + 1) / chunks;
      if (m1 > m0)
        sgemm(transA, transB, m1 - m0, N, K, alpha,
              transA ? A + m0 : A + m0 * lda, lda, B, ldb, beta, C + m0 * ldc,
              ldc);
    });
  } else {
    const int64_t blocks = (N + 15) / 16;
    const int64_t chunks =
        std::min<int64_t>(blocks, threads * kChunksPerThread);
    parallelChunkIndices(chunks, threads, [&](int64_t c) {
      const int64_t n0 = std::min(N, blocks * c / chunks * 16),
                    n1 = std::min(N, blocks * (c + 1) / chunks * 16);
      if (n1 > n0)
        sgemm(transA, transB, M, n1 - n0, K, alpha, A, lda,
              transB ? B + n0 * ldb : B + n0, ldb, beta, C + n0, ldc);
    });
  }
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
  useSingleThreadedBlas();
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
