// rms_norm: x / sqrt(mean(x^2) + eps) over dims [axis, rank) (mean in
// double), then * weight (Llama, T5).
#include "Broadcast.h"
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>

namespace hybrid::cpu::kernels {

void rmsNorm(const KernelCall &call) {
  expectOperands(call, "rms_norm", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(input, DType::F32, "rms_norm", "input");
  expectDType(result, DType::F32, "rms_norm", "result");
  expectShape(result, input.shape, "rms_norm", "result");
  const ops::RmsNorm &attrs = call.attrs<ops::RmsNorm>();
  const int64_t rank = input.rank();
  if (rank == 0)
    fail("rms_norm", "input must have rank >= 1");
  const int64_t axis = normalizeAxis(attrs.axis, rank, "rms_norm");
  const double eps = attrs.epsilon;
  const Shape normShape(input.shape.begin() + axis, input.shape.end());
  const int64_t n = numElements(normShape);
  const int64_t rows = product(input.shape, 0, axis);

  std::vector<float> weightStore;
  const ConstTensor *w = optionalOperand(call, 1);
  const float *weight =
      w ? broadcastFloats(*w, normShape, weightStore, "rms_norm", "weight")
        : nullptr;
  if (input.numel() == 0)
    return;

  const float *x = input.as<float>();
  float *y = result.as<float>();
  parallelFor(rows, n * 3, [&](int64_t r) {
    const float *xr = x + r * n;
    float *yr = y + r * n;
    double sq = 0;
    for (int64_t i = 0; i < n; ++i)
      sq += static_cast<double>(xr[i]) * xr[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sq / n + eps));
    if (weight)
      for (int64_t i = 0; i < n; ++i)
        yr[i] = xr[i] * inv * weight[i];
    else
      for (int64_t i = 0; i < n; ++i)
        yr[i] = xr[i] * inv;
  });
}

} // namespace hybrid::cpu::kernels
