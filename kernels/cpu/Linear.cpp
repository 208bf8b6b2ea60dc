// linear: x[..., K] times weight ([N, K] with transposeWeight, else [K, N])
// plus an optional bias[N], then the activation, then an optional residual,
// as one GEMM over all leading dimensions; f32 directly (the epilogue one
// pass after it), bf16/f16 through converted blocks in scratch (the
// epilogue in f32 on each block, one rounding). A norm prologue normalises
// the input rows into scratch first, rounded as the layer_norm / rms_norm
// kernels round them (NormRows.h).
#include "Activation.h"
#include "Broadcast.h"
#include "Element.h"
#include "Gemm.h"
#include "Kernels.h"
#include "NormRows.h"
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

/// The shared scratch of a norm prologue: its weight and bias as f32 [K]
/// (when given), then the normalised input (the input's dtype).
struct PrologueScratch {
  float *weight = nullptr, *bias = nullptr;
  void *input = nullptr;
};

PrologueScratch carvePrologue(const KernelCall &call, const LinearShape &s,
                              Carve &carve) {
  PrologueScratch p;
  if (call.attrs<ops::Linear>().norm == NormKind::None)
    return p;
  if (optionalOperand(call, 4))
    p.weight = carve.take<float>(s.K);
  if (optionalOperand(call, 5))
    p.bias = carve.take<float>(s.K);
  p.input = carve.take<char>(s.M * s.K * dtypeSize(call.operands.at(0).dtype));
  return p;
}

/// A norm prologue's rows in shared scratch; bf16/f16 products convert
/// blocks per thread; f32 needs nothing more.
ScratchLayout linearScratch(const KernelCall &call) {
  const LinearShape s = linearShape(call);
  Carve carve;
  carvePrologue(call, s, carve);
  if (call.operands.at(0).dtype == DType::F32)
    return {carve.used(), 0};
  return {carve.used(), convertingGemmScratch(s.M, s.N, s.K)};
}

/// The prologue's normalised rows of `input`, in scratch.
const void *normaliseRows(const KernelCall &call, const LinearShape &s,
                          const ops::Linear &attrs) {
  const ConstTensor &input = call.operands[0];
  const ConstTensor *weightOperand = optionalOperand(call, 4);
  const ConstTensor *biasOperand = optionalOperand(call, 5);
  if (attrs.norm != NormKind::LayerNorm && attrs.norm != NormKind::RmsNorm)
    fail("linear",
         "invalid norm " + std::to_string(static_cast<int>(attrs.norm)));
  if (attrs.norm == NormKind::RmsNorm && biasOperand)
    fail("linear", "rms_norm takes no norm_bias");
  if (!(attrs.normEpsilon >= 0))
    fail("linear", "norm_epsilon must be >= 0");
  for (const ConstTensor *t : {weightOperand, biasOperand}) {
    if (!t)
      continue;
    expectSameDType(*t, input, "linear", "norm operand", "input");
    expectShape(*t, {s.K}, "linear", "norm operand");
  }
  Carve carve(sharedScratch(call));
  const PrologueScratch p = carvePrologue(call, s, carve);
  if (p.weight)
    broadcastToFloat(*weightOperand, {s.K}, p.weight, "linear", "norm_weight");
  if (p.bias)
    broadcastToFloat(*biasOperand, {s.K}, p.bias, "linear", "norm_bias");
  const int64_t K = s.K;
  const double eps = attrs.normEpsilon;
  visitFloat(input.dtype, "linear", "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = input.as<S>();
    S *y = static_cast<S *>(p.input);
    parallelFor(s.M, K * 4, [&](int64_t r) {
      if (attrs.norm == NormKind::LayerNorm)
        layerNormRow(x + r * K, y + r * K, K, eps, p.weight, p.bias);
      else
        rmsNormRow(x + r * K, y + r * K, K, eps, p.weight);
    });
  });
  return p.input;
}

} // namespace

void linear(const KernelCall &call) {
  // (input, weight, bias?, residual?[, norm_weight?, norm_bias?]): a
  // linear without a prologue may leave its two operands off.
  expectOperands(call, "linear", 2, call.operands.size() <= 4 ? 2 : 4);
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
  const ScratchLayout layout = linearScratch(call);
  const int threads = scratchThreads(call, layout, "linear");
  const void *x =
      attrs.norm == NormKind::None ? input.data : normaliseRows(call, s, attrs);
  const bool transW = attrs.transposeWeight;
  const int64_t ldw = transW ? s.K : s.N;
  GemmEpilogue epilogue;
  epilogue.bias = biasOperand ? biasOperand->data : nullptr;
  epilogue.activation = attrs.activation;
  epilogue.residual = residualOperand ? residualOperand->data : nullptr;
  epilogue.ldr = s.N;
  if (dtype != DType::F32) {
    convertingGemm(dtype, s.M, s.N, s.K, x, s.K, weight.data, ldw, transW,
                   epilogue, result.data, s.N, threadScratch(call, layout, 0),
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
    gemm(false, transW, s.M, s.N, s.K, 1.0f, static_cast<const float *>(x), s.K,
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
