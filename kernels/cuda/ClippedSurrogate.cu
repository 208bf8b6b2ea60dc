// clipped_surrogate and clipped_surrogate_grad: PPO's clipped objective per
// token and its gradient, one thread an element (kernels/common/
// ClippedSurrogate.h holds the math and the checks both backends share;
// expf may differ from the CPU's exp in the last bits).
#include "Device.cuh"
#include "Kernels.h"

#include "common/ClippedSurrogate.h"

namespace hybrid::cuda::kernels {
namespace {

__global__ void surrogateKernel(const float *logp, const float *old,
                                const float *adv, const float *mask, float *out,
                                int64_t n, float lo, float hi) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = ::hybrid::kernels::clippedSurrogate(logp[i], old[i], adv[i],
                                                 mask[i], lo, hi);
}

__global__ void surrogateGradKernel(const float *logp, const float *old,
                                    const float *adv, const float *mask,
                                    const float *g, float *out, int64_t n,
                                    float lo, float hi) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = ::hybrid::kernels::clippedSurrogateGrad(logp[i], old[i], adv[i],
                                                     mask[i], g[i], lo, hi);
}

const float *f32(const ConstTensor &t) {
  return static_cast<const float *>(t.data);
}

} // namespace

void clippedSurrogate(const CudaCall &call) {
  const auto a = ClippedSurrogateArgs::bind(call, "clipped_surrogate");
  const ClippedSurrogateProblem p =
      describeClippedSurrogate(a, a.loss, "clipped_surrogate");
  if (p.n == 0)
    return;
  launch(surrogateKernel, gridFor(p.n), kThreads, 0, streamOf(call),
         f32(a.logprobs), f32(a.oldLogprobs), f32(a.advantages), f32(a.mask),
         static_cast<float *>(a.loss.data), p.n, p.lo, p.hi);
  checkLaunch("clipped_surrogate");
}

void clippedSurrogateGrad(const CudaCall &call) {
  const auto a = ClippedSurrogateGradArgs::bind(call, "clipped_surrogate_grad");
  const ClippedSurrogateProblem p =
      describeClippedSurrogate(a, a.gradLogprobs, "clipped_surrogate_grad");
  expectDType(a.grad, DType::F32, "clipped_surrogate_grad", "grad");
  expectShape(a.grad, a.logprobs.shape, "clipped_surrogate_grad", "grad");
  if (p.n == 0)
    return;
  launch(surrogateGradKernel, gridFor(p.n), kThreads, 0, streamOf(call),
         f32(a.logprobs), f32(a.oldLogprobs), f32(a.advantages), f32(a.mask),
         f32(a.grad), static_cast<float *>(a.gradLogprobs.data), p.n, p.lo,
         p.hi);
  checkLaunch("clipped_surrogate_grad");
}

} // namespace hybrid::cuda::kernels
