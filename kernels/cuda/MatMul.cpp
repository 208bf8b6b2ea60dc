// matmul: NumPy matmul (batch broadcasting, 1-D promotion) on f32, bf16 and
// f16 through cuBLASLt: one GEMM when the right side has no batch (the left
// batches stack into a tall product), else strided batches along the
// innermost broadcast batch dimension (stride 0 repeats a matrix), one
// call per outer batch index.
#include "Check.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Strided.h"

namespace hybrid::cuda::kernels {
namespace {

struct MatMulShape {
  int64_t M = 0, N = 0, K = 0;
  Shape batchA, batchB, batch, out;
};

MatMulShape matmulShape(const CudaCall &call) {
  const ConstTensor &lhs = call.operands.at(0), &rhs = call.operands.at(1);
  if (lhs.rank() == 0 || rhs.rank() == 0)
    fail("matmul", "operands must have rank >= 1, got " +
                       shapeToString(lhs.shape) + " and " +
                       shapeToString(rhs.shape));
  // 1-D operands become a row (lhs) or a column (rhs) and that dimension is
  // dropped from the result.
  Shape a = lhs.shape, b = rhs.shape;
  const bool dropM = a.size() == 1, dropN = b.size() == 1;
  if (dropM)
    a.insert(a.begin(), 1);
  if (dropN)
    b.push_back(1);
  MatMulShape s;
  s.M = a[a.size() - 2];
  s.K = a.back();
  s.N = b.back();
  if (b[b.size() - 2] != s.K)
    fail("matmul", "inner dimensions of " + shapeToString(lhs.shape) + " and " +
                       shapeToString(rhs.shape) + " differ");
  s.batchA.assign(a.begin(), a.end() - 2);
  s.batchB.assign(b.begin(), b.end() - 2);
  s.batch = broadcastShapes({&s.batchA, &s.batchB}, "matmul");
  s.out = s.batch;
  if (!dropM)
    s.out.push_back(s.M);
  if (!dropN)
    s.out.push_back(s.N);
  return s;
}

} // namespace

void matmul(const CudaCall &call) {
  expectArity(call, "matmul", 2, 1);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectFloat(lhs.dtype, "matmul", "lhs");
  expectSameDType(rhs, lhs, "matmul", "rhs", "lhs");
  expectDType(result, lhs.dtype, "matmul", "result");
  const MatMulShape s = matmulShape(call);
  expectShape(result, s.out, "matmul", "result");
  if (result.numel() == 0)
    return;
  GemmProblem p;
  p.dtype = lhs.dtype;
  p.M = s.M;
  p.N = s.N;
  p.K = s.K;
  p.lda = s.K;
  p.ldb = s.N;
  p.ldc = s.N;
  const int64_t batches = numElements(s.batch);
  if (numElements(s.batchB) == 1 && numElements(s.batchA) == batches) {
    p.M = batches * s.M; // the lhs batches are consecutive rows
    p.A = lhs.data;
    p.B = rhs.data;
    p.C = result.data;
    gemm(call, p, "matmul");
    return;
  }
  // Strided batches along the innermost merged batch dimension.
  const StridedPlan<2> plan =
      broadcastPlan<2>(s.batch, {&s.batchA, &s.batchB}, "matmul");
  const int64_t inner = plan.rank == 0 ? 1 : plan.dims[plan.rank - 1];
  const size_t es = dtypeSize(lhs.dtype);
  p.batch = inner;
  p.strideA = plan.rank == 0 ? 0 : plan.strides[0][plan.rank - 1] * s.M * s.K;
  p.strideB = plan.rank == 0 ? 0 : plan.strides[1][plan.rank - 1] * s.K * s.N;
  p.strideC = s.M * s.N;
  for (int64_t first = 0; first < batches; first += inner) {
    int64_t off[2];
    plan.offsets(first, off);
    p.A = static_cast<const char *>(lhs.data) + off[0] * s.M * s.K * es;
    p.B = static_cast<const char *>(rhs.data) + off[1] * s.K * s.N * es;
    p.C = static_cast<char *>(result.data) + first * s.M * s.N * es;
    gemm(call, p, "matmul");
  }
}

size_t matmulScratchBytes(const CudaCall &) { return kGemmWorkspaceBytes; }

} // namespace hybrid::cuda::kernels
