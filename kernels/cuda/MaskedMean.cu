// masked_mean and masked_mean_grad: a per-token loss averaged under a mask
// and its gradient. The mean is one thread's sum in the CPU's order (so
// the CPU's bits: the [B, T] of a step is small); the gradient one block,
// its first thread summing the whole mask (token level) or a thread a row
// summing the row's (per sequence). kernels/common/MaskedMean.h holds the
// math and the checks both backends share.
#include "Device.cuh"
#include "Kernels.h"

#include "common/MaskedMean.h"

namespace hybrid::cuda::kernels {
namespace {

__global__ void meanKernel(const float *x, const float *m, float *out,
                           MaskedMeanProblem p) {
  awaitInputs();
  if (threadIdx.x == 0 && blockIdx.x == 0)
    out[0] = ::hybrid::kernels::maskedMean(x, m, p);
}

__global__ void tokenGradKernel(const float *m, const float *grad, float *out,
                                MaskedMeanProblem p) {
  awaitInputs();
  __shared__ float scale;
  if (threadIdx.x == 0)
    scale = maskedMeanGradScale(m, grad[0],
                                maskedmean::sum(m, p.rows * p.tokens), 0, p);
  __syncthreads();
  const float s = scale;
  for (int64_t i = threadIdx.x; i < p.rows * p.tokens; i += blockDim.x)
    out[i] = s * m[i];
}

__global__ void sequenceGradKernel(const float *m, const float *grad,
                                   float *out, MaskedMeanProblem p) {
  awaitInputs();
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= p.rows)
    return;
  const float s = maskedMeanGradScale(m, grad[0], 0.0, r, p);
  for (int64_t t = 0; t < p.tokens; ++t)
    out[r * p.tokens + t] = s * m[r * p.tokens + t];
}

const float *f32(const ConstTensor &t) {
  return static_cast<const float *>(t.data);
}

} // namespace

void maskedMean(const CudaCall &call) {
  const auto a = MaskedMeanArgs::bind(call, "masked_mean");
  const MaskedMeanProblem p = describeMaskedMean(a, "masked_mean");
  launch(meanKernel, 1, 32, 0, streamOf(call), f32(a.input), f32(a.mask),
         static_cast<float *>(a.out.data), p);
  checkLaunch("masked_mean");
}

void maskedMeanGrad(const CudaCall &call) {
  const auto a = MaskedMeanGradArgs::bind(call, "masked_mean_grad");
  const MaskedMeanProblem p = describeMaskedMeanGrad(a, "masked_mean_grad");
  if (p.rows * p.tokens == 0)
    return;
  float *out = static_cast<float *>(a.gradInput.data);
  if (p.perSequence)
    launch(sequenceGradKernel,
           static_cast<unsigned>((p.rows + kThreads - 1) / kThreads), kThreads,
           0, streamOf(call), f32(a.mask), f32(a.grad), out, p);
  else
    launch(tokenGradKernel, 1, kThreads, 0, streamOf(call), f32(a.mask),
           f32(a.grad), out, p);
  checkLaunch("masked_mean_grad");
}

} // namespace hybrid::cuda::kernels
