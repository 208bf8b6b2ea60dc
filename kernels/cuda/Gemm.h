// Matrix products for matmul and linear: row-major C = op(A) op(B) (+ bias)
// through cuBLASLt (f32 compute, no TF32; bf16/f16 operands), batched with
// strides, the plan chosen once per shape and cached in the Context.
#pragma once

#include "cuda/CudaKernels.h"
#include "hybrid/Ops.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace hybrid::cuda {

/// cuBLASLt workspace a GEMM call declares as scratch (what NVIDIA
/// recommends for Hopper).
constexpr size_t kGemmWorkspaceBytes = size_t(32) << 20;

/// C[b] (M x N, leading dimension ldc) = op(A[b]) op(B[b]) (+ bias[N]), then
/// the activation, then + residual[b] (see below), for
/// b < batch, all row-major with element strides between batches (0
/// repeats a matrix). op(A) is A [M, K] (lda), or A stored [K, M] when
/// transA; op(B) is B [K, N] (ldb), or B stored [N, K] when transB. A, B,
/// C and bias share `dtype` (f32, bf16 or f16); products accumulate in f32.
struct GemmProblem {
  DType dtype = DType::F32;
  bool transA = false, transB = false;
  int64_t M = 0, N = 0, K = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  const void *A = nullptr, *B = nullptr;
  const void *bias = nullptr;
  void *C = nullptr;
  /// The epilogue after bias (a linear layer's): the activation, then
  /// residual [M, N] (leading dimension ldr, batch stride strideR) added;
  /// one rounding of each element.
  Activation activation = Activation::None;
  const void *residual = nullptr;
  int64_t ldr = 0, strideR = 0;
  /// The prologue (a linear's norm; only our kernels apply it, see
  /// skinnyGemmSupports and streamGemvSupports): each row of A normalised over
  /// its K elements as layer_norm / rms_norm with normEpsilon, times
  /// normWeight[K] (+ normBias[K]) when given, rounded to dtype, before the
  /// product.
  NormKind norm = NormKind::None;
  const void *normWeight = nullptr, *normBias = nullptr;
  double normEpsilon = 0;
  /// B is settled (CudaCall::settledOperands): the skinny kernel may start
  /// reading it before the kernel before it on the stream has finished.
  /// Changes when bytes are read, never the result.
  bool settledB = false;
};

/// Enqueues the product on the call's stream with the call's scratch as
/// workspace; throws naming `kernel` when a CUDA or cuBLASLt call fails,
/// or for a prologue that gemmTakesPrologue declines.
void gemm(const CudaCall &call, const GemmProblem &problem, const char *kernel);

/// Enqueues gemm() of every problem (`count`; a linear group's members,
/// sharing A, M, K, the dtype and the epilogue's activation): as one skinny
/// launch when each member's own plan chose the skinny kernel, else one
/// member after another (Gemm.cu says why).
void gemmGroup(const CudaCall &call, const GemmProblem *problems, size_t count,
               const char *kernel);

/// Whether gemm() applies `problem`'s norm prologue itself (the skinny
/// kernel or the streaming GEMV, allowed and able to take the product);
/// otherwise the caller normalises A first and passes a problem without
/// one.
bool gemmTakesPrologue(const CudaCall &call, const GemmProblem &problem);

/// Our own tiled kernel for products cuBLASLt cannot run (no algorithm for
/// the shape, K == 0, or more batches than it takes); same semantics.
void fallbackGemm(const GemmProblem &problem, cudaStream_t stream,
                  const char *kernel);

} // namespace hybrid::cuda
