// layer_norm: (x - mean) / sqrt(var + eps) over dims [axis, rank) with the
// population variance (statistics in double), then * weight + bias.
#include "Broadcast.h"
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>

namespace hybrid::cpu::kernels {

void layerNorm(const KernelCall &call) {
  expectOperands(call, "layer_norm", 1, 2);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(input, DType::F32, "layer_norm", "input");
  expectDType(result, DType::F32, "layer_norm", "result");
  expectShape(result, input.shape, "layer_norm", "result");
  const ops::LayerNorm &attrs = call.attrs<ops::LayerNorm>();
  const int64_t rank = input.rank();
  if (rank == 0)
    fail("layer_norm", "input must have rank >= 1");
  const int64_t axis = normalizeAxis(attrs.axis, rank, "layer_norm");
  const double eps = attrs.epsilon;
  const Shape normShape(input.shape.begin() + axis, input.shape.end());
  const int64_t n = numElements(normShape);
  const int64_t rows = product(input.shape, 0, axis);

  std::vector<float> weightStore, biasStore;
  const float *weight = nullptr, *bias = nullptr;
  if (const ConstTensor *w = optionalOperand(call, 1))
    weight =
        broadcastFloats(*w, normShape, weightStore, "layer_norm", "weight");
  if (const ConstTensor *b = optionalOperand(call, 2))
    bias = broadcastFloats(*b, normShape, biasStore, "layer_norm", "bias");
  if (input.numel() == 0)
    return;

  const float *x = input.as<float>();
  float *y = result.as<float>();
  parallelFor(rows, n * 4, [&](int64_t r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      sum += xr[i];
    const double mean = sum / n;
    double sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      double d = xr[i] - mean;
      sq += d * d;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / n + eps));
    const float meanF = static_cast<float>(mean);
    for (int64_t i = 0; i < n; ++i) {
      float v = (xr[i] - meanF) * inv;
      if (weight)
        v *= weight[i];
      if (bias)
        v += bias[i];
      yr[i] = v;
    }
  });
}

} // namespace hybrid::cpu::kernels
