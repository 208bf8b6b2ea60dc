// linear: x[..., K] times weight ([N, K] with transpose_weight, else [K, N])
// plus an optional bias[N], as one GEMM over all leading dimensions.
#include "Gemm.h"
#include "KernelCheck.h"
#include "Kernels.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu::kernels {

void linear(const KernelCall &call) {
  expectOperands(call, "linear", 2, 1);
  const ConstTensor &input = call.operands[0], &weight = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(input, DType::F32, "linear", "input");
  expectDType(weight, DType::F32, "linear", "weight");
  expectDType(result, DType::F32, "linear", "result");
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
  Shape outShape = input.shape;
  outShape.back() = N;
  expectShape(result, outShape, "linear", "result");
  const float *bias = nullptr;
  if (const ConstTensor *biasOperand = optionalOperand(call, 2)) {
    const ConstTensor &b = *biasOperand;
    expectDType(b, DType::F32, "linear", "bias");
    if (b.numel() != N || (b.rank() > 0 && b.shape.back() != N))
      fail("linear", "bias " + shapeToString(b.shape) + " must have " +
                         std::to_string(N) + " elements");
    bias = b.as<float>();
  }
  const int64_t M =
      K ? input.numel() / K : numElements(outShape) / std::max<int64_t>(N, 1);
  if (result.numel() == 0)
    return;
  float *y = result.as<float>();
  if (bias)
    for (int64_t m = 0; m < M; ++m)
      std::memcpy(y + m * N, bias, N * sizeof(float));
  if (K == 0) {
    if (!bias)
      std::fill(y, y + M * N, 0.0f);
    return;
  }
  gemm(false, transW, M, N, K, 1.0f, input.as<float>(), K, weight.as<float>(),
       transW ? K : N, bias ? 1.0f : 0.0f, y, N);
}

} // namespace hybrid::cpu::kernels
