// layer_norm: (x - mean) / sqrt(var + eps) over dims [axis, rank) with the
// population variance (statistics in double), then * weight + bias; floats
// (f32, bf16, f16) computed in f32 and rounded once per element.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "NormRows.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Norm.h"

namespace hybrid::cpu::kernels {
namespace {

/// The weight and bias, broadcast to the normalised shape, as f32 arrays:
/// the row loop then reads them contiguously whatever their shape and dtype.
ScratchLayout layerNormScratch(const NormProblem &s, bool weight, bool bias) {
  Carve carve;
  if (weight)
    carve.take<float>(s.n);
  if (bias)
    carve.take<float>(s.n);
  return {carve.used(), 0};
}

ScratchLayout layerNormScratch(const KernelCall &call) {
  using In = ops::LayerNorm::In;
  const NormProblem s =
      normShape(call.operands.at(In::input).shape,
                call.attrs<ops::LayerNorm>().axis, "layer_norm");
  return layerNormScratch(s, optional(call, In::weight),
                          optional(call, In::bias));
}

} // namespace

void layerNorm(const KernelCall &call) {
  const auto a = LayerNormArgs::bind(call, "layer_norm");
  const NormProblem s = describeLayerNorm(a);
  visitFloat(s.dtype, "layer_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    scratchThreads(call, layerNormScratch(s, a.weight, a.bias), "layer_norm");
    if (a.input.numel() == 0)
      return;
    Carve carve(sharedScratch(call));
    float *weight = nullptr, *bias = nullptr;
    if (a.weight) {
      weight = carve.take<float>(s.n);
      broadcastToFloat(*a.weight, s.norm, weight, "layer_norm", "weight");
    }
    if (a.bias) {
      bias = carve.take<float>(s.n);
      broadcastToFloat(*a.bias, s.norm, bias, "layer_norm", "bias");
    }
    const S *x = a.input.as<S>();
    S *y = a.out.as<S>();
    const int64_t n = s.n;
    const double eps = s.epsilon;
    parallelFor(s.rows, n * 4, [&](int64_t r) {
      layerNormRow(x + r * n, y + r * n, n, eps, weight, bias);
    });
  });
}

size_t layerNormScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<layerNormScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
