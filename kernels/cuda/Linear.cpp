// linear: x[..., K] times weight ([N, K] with transposeWeight, else [K, N])
// plus an optional bias[N], then the activation, then an optional residual,
// as one cuBLASLt GEMM over all leading dimensions with what it can fuse as
// its epilogue (Gemm.h); f32 (exact f32 compute), bf16 and f16 (f32
// accumulation).
#include "Check.h"
#include "Gemm.h"
#include "Kernels.h"

#include <algorithm>

namespace hybrid::cuda::kernels {

void linear(const CudaCall &call) {
  expectOperands(call, "linear", 2, 2);
  const ConstTensor &input = call.operands[0], &weight = call.operands[1];
  const ConstTensor *bias = optionalOperand(call, 2);
  const ConstTensor *residual = optionalOperand(call, 3);
  const Tensor &result = call.results[0];
  expectFloat(input.dtype, "linear", "input");
  expectSameDType(weight, input, "linear", "weight", "input");
  expectDType(result, input.dtype, "linear", "result");
  expectRank(weight, 2, "linear", "weight");
  if (input.rank() == 0)
    fail("linear", "input must have rank >= 1");
  const ops::Linear &attrs = call.attrs<ops::Linear>();
  const bool transW = attrs.transposeWeight;
  if (static_cast<int>(attrs.activation) >= kActivations)
    fail("linear", "invalid activation " +
                       std::to_string(static_cast<int>(attrs.activation)));
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
  if (residual) {
    expectSameDType(*residual, input, "linear", "residual", "input");
    expectShape(*residual, out, "linear", "residual");
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
  p.activation = attrs.activation;
  p.residual = residual ? residual->data : nullptr;
  p.ldr = N;
  gemm(call, p, "linear");
}

size_t linearScratchBytes(const CudaCall &) { return kGemmWorkspaceBytes; }

} // namespace hybrid::cuda::kernels
