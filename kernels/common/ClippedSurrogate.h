// PPO's clipped surrogate (ops::ClippedSurrogate) and its backward
// (ops::ClippedSurrogateGrad): the per-token math every backend runs, in
// torch's order so that the CPU and CUDA kernels give DeepSpeed-Chat's
// bits, and the call's checks, written once.
#pragma once

#include "common/Check.h"

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>
#include <string>

namespace hybrid::kernels {

/// One call: n elements, the clamp's bounds as f32 (torch rounds a clamp's
/// Python scalars to the tensor's type).
struct ClippedSurrogateProblem {
  int64_t n = 0;
  float lo = 0.8f, hi = 1.2f;
};

namespace surrogate {

HYBRID_HOST_DEVICE float ratio(float logp, float old, float mask) {
#if defined(__CUDA_ARCH__)
  return expf((logp - old) * mask);
#else
  return std::exp((logp - old) * mask);
#endif
}

/// torch.clamp: NaN stays NaN.
HYBRID_HOST_DEVICE float clamp(float r, float lo, float hi) {
  return r < lo ? lo : r > hi ? hi : r;
}

/// torch.maximum: NaN propagates.
HYBRID_HOST_DEVICE float maximum(float a, float b) {
  return (a > b || a != a) ? a : b;
}

} // namespace surrogate

/// max(-A r, -A clamp(r, lo, hi)) mask, r = exp((logp - old) mask).
HYBRID_HOST_DEVICE float clippedSurrogate(float logp, float old, float adv,
                                          float mask, float lo, float hi) {
  const float r = surrogate::ratio(logp, old, mask);
  const float negA = -adv;
  return surrogate::maximum(negA * r, negA * surrogate::clamp(r, lo, hi)) *
         mask;
}

/// d loss / d logp at upstream gradient g, as torch autograd computes it:
/// torch.maximum splits a tie's gradient in halves and the clamp passes
/// its part inside [lo, hi] only.
HYBRID_HOST_DEVICE float clippedSurrogateGrad(float logp, float old, float adv,
                                              float mask, float g, float lo,
                                              float hi) {
  const float r = surrogate::ratio(logp, old, mask);
  const float negA = -adv;
  const float pg1 = negA * r, pg2 = negA * surrogate::clamp(r, lo, hi);
  const float t = g * mask;
  const float g1 = pg1 == pg2 ? t / 2 : pg1 < pg2 ? 0.0f : t;
  const float g2 = pg1 == pg2 ? t / 2 : pg1 > pg2 ? 0.0f : t;
  const bool inside = r >= lo && r <= hi;
  const float dr = g1 * negA + (inside ? g2 * negA : 0.0f);
  return dr * r * mask;
}

/// Checks a call of either op (f32 operands and result of one shape; the
/// backward's fifth operand is the upstream gradient) and describes it.
template <typename Args>
ClippedSurrogateProblem describeClippedSurrogate(const Args &a,
                                                 const Tensor &result,
                                                 const char *kernel) {
  const ConstTensor *in[] = {&a.logprobs, &a.oldLogprobs, &a.advantages,
                             &a.mask};
  const char *names[] = {"logprobs", "old_logprobs", "advantages", "mask"};
  for (int i = 0; i < 4; ++i) {
    expectDType(*in[i], DType::F32, kernel, names[i]);
    expectShape(*in[i], a.logprobs.shape, kernel, names[i]);
  }
  expectDType(result, DType::F32, kernel, "result");
  expectShape(result, a.logprobs.shape, kernel, "result");
  if (!(a.attrs.clipLow >= 0) || !(a.attrs.clipHigh >= 0))
    fail(kernel, "clip_low and clip_high must be >= 0, got " +
                     std::to_string(a.attrs.clipLow) + " and " +
                     std::to_string(a.attrs.clipHigh));
  ClippedSurrogateProblem p;
  p.n = a.logprobs.numel();
  p.lo = static_cast<float>(1.0 - a.attrs.clipLow);
  p.hi = static_cast<float>(1.0 + a.attrs.clipHigh);
  return p;
}

} // namespace hybrid::kernels
