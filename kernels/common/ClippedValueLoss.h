// PPO's clipped value loss (ops::ClippedValueLoss) and its backward
// (ops::ClippedValueLossGrad): the per-token math every backend runs, in
// torch's order so that the CPU and CUDA kernels give DeepSpeed-Chat's
// critic_loss_fn bits, and the call's checks, written once.
#pragma once

#include "common/Check.h"
#include "common/ClippedSurrogate.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cstdint>
#include <string>

namespace hybrid::kernels {

/// One call: n elements and the clip range rounded to f32 (torch rounds
/// `old_values - cliprange_value`'s Python scalar to the tensor's type).
struct ClippedValueLossProblem {
  int64_t n = 0;
  float clip = 0.2f;
};

namespace valueloss {

/// torch.clamp(v, lo, hi) with tensor bounds: min(max(v, lo), hi), NaN
/// propagating.
HYBRID_HOST_DEVICE float clampTensor(float v, float lo, float hi) {
  const float c = v < lo ? lo : v;
  return hi < c ? hi : c;
}

} // namespace valueloss

/// max((v - R)^2, (vc - R)^2) mask, vc = clamp(v, old - clip, old + clip).
HYBRID_HOST_DEVICE float clippedValueLoss(float v, float old, float ret,
                                          float mask, float clip) {
  const float vc = valueloss::clampTensor(v, old - clip, old + clip);
  const float d1 = v - ret, d2 = vc - ret;
  return surrogate::maximum(d1 * d1, d2 * d2) * mask;
}

/// d loss / d v at upstream gradient g as torch autograd computes it:
/// torch.max splits a tie in halves, pow's backward is g (2 x), and the
/// clamp passes its part where lo <= v <= hi (bounds included).
HYBRID_HOST_DEVICE float clippedValueLossGrad(float v, float old, float ret,
                                              float mask, float g, float clip) {
  const float lo = old - clip, hi = old + clip;
  const float vc = valueloss::clampTensor(v, lo, hi);
  const float d1 = v - ret, d2 = vc - ret;
  const float l1 = d1 * d1, l2 = d2 * d2;
  const float t = g * mask;
  const float g1 = l1 == l2 ? t / 2 : l1 < l2 ? 0.0f : t;
  const float g2 = l1 == l2 ? t / 2 : l1 > l2 ? 0.0f : t;
  const bool inside = v >= lo && v <= hi;
  // Rounded as autograd's separate kernels round (never fused).
  return rn::add(rn::mul(g1, 2.0f * d1),
                 inside ? rn::mul(g2, 2.0f * d2) : 0.0f);
}

/// Checks a call of either op (f32 operands and result of one shape; the
/// backward's fifth operand is the upstream gradient) and describes it.
template <typename Args>
ClippedValueLossProblem describeClippedValueLoss(const Args &a,
                                                 const Tensor &result,
                                                 const char *kernel) {
  const ConstTensor *in[] = {&a.values, &a.oldValues, &a.returns, &a.mask};
  const char *names[] = {"values", "old_values", "returns", "mask"};
  for (int i = 0; i < 4; ++i) {
    expectDType(*in[i], DType::F32, kernel, names[i]);
    expectShape(*in[i], a.values.shape, kernel, names[i]);
  }
  expectDType(result, DType::F32, kernel, "result");
  expectShape(result, a.values.shape, kernel, "result");
  if (!(a.attrs.clip >= 0))
    fail(kernel, "clip must be >= 0, got " + std::to_string(a.attrs.clip));
  ClippedValueLossProblem p;
  p.n = a.values.numel();
  p.clip = static_cast<float>(a.attrs.clip);
  return p;
}

/// The backward's call: describeClippedValueLoss's checks and the upstream
/// gradient's (f32, the values' shape).
inline ClippedValueLossProblem
describeClippedValueLossGrad(const ClippedValueLossGradArgs &a) {
  const char *kernel = "clipped_value_loss_grad";
  const ClippedValueLossProblem p =
      describeClippedValueLoss(a, a.gradValues, kernel);
  expectDType(a.grad, DType::F32, kernel, "grad");
  expectShape(a.grad, a.values.shape, kernel, "grad");
  return p;
}

} // namespace hybrid::kernels
