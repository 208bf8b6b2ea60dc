// layer_norm_grad: layer_norm's backward in two passes. Rows in parallel
// normalise as the forward does (NormRows.h: statistics in double) and write
// dx = rstd (dx^ - mean(dx^) - x^ mean(dx^ x^)), dx^ = g w, with the two row
// means in double; then column ranges in parallel sum g x^ and g over the
// rows in row order (double), so grad_weight and grad_bias do not depend on
// the thread count. Every result is rounded once.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "NormRows.h"
#include "Parallel.h"
#include "Scratch.h"

#include "common/Norm.h"

namespace hybrid::cpu::kernels {
namespace {

/// Shared scratch: the weight as f32 [n] (when given), each row's statistics
/// [rows], and the column sums of g x^ and g in double [n] each.
struct LayerNormGradScratch {
  float *weight = nullptr;
  LayerNormStats *stats = nullptr;
  double *sumGradXhat = nullptr, *sumGrad = nullptr;
};

LayerNormGradScratch carveScratch(Carve &carve, const NormProblem &s,
                                  bool hasWeight) {
  LayerNormGradScratch l;
  if (hasWeight)
    l.weight = carve.take<float>(s.n);
  l.stats = carve.take<LayerNormStats>(s.rows);
  l.sumGradXhat = carve.take<double>(s.n);
  l.sumGrad = carve.take<double>(s.n);
  return l;
}

ScratchLayout layerNormGradScratch(const NormProblem &s, bool weight) {
  Carve carve;
  carveScratch(carve, s, weight);
  return {carve.used(), 0};
}

ScratchLayout layerNormGradScratch(const KernelCall &call) {
  using In = ops::LayerNormGrad::In;
  const NormProblem s =
      normShape(call.operands.at(In::input).shape,
                call.attrs<ops::LayerNormGrad>().axis, "layer_norm_grad");
  return layerNormGradScratch(s, optional(call, In::weight) != nullptr);
}

/// dx over one row of n elements with its statistics; weight may be null.
template <typename S>
void inputGradRow(const S *x, const S *g, S *dx, int64_t n, LayerNormStats st,
                  const float *weight) {
  auto gradXhat = [&](int64_t i) {
    return weight ? toFloat(g[i]) * weight[i] : toFloat(g[i]);
  };
  double sum = 0, dot = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = gradXhat(i);
    sum += d;
    dot += static_cast<double>(d) * ((toFloat(x[i]) - st.mean) * st.rstd);
  }
  const float meanGrad = static_cast<float>(sum / n),
              meanDot = static_cast<float>(dot / n);
  for (int64_t i = 0; i < n; ++i) {
    const float xhat = (toFloat(x[i]) - st.mean) * st.rstd;
    dx[i] = fromFloat<S>(st.rstd * (gradXhat(i) - meanGrad - xhat * meanDot));
  }
}

} // namespace

void layerNormGrad(const KernelCall &call) {
  constexpr const char *kKernel = "layer_norm_grad";
  const auto a = bindLayerNormGrad(call);
  const NormProblem s = describeLayerNormGrad(a);
  visitFloat(s.dtype, kKernel, "input", [&](auto zero) {
    using S = decltype(zero);
    scratchThreads(call, layerNormGradScratch(s, a.weight != nullptr), kKernel);
    if (s.n == 0)
      return;
    Carve carve(sharedScratch(call));
    const LayerNormGradScratch l = carveScratch(carve, s, a.weight != nullptr);
    if (a.weight)
      broadcastToFloat(*a.weight, s.norm, l.weight, kKernel, "weight");
    const S *x = a.input.as<S>(), *g = a.gradOut.as<S>();
    S *dx = a.gradInput.as<S>();
    const int64_t n = s.n;
    parallelFor(s.rows, n * 8, [&](int64_t r) {
      l.stats[r] = layerNormStats(x + r * n, n, s.epsilon);
      inputGradRow(x + r * n, g + r * n, dx + r * n, n, l.stats[r], l.weight);
    });
    S *dw = a.gradWeight.as<S>(), *db = a.gradBias.as<S>();
    parallelChunks(n, s.rows * 4, [&](int64_t begin, int64_t end) {
      std::fill(l.sumGradXhat + begin, l.sumGradXhat + end, 0.0);
      std::fill(l.sumGrad + begin, l.sumGrad + end, 0.0);
      for (int64_t r = 0; r < s.rows; ++r) {
        const S *xr = x + r * n, *gr = g + r * n;
        const LayerNormStats st = l.stats[r];
        for (int64_t j = begin; j < end; ++j) {
          const float gj = toFloat(gr[j]);
          l.sumGradXhat[j] += gj * ((toFloat(xr[j]) - st.mean) * st.rstd);
          l.sumGrad[j] += gj;
        }
      }
      for (int64_t j = begin; j < end; ++j) {
        dw[j] = fromFloat<S>(static_cast<float>(l.sumGradXhat[j]));
        db[j] = fromFloat<S>(static_cast<float>(l.sumGrad[j]));
      }
    });
  });
}

size_t layerNormGradScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<layerNormGradScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
