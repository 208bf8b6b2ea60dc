// linear: x[..., K] times weight ([N, K] with transposeWeight, else [K, N])
// plus an optional bias[N], then the activation, then an optional residual,
// as one GEMM over all leading dimensions; f32 directly (the epilogue one
// pass after it), bf16/f16 through converted blocks in scratch (the
// epilogue in f32 on each block, one rounding).
#include "Activation.h"
#include "Element.h"
#include "Gemm.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu::kernels {
namespace {

struct LinearShape {
  int64_t M = 0, N = 0, K = 0;
  Shape out;
};

LinearShape linearShape(const KernelCall &call) {
  const ConstTensor &input = call.operands.at(0), &weight = call.operands.at(1);
  expectRank(weight, 2, "linear", "weight");
  if (input.rank() == 0)
    fail("linear", "input must have rank >= 1");
  const bool transW = call.attrs<ops::Linear>().transposeWeight;
  LinearShape s;
  s.K = input.shape.back();
  s.N = transW ? weight.shape[0] : weight.shape[1];
  const int64_t wK = transW ? weight.shape[1] : weight.shape[0];
  if (wK != s.K)
    fail("linear", "input " + shapeToString(input.shape) + " has " +
                       std::to_string(s.K) + " features but weight " +
                       shapeToString(weight.shape) +
                       (transW ? " ([N, K])" : " ([K, N])") + " expects " +
                       std::to_string(wK));
  s.out = input.shape;
  s.out.back() = s.N;
  s.M = numElements(input.shape) / std::max<int64_t>(s.K, 1);
  if (s.K == 0)
    s.M = numElements(s.out) / std::max<int64_t>(s.N, 1);
  return s;
}

/// bf16/f16 products convert blocks per thread; f32 needs nothing.
ScratchLayout linearScratch(const KernelCall &call) {
  if (call.operands.at(0).dtype == DType::F32)
    return {};
  const LinearShape s = linearShape(call);
  return {0, convertingGemmScratch(s.M, s.N, s.K)};
}

} // namespace

void linear(const KernelCall &call) {
  expectOperands(call, "linear", 2, 2);
  const ConstTensor &input = call.operands[0], &weight = call.operands[1];
  const ConstTensor *biasOperand = optionalOperand(call, 2);
  const ConstTensor *residualOperand = optionalOperand(call, 3);
  const Tensor &result = call.results[0];
  const DType dtype = input.dtype;
  visitFloat(dtype, "linear", "input", [](auto) {});
  expectSameDType(weight, input, "linear", "weight", "input");
  expectDType(result, dtype, "linear", "result");
  const LinearShape s = linearShape(call);
  expectShape(result, s.out, "linear", "result");
  if (biasOperand) {
    const ConstTensor &b = *biasOperand;
    expectSameDType(b, input, "linear", "bias", "input");
    if (b.numel() != s.N || (b.rank() > 0 && b.shape.back() != s.N))
      fail("linear", "bias " + shapeToString(b.shape) + " must have " +
                         std::to_string(s.N) + " elements");
  }
  if (residualOperand) {
    expectSameDType(*residualOperand, input, "linear", "residual", "input");
    expectShape(*residualOperand, s.out, "linear", "residual");
  }
  const ops::Linear &attrs = call.attrs<ops::Linear>();
  if (static_cast<int>(attrs.activation) >= kActivations)
    fail("linear", "invalid activation " +
                       std::to_string(static_cast<int>(attrs.activation)));
  checkGemmSizes(s.M, s.N, s.K, "linear");
  const bool transW = attrs.transposeWeight;
  const int64_t ldw = transW ? s.K : s.N;
  GemmEpilogue epilogue;
  epilogue.bias = biasOperand ? biasOperand->data : nullptr;
  epilogue.activation = attrs.activation;
  epilogue.residual = residualOperand ? residualOperand->data : nullptr;
  epilogue.ldr = s.N;
  if (dtype != DType::F32) {
    const ScratchLayout layout = linearScratch(call);
    const int threads = scratchThreads(call, layout, "linear");
    convertingGemm(dtype, s.M, s.N, s.K, input.data, s.K, weight.data, ldw,
                   transW, epilogue, result.data, s.N,
                   threadScratch(call, layout, 0),
                   alignScratch(layout.perThread), threads);
    return;
  }
  if (result.numel() == 0)
    return;
  const float *bias = biasOperand ? biasOperand->as<float>() : nullptr;
  float *y = result.as<float>();
  if (bias)
    for (int64_t m = 0; m < s.M; ++m)
      std::memcpy(y + m * s.N, bias, s.N * sizeof(float));
  if (s.K == 0) {
    if (!bias)
      std::fill(y, y + s.M * s.N, 0.0f);
  } else {
    gemm(false, transW, s.M, s.N, s.K, 1.0f, input.as<float>(), s.K,
         weight.as<float>(), ldw, bias ? 1.0f : 0.0f, y, s.N);
  }
  // The epilogue in one more pass over the result, row by row.
  const Activation act = attrs.activation;
  const float *residual =
      residualOperand ? residualOperand->as<float>() : nullptr;
  if (act == Activation::None && !residual)
    return;
  parallelFor(s.M, s.N * (act == Activation::None ? 1 : 16), [&](int64_t m) {
    float *row = y + m * s.N;
    const float *res = residual ? residual + m * s.N : nullptr;
    for (int64_t n = 0; n < s.N; ++n)
      row[n] = activate(act, row[n]) + (res ? res[n] : 0.0f);
  });
}

size_t linearScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<linearScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
