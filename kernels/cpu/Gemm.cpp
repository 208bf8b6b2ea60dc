// The f32 matrix products behind matmul, linear and attention (see Gemm.h).
#include "Gemm.h"

#include "hybrid/Types.h"

#include <cblas.h>
#include <climits>
#include <string>

namespace hybrid::cpu {

void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc) {
  if (M > INT_MAX || N > INT_MAX || K > INT_MAX || lda > INT_MAX ||
      ldb > INT_MAX || ldc > INT_MAX)
    throw Error("gemm: matrix of " + std::to_string(M) + "x" +
                std::to_string(N) + "x" + std::to_string(K) +
                " exceeds the 32-bit BLAS interface");
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, static_cast<int>(M),
              static_cast<int>(N), static_cast<int>(K), alpha, A,
              static_cast<int>(lda), B, static_cast<int>(ldb), beta, C,
              static_cast<int>(ldc));
}

void smallGemm(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
               float *C) {
  for (int64_t m = 0; m < M; ++m) {
    float *c = C + m * N;
    for (int64_t n = 0; n < N; ++n)
      c[n] = 0;
    const float *a = A + m * K;
    for (int64_t k = 0; k < K; ++k) {
      const float av = a[k];
      const float *b = B + k * N;
      for (int64_t n = 0; n < N; ++n)
        c[n] += av * b[n];
    }
  }
}

} // namespace hybrid::cpu
