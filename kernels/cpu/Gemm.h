// The f32 matrix product behind matmul, linear and attention: OpenBLAS on
// one thread per call, split over the kernels' OpenMP threads, so a single
// thread pool serves every kernel (two pools spinning against each other on
// a small machine cost more than either saves).
#pragma once

#include <cstdint>

namespace hybrid::cpu {

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major; op transposes when
/// the flag is set (A is then [K, M], B [N, K]). Outside a parallel region a
/// large product is split into row or column blocks over the OpenMP
/// threads; inside one it runs on the calling thread. Throws hybrid::Error
/// when a size exceeds the 32-bit BLAS interface.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc);

/// Throws hybrid::Error naming `kernel` when a product of these sizes does
/// not fit the 32-bit BLAS interface; call before a parallel loop of gemms.
void checkGemmSizes(int64_t M, int64_t N, int64_t K, const char *kernel);

} // namespace hybrid::cpu
