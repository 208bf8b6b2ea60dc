// matmul: NumPy matmul (batch broadcasting, 1-D promotion) on f32, bf16 and
// f16: one GEMM per batch, or a single folded GEMM when the right side has
// no batch; narrow types multiply converted blocks in scratch.
#include "Broadcast.h"
#include "Element.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>

namespace hybrid::cpu::kernels {
namespace {

struct MatMulShape {
  int64_t M = 0, N = 0, K = 0;
  Shape batchA, batchB, batch, out;
};

MatMulShape matmulShape(const KernelCall &call) {
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

/// bf16/f16 products convert blocks per thread; f32 needs nothing.
ScratchLayout matmulScratch(const KernelCall &call) {
  if (call.operands.at(0).dtype == DType::F32)
    return {};
  const MatMulShape s = matmulShape(call);
  return {0, convertingGemmScratch(s.M, s.N, s.K)};
}

} // namespace

void matmul(const KernelCall &call) {
  expectArity(call, "matmul", 2, 1);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  const DType dtype = lhs.dtype;
  visitFloat(dtype, "matmul", "lhs", [](auto) {});
  expectSameDType(rhs, lhs, "matmul", "rhs", "lhs");
  expectDType(result, dtype, "matmul", "result");
  const MatMulShape s = matmulShape(call);
  expectShape(result, s.out, "matmul", "result");
  checkGemmSizes(s.M, s.N, s.K, "matmul");
  const ScratchLayout layout = matmulScratch(call);
  const int threads = scratchThreads(call, layout, "matmul");
  if (result.numel() == 0)
    return;
  const int64_t M = s.M, N = s.N, K = s.K;
  const size_t es = dtypeSize(dtype);
  const char *A = static_cast<const char *>(lhs.data);
  const char *B = static_cast<const char *>(rhs.data);
  char *C = static_cast<char *>(result.data);
  // One product: f32 through the threaded GEMM, narrow types through
  // converted blocks.
  auto product = [&](int64_t rows, const char *a, const char *b, char *c) {
    if (dtype == DType::F32) {
      if (K == 0)
        std::fill(reinterpret_cast<float *>(c),
                  reinterpret_cast<float *>(c) + rows * N, 0.0f);
      else
        gemm(false, false, rows, N, K, 1.0f, reinterpret_cast<const float *>(a),
             K, reinterpret_cast<const float *>(b), N, 0.0f,
             reinterpret_cast<float *>(c), N);
    } else {
      convertingGemm(dtype, rows, N, K, a, K, b, N, false, GemmEpilogue{}, c, N,
                     threadScratch(call, layout, 0),
                     alignScratch(layout.perThread), threads);
    }
  };
  // A right side without batch: the lhs batches stack into one tall GEMM.
  const int64_t batches = numElements(s.batch);
  if (numElements(s.batchB) == 1 && numElements(s.batchA) == batches) {
    product(batches * M, A, B, C);
    return;
  }
  // The matrices of batch i, found by walking the broadcast batch shape.
  BroadcastWalk walk(s.batch, {&s.batchA, &s.batchB}, "matmul");
  auto forBatches = [&](int64_t begin, int64_t end, auto &&fn) {
    walk.forSpans(begin, end,
                  [&](int64_t first, const int64_t *off, int64_t len) {
                    for (int64_t i = 0; i < len; ++i)
                      fn(first + i, off[0] + i * walk.rowStride(0),
                         off[1] + i * walk.rowStride(1));
                  });
  };
  if (dtype != DType::F32) {
    // Each product parallelises over its blocks.
    forBatches(0, batches, [&](int64_t i, int64_t ia, int64_t ib) {
      product(M, A + ia * M * K * es, B + ib * K * N * es, C + i * M * N * es);
    });
    return;
  }
  // Batches in parallel (each product on its thread); a single large batch
  // parallelises inside gemm instead.
  parallelChunks(batches, M * N * std::max<int64_t>(K, 1),
                 [&](int64_t begin, int64_t end) {
                   forBatches(
                       begin, end, [&](int64_t i, int64_t ia, int64_t ib) {
                         product(M, A + ia * M * K * es, B + ib * K * N * es,
                                 C + i * M * N * es);
                       });
                 });
}

size_t matmulScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<matmulScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
