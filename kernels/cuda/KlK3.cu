// kl_k3 and kl_k3_grad: the k3 estimate of KL to the reference per token
// and its gradient, one thread an element (kernels/common/KlK3.h holds the
// math and the checks both backends share; expf may differ from the CPU's
// exp in the last bits).
#include "Device.cuh"
#include "Kernels.h"

#include "common/KlK3.h"

namespace hybrid::cuda::kernels {
namespace {

__global__ void klKernel(const float *logp, const float *ref, float *out,
                         int64_t n) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = ::hybrid::kernels::klK3(logp[i], ref[i]);
}

__global__ void klGradKernel(const float *logp, const float *ref,
                             const float *g, float *out, int64_t n) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = ::hybrid::kernels::klK3Grad(logp[i], ref[i], g[i]);
}

const float *f32(const ConstTensor &t) {
  return static_cast<const float *>(t.data);
}

} // namespace

void klK3(const CudaCall &call) {
  const auto a = KlK3Args::bind(call, "kl_k3");
  const KlK3Problem p = describeKlK3(a, a.kl, "kl_k3");
  if (p.n == 0)
    return;
  launch(klKernel, gridFor(p.n), kThreads, 0, streamOf(call), f32(a.logprobs),
         f32(a.refLogprobs), static_cast<float *>(a.kl.data), p.n);
  checkLaunch("kl_k3");
}

void klK3Grad(const CudaCall &call) {
  const auto a = KlK3GradArgs::bind(call, "kl_k3_grad");
  const KlK3Problem p = describeKlK3(a, a.gradLogprobs, "kl_k3_grad");
  expectDType(a.grad, DType::F32, "kl_k3_grad", "grad");
  expectShape(a.grad, a.logprobs.shape, "kl_k3_grad", "grad");
  if (p.n == 0)
    return;
  launch(klGradKernel, gridFor(p.n), kThreads, 0, streamOf(call),
         f32(a.logprobs), f32(a.refLogprobs), f32(a.grad),
         static_cast<float *>(a.gradLogprobs.data), p.n);
  checkLaunch("kl_k3_grad");
}

} // namespace hybrid::cuda::kernels
