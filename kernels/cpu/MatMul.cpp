// matmul: NumPy matmul (batch broadcasting, 1-D promotion) on f32, bf16 and
// f16: one GEMM per batch, or a single folded GEMM when the right side has
// no batch; narrow types multiply converted blocks in scratch.
#include "Broadcast.h"
#include "Element.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/MatMul.h"

#include <algorithm>

namespace hybrid::cpu::kernels {
namespace {

/// bf16/f16 products convert blocks per thread; f32 needs nothing.
ScratchLayout matmulScratch(const KernelCall &call) {
  const ConstTensor &lhs = call.operands.at(ops::MatMul::In::lhs),
                    &rhs = call.operands.at(ops::MatMul::In::rhs);
  if (lhs.dtype == DType::F32)
    return {};
  const MatMulProblem s = matmulShape(lhs.shape, rhs.shape);
  return {0, convertingGemmScratch(s.M, s.N, s.K)};
}

} // namespace

void matmul(const KernelCall &call) {
  const auto a = MatMulArgs::bind(call, "matmul");
  const MatMulProblem s = describeMatMul(a);
  checkGemmSizes(s.M, s.N, s.K, "matmul");
  const ScratchLayout layout = matmulScratch(call);
  const int threads = scratchThreads(call, layout, "matmul");
  if (a.out.numel() == 0)
    return;
  const DType dtype = s.dtype;
  const int64_t M = s.M, N = s.N, K = s.K;
  const size_t es = dtypeSize(dtype);
  const char *A = static_cast<const char *>(a.lhs.data);
  const char *B = static_cast<const char *>(a.rhs.data);
  char *C = static_cast<char *>(a.out.data);
  // One product: f32 through the threaded GEMM, narrow types through
  // converted blocks.
  auto product = [&](int64_t rows, const char *lhs, const char *rhs, char *c) {
    if (dtype == DType::F32) {
      if (K == 0)
        std::fill(reinterpret_cast<float *>(c),
                  reinterpret_cast<float *>(c) + rows * N, 0.0f);
      else
        gemm(false, false, rows, N, K, 1.0f,
             reinterpret_cast<const float *>(lhs), K,
             reinterpret_cast<const float *>(rhs), N, 0.0f,
             reinterpret_cast<float *>(c), N);
    } else {
      convertingGemm(dtype, rows, N, K, lhs, K, rhs, N, false, GemmEpilogue{},
                     c, N, threadScratch(call, layout, 0),
                     alignScratch(layout.perThread), threads);
    }
  };
  // A right side without batch: the lhs batches stack into one tall GEMM.
  const int64_t batches = numElements(s.batch);
  if (s.stacksRows()) {
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
