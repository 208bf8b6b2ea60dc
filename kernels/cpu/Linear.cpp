// linear: x[..., K] times weight ([N, K] with transposeWeight, else [K, N])
// plus an optional bias[N], then the activation, then an optional residual,
// as one GEMM over all leading dimensions; f32 directly (the epilogue one
// pass after it), bf16/f16 through converted blocks in scratch (the
// epilogue in f32 on each block, one rounding). A norm prologue normalises
// the input rows into scratch first, rounded as the layer_norm / rms_norm
// kernels round them (NormRows.h). linear_group runs each member as such a
// linear over its range of the weight.
#include "Activation.h"
#include "Broadcast.h"
#include "Element.h"
#include "Gemm.h"
#include "Kernels.h"
#include "NormRows.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/LinearChecks.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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
  checks::checkNormPrologue(call, attrs, s.K, [](const std::string &message) {
    fail("linear", message);
  });
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

/// result [M, N] = epilogue(x [M, K] . W): W's element (k, n) is
/// weight[n * ldw + k] when transW ([N, K] rows), else weight[k * ldw + n]
/// ([K, N] columns); bias (N) and residual ([M, N]) may be null. Operands
/// are checked; `layout` is the call's scratch for (M, N, K).
void linearProduct(const KernelCall &call, const ScratchLayout &layout,
                   int threads, DType dtype, int64_t M, int64_t N, int64_t K,
                   const void *x, const void *weight, int64_t ldw, bool transW,
                   const void *bias, Activation act, const void *residual,
                   void *result) {
  GemmEpilogue epilogue;
  epilogue.bias = bias;
  epilogue.activation = act;
  epilogue.residual = residual;
  epilogue.ldr = N;
  if (dtype != DType::F32) {
    convertingGemm(dtype, M, N, K, x, K, weight, ldw, transW, epilogue, result,
                   N, threadScratch(call, layout, 0),
                   alignScratch(layout.perThread), threads);
    return;
  }
  if (M * N == 0)
    return;
  const auto *b = static_cast<const float *>(bias);
  float *y = static_cast<float *>(result);
  if (b)
    for (int64_t m = 0; m < M; ++m)
      std::memcpy(y + m * N, b, N * sizeof(float));
  if (K == 0) {
    if (!b)
      std::fill(y, y + M * N, 0.0f);
  } else {
    gemm(false, transW, M, N, K, 1.0f, static_cast<const float *>(x), K,
         static_cast<const float *>(weight), ldw, b ? 1.0f : 0.0f, y, N);
  }
  // The epilogue in one more pass over the result, row by row.
  const auto *r = static_cast<const float *>(residual);
  if (act == Activation::None && !r)
    return;
  parallelFor(M, N * (act == Activation::None ? 1 : 16), [&](int64_t m) {
    float *row = y + m * N;
    const float *res = r ? r + m * N : nullptr;
    for (int64_t n = 0; n < N; ++n)
      row[n] = activate(act, row[n]) + (res ? res[n] : 0.0f);
  });
}

/// A linear group's members: (weight, bias or null, result, feature range)
/// from the call, checked against the input.
struct GroupMember {
  const ConstTensor *weight = nullptr, *bias = nullptr;
  const Tensor *result = nullptr;
  int64_t begin = 0, end = 0;
};

std::vector<GroupMember> groupMembers(const KernelCall &call, int64_t &M,
                                      int64_t &K) {
  const auto &attrs = call.attrs<ops::LinearGroup>();
  auto failure = [](const std::string &message) {
    fail("linear_group", message);
  };
  checks::checkLinearGroup(call, attrs, failure);
  const ConstTensor &input = call.operands[0];
  visitFloat(input.dtype, "linear_group", "input", [](auto) {});
  K = input.shape.back();
  M = numElements(input.shape) / std::max<int64_t>(K, 1);
  std::vector<GroupMember> out(attrs.featureBegins.size());
  for (size_t i = 0; i < out.size(); ++i) {
    checks::checkLinearGroupMember(call, attrs, i, K, failure);
    GroupMember &m = out[i];
    m.weight = &call.operands[1 + 2 * i];
    m.bias = optionalOperand(call, 2 + 2 * i);
    m.result = &call.results[i];
    m.begin = attrs.featureBegins[i];
    m.end = attrs.featureEnds[i];
    if (K == 0)
      M = numElements(m.result->shape) / (m.end - m.begin);
  }
  return out;
}

/// bf16/f16 products convert blocks per thread: the widest member's. From
/// shapes alone (scratch is sized before data is bound).
ScratchLayout linearGroupScratch(const KernelCall &call) {
  const ConstTensor &input = call.operands.at(0);
  if (input.dtype == DType::F32 || input.rank() == 0)
    return {};
  const auto &attrs = call.attrs<ops::LinearGroup>();
  const int64_t K = input.shape.back();
  const int64_t M =
      K > 0 ? numElements(input.shape) / K : numElements(input.shape);
  ScratchLayout layout;
  for (size_t i = 0; i < attrs.featureBegins.size(); ++i) {
    const int64_t n = attrs.featureEnds.at(i) - attrs.featureBegins[i];
    if (n > 0)
      layout.perThread =
          std::max(layout.perThread, convertingGemmScratch(M, n, K));
  }
  return layout;
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
  linearProduct(call, layout, threads, dtype, s.M, s.N, s.K, x, weight.data,
                transW ? s.K : s.N, transW,
                biasOperand ? biasOperand->data : nullptr, attrs.activation,
                residualOperand ? residualOperand->data : nullptr, result.data);
}

void linearGroup(const KernelCall &call) {
  int64_t M = 0, K = 0;
  const std::vector<GroupMember> members = groupMembers(call, M, K);
  const auto &attrs = call.attrs<ops::LinearGroup>();
  const ConstTensor &input = call.operands[0];
  const ScratchLayout layout = linearGroupScratch(call);
  const int threads = scratchThreads(call, layout, "linear_group");
  const bool transW = attrs.transposeWeight;
  const size_t bytes = dtypeSize(input.dtype);
  // Each member is its own linear over a view of the weight: the GEMM
  // gives every element the same bits whatever its column's place and the
  // leading dimension (Gemm.h), so a member equals the linear (and the
  // slice of a wider one) it replaces, bit for bit.
  for (const GroupMember &m : members) {
    const int64_t n = m.end - m.begin;
    checkGemmSizes(M, n, K, "linear_group");
    const int64_t fullN = m.weight->shape[transW ? 0 : 1];
    const char *w = static_cast<const char *>(m.weight->data) +
                    (transW ? m.begin * K : m.begin) * bytes;
    const char *bias =
        m.bias ? static_cast<const char *>(m.bias->data) + m.begin * bytes
               : nullptr;
    linearProduct(call, layout, threads, input.dtype, M, n, K, input.data, w,
                  transW ? K : fullN, transW, bias, attrs.activation, nullptr,
                  m.result->data);
  }
}

size_t linearGroupScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<linearGroupScratch>(call, threads);
}

size_t linearScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<linearScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
