// matmul: NumPy matmul (batch broadcasting, 1-D promotion) on f32, bf16 and
// f16 through cuBLASLt: one GEMM when the right side has no batch (the left
// batches stack into a tall product), else strided batches along the
// innermost broadcast batch dimension (stride 0 repeats a matrix), one
// call per outer batch index.
#include "Check.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Strided.h"

#include "common/MatMul.h"

namespace hybrid::cuda::kernels {

void matmul(const CudaCall &call) {
  const auto a = MatMulArgs::bind(call, "matmul");
  const MatMulProblem s = describeMatMul(a);
  if (a.out.numel() == 0)
    return;
  GemmProblem p;
  p.dtype = s.dtype;
  p.M = s.M;
  p.N = s.N;
  p.K = s.K;
  p.lda = s.K;
  p.ldb = s.N;
  p.ldc = s.N;
  const int64_t batches = numElements(s.batch);
  if (s.stacksRows()) {
    p.M = batches * s.M; // the lhs batches are consecutive rows
    p.A = a.lhs.data;
    p.B = a.rhs.data;
    p.C = a.out.data;
    gemm(call, p, "matmul");
    return;
  }
  // Strided batches along the innermost merged batch dimension.
  const StridedPlan<2> plan =
      broadcastPlan<2>(s.batch, {&s.batchA, &s.batchB}, "matmul");
  const int64_t inner = plan.rank == 0 ? 1 : plan.dims[plan.rank - 1];
  const size_t es = dtypeSize(s.dtype);
  p.batch = inner;
  p.strideA = plan.rank == 0 ? 0 : plan.strides[0][plan.rank - 1] * s.M * s.K;
  p.strideB = plan.rank == 0 ? 0 : plan.strides[1][plan.rank - 1] * s.K * s.N;
  p.strideC = s.M * s.N;
  for (int64_t first = 0; first < batches; first += inner) {
    int64_t off[2];
    plan.offsets(first, off);
    p.A = static_cast<const char *>(a.lhs.data) + off[0] * s.M * s.K * es;
    p.B = static_cast<const char *>(a.rhs.data) + off[1] * s.K * s.N * es;
    p.C = static_cast<char *>(a.out.data) + first * s.M * s.N * es;
    gemm(call, p, "matmul");
  }
}

size_t matmulScratchBytes(const CudaCall &) { return kGemmWorkspaceBytes; }

} // namespace hybrid::cuda::kernels
