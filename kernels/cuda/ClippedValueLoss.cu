// clipped_value_loss and clipped_value_loss_grad: PPO's clipped value loss
// per token and its gradient, one thread an element (kernels/common/
// ClippedValueLoss.h holds the math and the checks both backends share;
// no transcendental, so the CPU's bits).
#include "Device.cuh"
#include "Kernels.h"

#include "common/ClippedValueLoss.h"

namespace hybrid::cuda::kernels {
namespace {

__global__ void valueLossKernel(const float *v, const float *old,
                                const float *ret, const float *mask, float *out,
                                int64_t n, float clip) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = ::hybrid::kernels::clippedValueLoss(v[i], old[i], ret[i], mask[i],
                                                 clip);
}

__global__ void valueLossGradKernel(const float *v, const float *old,
                                    const float *ret, const float *mask,
                                    const float *g, float *out, int64_t n,
                                    float clip) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = ::hybrid::kernels::clippedValueLossGrad(v[i], old[i], ret[i],
                                                     mask[i], g[i], clip);
}

const float *f32(const ConstTensor &t) {
  return static_cast<const float *>(t.data);
}

} // namespace

void clippedValueLoss(const CudaCall &call) {
  const auto a = ClippedValueLossArgs::bind(call, "clipped_value_loss");
  const ClippedValueLossProblem p =
      describeClippedValueLoss(a, a.loss, "clipped_value_loss");
  if (p.n == 0)
    return;
  launch(valueLossKernel, gridFor(p.n), kThreads, 0, streamOf(call),
         f32(a.values), f32(a.oldValues), f32(a.returns), f32(a.mask),
         static_cast<float *>(a.loss.data), p.n, p.clip);
  checkLaunch("clipped_value_loss");
}

void clippedValueLossGrad(const CudaCall &call) {
  const auto a =
      ClippedValueLossGradArgs::bind(call, "clipped_value_loss_grad");
  const ClippedValueLossProblem p = describeClippedValueLossGrad(a);
  if (p.n == 0)
    return;
  launch(valueLossGradKernel, gridFor(p.n), kThreads, 0, streamOf(call),
         f32(a.values), f32(a.oldValues), f32(a.returns), f32(a.mask),
         f32(a.grad), static_cast<float *>(a.gradValues.data), p.n, p.clip);
  checkLaunch("clipped_value_loss_grad");
}

} // namespace hybrid::cuda::kernels
