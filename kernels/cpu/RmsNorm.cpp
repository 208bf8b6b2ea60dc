// rms_norm: x / sqrt(mean(x^2) + eps) over dims [axis, rank) (mean in
// double), then * weight (Llama, T5); floats (f32, bf16, f16) computed in
// f32 and rounded once per element.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "NormRows.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Norm.h"

namespace hybrid::cpu::kernels {
namespace {

/// The weight broadcast to the normalised shape, as an f32 array.
ScratchLayout rmsNormScratch(const NormProblem &s, bool weight) {
  Carve carve;
  if (weight)
    carve.take<float>(s.n);
  return {carve.used(), 0};
}

ScratchLayout rmsNormScratch(const KernelCall &call) {
  using In = ops::RmsNorm::In;
  const NormProblem s = normShape(call.operands.at(In::input).shape,
                                  call.attrs<ops::RmsNorm>().axis, "rms_norm");
  return rmsNormScratch(s, optional(call, In::weight));
}

} // namespace

void rmsNorm(const KernelCall &call) {
  const auto a = RmsNormArgs::bind(call, "rms_norm");
  const NormProblem s = describeRmsNorm(a);
  visitFloat(s.dtype, "rms_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    scratchThreads(call, rmsNormScratch(s, a.weight), "rms_norm");
    if (a.input.numel() == 0)
      return;
    float *weight = nullptr;
    if (a.weight) {
      weight = Carve(sharedScratch(call)).take<float>(s.n);
      broadcastToFloat(*a.weight, s.norm, weight, "rms_norm", "weight");
    }
    const S *x = a.input.as<S>();
    S *y = a.out.as<S>();
    const int64_t n = s.n;
    const double eps = s.epsilon;
    parallelFor(s.rows, n * 3, [&](int64_t r) {
      rmsNormRow(x + r * n, y + r * n, n, eps, weight);
    });
  });
}

size_t rmsNormScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<rmsNormScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
