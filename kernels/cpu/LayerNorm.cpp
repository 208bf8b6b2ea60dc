// layer_norm: (x - mean) / sqrt(var + eps) over dims [axis, rank) with the
// population variance (statistics in double), then * weight + bias; floats
// (f32, bf16, f16) computed in f32 and rounded once per element.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "NormRows.h"
#include "Parallel.h"
#include "Scratch.h"

namespace hybrid::cpu::kernels {
namespace {

/// The weight and bias, broadcast to the normalised shape, as f32 arrays:
/// the row loop then reads them contiguously whatever their shape and dtype.
ScratchLayout layerNormScratch(const KernelCall &call) {
  const NormShape s = normShape(
      call.operands.at(0), call.attrs<ops::LayerNorm>().axis, "layer_norm");
  Carve carve;
  for (size_t i = 1; i <= 2; ++i)
    if (optionalOperand(call, i))
      carve.take<float>(s.n);
  return {carve.used(), 0};
}

} // namespace

void layerNorm(const KernelCall &call) {
  expectOperands(call, "layer_norm", 1, 2);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "layer_norm", "result");
  expectShape(result, input.shape, "layer_norm", "result");
  const ops::LayerNorm &attrs = call.attrs<ops::LayerNorm>();
  const double eps = attrs.epsilon;
  const NormShape s = normShape(input, attrs.axis, "layer_norm");
  const ConstTensor *weightOperand = optionalOperand(call, 1);
  const ConstTensor *biasOperand = optionalOperand(call, 2);
  if (weightOperand) {
    expectSameDType(*weightOperand, input, "layer_norm", "weight", "input");
    expectBroadcastsTo(*weightOperand, s.norm, "layer_norm", "weight");
  }
  if (biasOperand) {
    expectSameDType(*biasOperand, input, "layer_norm", "bias", "input");
    expectBroadcastsTo(*biasOperand, s.norm, "layer_norm", "bias");
  }
  visitFloat(input.dtype, "layer_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    const ScratchLayout layout = layerNormScratch(call);
    scratchThreads(call, layout, "layer_norm");
    if (input.numel() == 0)
      return;
    Carve carve(sharedScratch(call));
    float *weight = nullptr, *bias = nullptr;
    if (weightOperand) {
      weight = carve.take<float>(s.n);
      broadcastToFloat(*weightOperand, s.norm, weight, "layer_norm", "weight");
    }
    if (biasOperand) {
      bias = carve.take<float>(s.n);
      broadcastToFloat(*biasOperand, s.norm, bias, "layer_norm", "bias");
    }
    const S *x = input.as<S>();
    S *y = result.as<S>();
    const int64_t n = s.n;
    parallelFor(s.rows, n * 4, [&](int64_t r) {
      layerNormRow(x + r * n, y + r * n, n, eps, weight, bias);
    });
  });
}

size_t layerNormScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<layerNormScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
