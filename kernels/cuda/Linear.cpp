// linear: x[..., K] times weight ([N, K] with transposeWeight, else [K, N])
// plus an optional bias[N], as one cuBLASLt GEMM over all leading
// dimensions with the bias fused as its epilogue; f32 (exact f32 compute),
// bf16 and f16 (f32 accumulation, one rounding after the bias).
#include "Check.h"
#include "Gemm.h"
#include "Kernels.h"

#include <algorithm>

namespace hybrid::cuda::kernels {

void linear(const CudaCall &call) {
  expectOperands(call, "linear", 2, 1);
  const ConstTensor &input = call.operands[0], &weight = call.operands[1];
  const ConstTensor *bias = optionalOperand(call, 2);
  const Tensor &result = call.results[0];
  expectFloat(input.dtype, "linear", "input");
  expectSameDType(weight, input, "linear", "weight", "input");
  expectDType(result, input.dtype, "linear", "result");
  expectRank(weight, 2, "linear", "weight");
  if (input.rank() == 0)
    fail("linear", "input must have rank >= 1");
  const bool transW = call.attrs<ops::Linear>().transposeWeight;
  const int64_t K = input.shape.back();
  const int64_t N = transW ? weight.shape[0] : weight.shape[1];
  const int64_t wK = transW ? weight.shape[1] : weight.shape[0];
  if (wK != K)
    fail("linear", "input " + shapeToString(input.shape) + " has " +
                       std::to_string(K) + " features but weight " +
                       shapeToString(weight.shape) +
                       (transW ? " ([N, K])" : " ([K, N])") + " expects " +
                       std::to_string(wK));
  Shape out = input.shape;
  out.back() = N;
  expectShape(result, out, "linear", "result");
  if (bias) {
    expectSameDType(*bias, input, "linear", "bias", "input");
    if (bias->numel() != N || (bias->rank() > 0 && bias->shape.back() != N))
      fail("linear", "bias " + shapeToString(bias->shape) + " must have " +
                         std::to_string(N) + " elements");
  }
  GemmProblem p;
  p.dtype = input.dtype;
  p.M = numElements(out) / std::max<int64_t>(N, 1);
  p.N = N;
  p.K = K;
  p.transB = transW;
  p.lda = K;
  p.ldb = transW ? K : N;
  p.ldc = N;
  p.A = input.data;
  p.B = weight.data;
  p.bias = bias ? bias->data : nullptr;
  p.C = result.data;
  gemm(call, p, "linear");
}

size_t linearScratchBytes(const CudaCall &) { return kGemmWorkspaceBytes; }

} // namespace hybrid::cuda::kernels
