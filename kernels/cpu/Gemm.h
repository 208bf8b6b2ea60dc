// The f32 matrix products behind matmul, linear and attention: OpenBLAS for
// large products, a simple loop for the many tiny ones of a decode step.
#pragma once

#include <cstdint>

namespace hybrid::cpu {

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major; op transposes when
/// the flag is set (A is then [K, M], B [N, K]). Calls OpenBLAS, which
/// threads internally: do not call it from inside a parallel region.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc);

/// C[M, N] = A[M, K] * B[K, N] (all contiguous) on the calling thread; for
/// products too small for BLAS call overhead, and safe in parallel regions.
void smallGemm(int64_t M, int64_t N, int64_t K, const float *A, const float *B,
               float *C);

/// Products below this many multiply-adds use smallGemm when batched.
constexpr int64_t kSmallGemmWork = 64 * 64 * 64;

} // namespace hybrid::cpu
