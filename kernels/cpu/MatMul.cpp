// matmul: NumPy matmul on f32 (batch broadcasting, 1-D promotion), one GEMM
// per batch or a single folded GEMM when the right side has no batch.
#include "Broadcast.h"
#include "Gemm.h"
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>

namespace hybrid::cpu::kernels {

void matmul(const KernelCall &call) {
  expectArity(call, "matmul", 2, 1);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(lhs, DType::F32, "matmul", "lhs");
  expectDType(rhs, DType::F32, "matmul", "rhs");
  expectDType(result, DType::F32, "matmul", "result");
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
  const int64_t M = a[a.size() - 2], K = a.back();
  const int64_t N = b.back();
  if (b[b.size() - 2] != K)
    fail("matmul", "inner dimensions of " + shapeToString(lhs.shape) + " and " +
                       shapeToString(rhs.shape) + " differ");
  const Shape batchA(a.begin(), a.end() - 2), batchB(b.begin(), b.end() - 2);
  const Shape batch = broadcastShapes({batchA, batchB}, "matmul");
  Shape outShape = batch;
  if (!dropM)
    outShape.push_back(M);
  if (!dropN)
    outShape.push_back(N);
  expectShape(result, outShape, "matmul", "result");
  if (result.numel() == 0)
    return;
  const float *A = lhs.as<float>();
  const float *B = rhs.as<float>();
  float *C = result.as<float>();
  if (K == 0) {
    std::fill(C, C + result.numel(), 0.0f);
    return;
  }

  checkGemmSizes(M, N, K, "matmul");
  // A right side without batch: the lhs batches stack into one tall GEMM.
  const int64_t batches = numElements(batch);
  if (numElements(batchB) == 1 && numElements(batchA) == batches) {
    gemm(false, false, batches * M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    return;
  }
  // Matrix index pairs of every batch, in result order.
  std::vector<int64_t> aIndex(batches), bIndex(batches);
  BroadcastWalk walk(batch, {batchA, batchB}, "matmul");
  walk.forSpans(0, batches,
                [&](int64_t first, const int64_t *off, int64_t len) {
                  for (int64_t i = 0; i < len; ++i) {
                    aIndex[first + i] = off[0] + i * walk.rowStride(0);
                    bIndex[first + i] = off[1] + i * walk.rowStride(1);
                  }
                });
  // Batches in parallel (each product on its thread); a single large batch
  // parallelises inside gemm instead.
  parallelFor(batches, M * N * K, [&](int64_t i) {
    gemm(false, false, M, N, K, 1.0f, A + aIndex[i] * M * K, K,
         B + bIndex[i] * K * N, N, 0.0f, C + i * M * N, N);
  });
}

} // namespace hybrid::cpu::kernels
