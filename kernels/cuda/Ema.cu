// The weights' exponential moving average (Engine::updateEma): one kernel
// over up to kSpansPerLaunch weights at a time, their addresses passed by
// value (no table in device memory, so it can be captured in a graph);
// the rule and the checks are common/Ema.h's, rounded as the CPU's.
#include "CudaKernels.h"
#include "Device.cuh"

#include "common/Ema.h"

#include <algorithm>

namespace hybrid::cuda {
namespace {

constexpr int kSpansPerLaunch = 32;

struct EmaBatch {
  float *ema[kSpansPerLaunch];
  const void *param[kSpansPerLaunch];
  int64_t numel[kSpansPerLaunch];
  uint8_t dtype[kSpansPerLaunch]; // 0 f32, 1 bf16, 2 f16
};

__global__ void emaKernel(EmaBatch batch, float beta) {
  awaitInputs();
  const int s = blockIdx.y;
  const int64_t n = batch.numel[s];
  float *ema = batch.ema[s];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    float p;
    switch (batch.dtype[s]) {
    case 1:
      p = toFloat(static_cast<const Bf16 *>(batch.param[s])[i]);
      break;
    case 2:
      p = toFloat(static_cast<const F16 *>(batch.param[s])[i]);
      break;
    default:
      p = static_cast<const float *>(batch.param[s])[i];
    }
    ema[i] = ::hybrid::kernels::emaLerp(ema[i], p, beta);
  }
}

} // namespace

void emaUpdate(const std::vector<::hybrid::kernels::EmaSpan> &spans, float beta,
               Stream stream) {
  ::hybrid::kernels::checkEmaSpans(spans, beta, "ema_update");
  for (size_t first = 0; first < spans.size(); first += kSpansPerLaunch) {
    const size_t count =
        std::min<size_t>(kSpansPerLaunch, spans.size() - first);
    EmaBatch batch{};
    int64_t largest = 0;
    for (size_t k = 0; k < count; ++k) {
      const ::hybrid::kernels::EmaSpan &s = spans[first + k];
      batch.ema[k] = s.ema;
      batch.param[k] = s.param;
      batch.numel[k] = s.numel;
      batch.dtype[k] = s.paramDType == DType::BF16  ? 1
                       : s.paramDType == DType::F16 ? 2
                                                    : 0;
      largest = std::max(largest, s.numel);
    }
    if (largest == 0)
      continue;
    launch(emaKernel, dim3(gridFor(largest), static_cast<unsigned>(count)),
           dim3(kThreads), 0, reinterpret_cast<cudaStream_t>(stream), batch,
           beta);
    checkLaunch("ema_update");
  }
}

} // namespace hybrid::cuda
