// rms_norm: x / sqrt(mean(x^2) + eps) over dims [axis, rank) (mean in
// double), then * weight (Llama, T5); floats (f32, bf16, f16) computed in
// f32 and rounded once per element.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "NormRows.h"
#include "Parallel.h"
#include "Scratch.h"

#include <cmath>

namespace hybrid::cpu::kernels {
namespace {

/// The weight broadcast to the normalised shape, as an f32 array.
ScratchLayout rmsNormScratch(const KernelCall &call) {
  const NormShape s = normShape(call.operands.at(0),
                                call.attrs<ops::RmsNorm>().axis, "rms_norm");
  Carve carve;
  if (optionalOperand(call, 1))
    carve.take<float>(s.n);
  return {carve.used(), 0};
}

} // namespace

void rmsNorm(const KernelCall &call) {
  expectOperands(call, "rms_norm", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "rms_norm", "result");
  expectShape(result, input.shape, "rms_norm", "result");
  const ops::RmsNorm &attrs = call.attrs<ops::RmsNorm>();
  const double eps = attrs.epsilon;
  const NormShape s = normShape(input, attrs.axis, "rms_norm");
  const ConstTensor *weightOperand = optionalOperand(call, 1);
  if (weightOperand) {
    expectSameDType(*weightOperand, input, "rms_norm", "weight", "input");
    expectBroadcastsTo(*weightOperand, s.norm, "rms_norm", "weight");
  }
  visitFloat(input.dtype, "rms_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    const ScratchLayout layout = rmsNormScratch(call);
    scratchThreads(call, layout, "rms_norm");
    if (input.numel() == 0)
      return;
    float *weight = nullptr;
    if (weightOperand) {
      weight = Carve(sharedScratch(call)).take<float>(s.n);
      broadcastToFloat(*weightOperand, s.norm, weight, "rms_norm", "weight");
    }
    const S *x = input.as<S>();
    S *y = result.as<S>();
    const int64_t n = s.n;
    parallelFor(s.rows, n * 3, [&](int64_t r) {
      rmsNormRow(x + r * n, y + r * n, n, eps, weight);
    });
  });
}

size_t rmsNormScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<rmsNormScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
