// clipped_surrogate and clipped_surrogate_grad: PPO's clipped objective per
// token and its gradient (kernels/common/ClippedSurrogate.h holds the math
// and the checks both backends share).
#include "Kernels.h"
#include "Parallel.h"

#include "common/ClippedSurrogate.h"

namespace hybrid::cpu::kernels {

void clippedSurrogate(const KernelCall &call) {
  const auto a = ClippedSurrogateArgs::bind(call, "clipped_surrogate");
  const ClippedSurrogateProblem p =
      describeClippedSurrogate(a, a.loss, "clipped_surrogate");
  const float *logp = a.logprobs.as<float>(), *old = a.oldLogprobs.as<float>(),
              *adv = a.advantages.as<float>(), *mask = a.mask.as<float>();
  float *out = a.loss.as<float>();
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = ::hybrid::kernels::clippedSurrogate(logp[i], old[i], adv[i],
                                                 mask[i], p.lo, p.hi);
}

void clippedSurrogateGrad(const KernelCall &call) {
  const auto a = ClippedSurrogateGradArgs::bind(call, "clipped_surrogate_grad");
  const ClippedSurrogateProblem p =
      describeClippedSurrogate(a, a.gradLogprobs, "clipped_surrogate_grad");
  expectDType(a.grad, DType::F32, "clipped_surrogate_grad", "grad");
  expectShape(a.grad, a.logprobs.shape, "clipped_surrogate_grad", "grad");
  const float *logp = a.logprobs.as<float>(), *old = a.oldLogprobs.as<float>(),
              *adv = a.advantages.as<float>(), *mask = a.mask.as<float>(),
              *g = a.grad.as<float>();
  float *out = a.gradLogprobs.as<float>();
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = ::hybrid::kernels::clippedSurrogateGrad(logp[i], old[i], adv[i],
                                                     mask[i], g[i], p.lo, p.hi);
}

} // namespace hybrid::cpu::kernels
