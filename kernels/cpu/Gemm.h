// The matrix products behind matmul, linear and attention: our own f32
// GEMM whose every element is summed in one fixed order (below), split over
// the kernels' thread pool; bf16/f16 through the same f32 GEMM on blocks
// converted into the caller's scratch. Every CPU product, generation's and
// training's alike, goes through it: no path keeps a BLAS.
#pragma once

#include "hybrid/Ops.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::cpu {

/// C[M, N] = alpha * op(A) * op(B) + beta * C, row-major f32; op transposes
/// when the flag is set (A is then [K, M], B [N, K]).
///
/// Batch invariant: every element is computed as
///   t = beta == 0 ? 0 : beta * C[m][n]   (C unread when beta is 0)
///   for k = 0 .. K-1: t = fma(alpha * a[m][k], b[k][n], t)
///   C[m][n] = t
/// (alpha * a rounded, exact when alpha is 1), whatever M, N, the row's or
/// column's place in the matrix, the leading dimensions or the thread
/// split: a row gives the same bits in a batch of 1 and of 100. An AVX2+FMA
/// kernel runs this on CPUs that have both (checked when it runs; the build
/// targets plain x86-64), referenceGemm elsewhere, with the same bits.
/// Outside a parallel region a large product is split into blocks over the
/// pool's threads; inside one it runs on the calling thread. Uses no heap
/// (64 KB of stack per thread). Throws hybrid::Error when a size exceeds
/// INT_MAX.
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
          float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
          float beta, float *C, int64_t ldc);

/// gemm's sequence one element at a time on the calling thread, in plain
/// C++ (std::fma): the slow, obviously-correct oracle its tests compare
/// with bit for bit.
void referenceGemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K,
                   float alpha, const float *A, int64_t lda, const float *B,
                   int64_t ldb, float beta, float *C, int64_t ldc);

/// Throws hybrid::Error naming `kernel` when a product of these sizes
/// exceeds INT_MAX in a dimension; call before a parallel loop of gemms.
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
/// epilogue applied in f32, and each result element rounded once. Each
/// element's product is gemm's sequence over all of K (blocks of K continue
/// the previous block's sum), so it is batch invariant too. op(B) is
/// B [N, K] transposed when transB, else B [K, N]. Runs on up to `threads`
/// threads.
void convertingGemm(DType dtype, int64_t M, int64_t N, int64_t K, const void *A,
                    int64_t lda, const void *B, int64_t ldb, bool transB,
                    const GemmEpilogue &epilogue, void *C, int64_t ldc,
                    void *scratch, size_t perThread, int threads);

} // namespace hybrid::cpu
