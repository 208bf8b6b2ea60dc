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

#include "common/Linear.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu::kernels {
namespace {

/// The shared scratch of a norm prologue: its weight and bias as f32 [K]
/// (when given), then the normalised input (the input's dtype).
struct PrologueScratch {
  float *weight = nullptr, *bias = nullptr;
  void *input = nullptr;
};

PrologueScratch carvePrologue(const LinearProblem &s, bool weight, bool bias,
                              Carve &carve) {
  PrologueScratch p;
  if (s.norm == NormKind::None)
    return p;
  if (weight)
    p.weight = carve.take<float>(s.K);
  if (bias)
    p.bias = carve.take<float>(s.K);
  p.input = carve.take<char>(s.M * s.K * dtypeSize(s.dtype));
  return p;
}

/// A norm prologue's rows in shared scratch; bf16/f16 products convert
/// blocks per thread; f32 needs nothing more. From shapes alone (scratch is
/// sized before data is bound).
ScratchLayout linearScratch(const KernelCall &call) {
  using In = ops::Linear::In;
  const ConstTensor &input = call.operands.at(In::input);
  const ops::Linear &attrs = call.attrs<ops::Linear>();
  LinearProblem s = linearShape(input.shape, call.operands.at(In::weight).shape,
                                attrs.transposeWeight);
  s.dtype = input.dtype;
  s.norm = attrs.norm;
  Carve carve;
  carvePrologue(s, optional(call, In::normWeight), optional(call, In::normBias),
                carve);
  if (input.dtype == DType::F32)
    return {carve.used(), 0};
  return {carve.used(), convertingGemmScratch(s.M, s.N, s.K)};
}

/// The prologue's normalised rows of the input, in scratch.
const void *normaliseRows(const KernelCall &call, const LinearArgs &a,
                          const LinearProblem &s) {
  Carve carve(sharedScratch(call));
  const PrologueScratch p =
      carvePrologue(s, a.normWeight != nullptr, a.normBias != nullptr, carve);
  if (p.weight)
    broadcastToFloat(*a.normWeight, {s.K}, p.weight, "linear", "norm_weight");
  if (p.bias)
    broadcastToFloat(*a.normBias, {s.K}, p.bias, "linear", "norm_bias");
  const int64_t K = s.K;
  const double eps = s.normEpsilon;
  visitFloat(s.dtype, "linear", "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = a.input.as<S>();
    S *y = static_cast<S *>(p.input);
    parallelFor(s.M, K * 4, [&](int64_t r) {
      if (s.norm == NormKind::LayerNorm)
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
  const GemmEpilogue epilogue{bias, act, residual, N};
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

/// bf16/f16 products convert blocks per thread: the widest member's. From
/// shapes alone (scratch is sized before data is bound).
ScratchLayout linearGroupScratch(const KernelCall &call) {
  const ConstTensor &input = call.operands.at(LinearGroupArgs::kInput);
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
  const auto a = LinearArgs::bind(call, "linear");
  const LinearProblem s = describeLinear(a);
  checkGemmSizes(s.M, s.N, s.K, "linear");
  const ScratchLayout layout = linearScratch(call);
  const int threads = scratchThreads(call, layout, "linear");
  const void *x =
      s.norm == NormKind::None ? a.input.data : normaliseRows(call, a, s);
  linearProduct(call, layout, threads, s.dtype, s.M, s.N, s.K, x, a.weight.data,
                s.ldw(), s.transW, a.bias ? a.bias->data : nullptr,
                s.activation, a.residual ? a.residual->data : nullptr,
                a.out.data);
}

void linearGroup(const KernelCall &call) {
  const auto a = LinearGroupArgs::bind(call, "linear_group");
  const LinearGroupProblem g = describeLinearGroup(a);
  const ScratchLayout layout = linearGroupScratch(call);
  const int threads = scratchThreads(call, layout, "linear_group");
  const size_t bytes = dtypeSize(g.dtype);
  // Each member is its own linear over a view of the weight: the GEMM
  // gives every element the same bits whatever its column's place and the
  // leading dimension (Gemm.h), so a member equals the linear (and the
  // slice of a wider one) it replaces, bit for bit.
  for (size_t i = 0; i < g.members.size(); ++i) {
    const LinearGroupMember &m = g.members[i];
    const int64_t n = m.features();
    checkGemmSizes(g.M, n, g.K, "linear_group");
    const char *w =
        static_cast<const char *>(a.weight(i).data) + g.weightOffset(m) * bytes;
    const ConstTensor *b = a.bias(i);
    const char *bias =
        b ? static_cast<const char *>(b->data) + m.begin * bytes : nullptr;
    linearProduct(call, layout, threads, g.dtype, g.M, n, g.K, a.input().data,
                  w, g.ldw(m), g.transW, bias, g.activation, nullptr,
                  a.out(i).data);
  }
}

size_t linearGroupScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<linearGroupScratch>(call, threads);
}

size_t linearScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<linearScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
