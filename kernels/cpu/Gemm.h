// The matrix products behind matmul and linear: f32 through OpenBLAS on one
// thread per call, split over the kernels' OpenMP threads, so a single
// thread pool serves every kernel (two pools spinning against each other on
// a small machine cost more than either saves); bf16/f16 through the same
// f32 GEMM on blocks converted into the caller's scratch.
#pragma once

#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::cpu {

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major f32; op transposes
/// when the flag is set (A is then [K, M], B [N, K]). Outside a parallel
/// region a large product is split into row or column blocks over the
/// OpenMP threads; inside one it runs on the calling thread. Throws
/// hybrid::Error when a size exceeds the 32-bit BLAS interface.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc);

/// Throws hybrid::Error naming `kernel` when a product of these sizes does
/// not fit the 32-bit BLAS interface; call before a parallel loop of gemms.
void checkGemmSizes(int64_t M, int64_t N, int64_t K, const char *kernel);

/// Scratch bytes per thread of convertingGemm for an [M, K] x [K, N]
/// product.
size_t convertingGemmScratch(int64_t M, int64_t N, int64_t K);

/// What a product's result gets before it is stored (a linear layer's
/// epilogue): bias[N] added, the activation applied, residual[M, N]
/// (leading dimension ldr) added, in that order; null pointers skip.
/// Pointers are of the product's dtype.
struct GemmEpilogue {
  const void *bias = nullptr;
  Activation activation = Activation::None;
  const void *residual = nullptr;
  int64_t ldr = 0;
};

/// C[M, N] = epilogue(A[M, K] * op(B)) for bf16 or f16 operands (`dtype`)
/// and result: blocks of A and B are converted to f32 in each thread's
/// `perThread` bytes of `scratch`, multiplied by the f32 GEMM, the
/// epilogue applied in f32, and each result element rounded once. op(B) is
/// B [N, K] transposed when transB, else B [K, N]. Runs on up to `threads`
/// threads.
void convertingGemm(DType dtype, int64_t M, int64_t N, int64_t K, const void *A,
                    int64_t lda, const void *B, int64_t ldb, bool transB,
                    const GemmEpilogue &epilogue, void *C, int64_t ldc,
                    void *scratch, size_t perThread, int threads);

} // namespace hybrid::cpu
