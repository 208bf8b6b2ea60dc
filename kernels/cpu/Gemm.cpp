// The f32 matrix product behind matmul, linear and attention (see Gemm.h).
#include "Gemm.h"

#include "Parallel.h"
#include "hybrid/Types.h"

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
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads == 1 || M * N * K < kParallelGemmWork) {
    sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Split the longer side of C: columns keep each thread's share of B (the
  // weights, usually) to itself; rows do the same for A. Column blocks are
  // multiples of 16 to keep the BLAS kernels on full vectors.
  const bool splitRows = M >= N;
#pragma omp parallel num_threads(static_cast <int>(threads))
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    if (splitRows) {
      const int64_t m0 = M * t / n, m1 = M * (t + 1) / n;
      if (m1 > m0)
        sgemm(transA, transB, m1 - m0, N, K, alpha,
              transA ? A + m0 : A + m0 * lda, lda, B, ldb, beta, C + m0 * ldc,
              ldc);
    } else {
      const int64_t blocks = (N + 15) / 16;
      const int64_t n0 = std::min(N, blocks * t / n * 16),
                    n1 = std::min(N, blocks * (t + 1) / n * 16);
      if (n1 > n0)
        sgemm(transA, transB, M, n1 - n0, K, alpha, A, lda,
              transB ? B + n0 * ldb : B + n0, ldb, beta, C + n0, ldc);
    }
  }
}

} // namespace hybrid::cpu
