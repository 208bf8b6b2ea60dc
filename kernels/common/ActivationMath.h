// The activations as scalar f32 functions, and their derivatives: one
// definition for the CPU kernels (kernels/cpu/Activation.h) and the CUDA
// kernels (kernels/cuda/Activation.cuh), host and device code alike, so
// that both backends evaluate the same formulas (the unary kernels, the
// linear's epilogue, activation_grad).
#pragma once

#include "hybrid/Ops.h"

#include "hybrid/HostDevice.h"
#include <math.h>

namespace hybrid::activation {

/// Stable for large |x|: exp never overflows.
HYBRID_HOST_DEVICE float sigmoidOf(float x) {
  if (x >= 0)
    return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

HYBRID_HOST_DEVICE float reluOf(float x) {
  return x < 0 ? 0.0f : x;
} // NaN stays NaN
HYBRID_HOST_DEVICE float siluOf(float x) { return x * sigmoidOf(x); }

HYBRID_HOST_DEVICE float geluErfOf(float x) {
  const float kInvSqrt2 = 0.7071067811865476f;
  return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
}

/// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): one expf instead of tanhf,
/// about three times faster and as exact (GPT-2 spends a sixth of its
/// forward here). exp overflowing to inf gives -0, the limit.
HYBRID_HOST_DEVICE float geluTanhOf(float x) {
  const float k2Alpha = 1.5957691216057308f; // 2 sqrt(2 / pi)
  return x / (1.0f + expf(-k2Alpha * (x + 0.044715f * x * x * x)));
}

HYBRID_HOST_DEVICE float activate(Activation a, float x) {
  switch (a) {
  case Activation::None:
    return x;
  case Activation::Relu:
    return reluOf(x);
  case Activation::GeluErf:
    return geluErfOf(x);
  case Activation::GeluTanh:
    return geluTanhOf(x);
  case Activation::Silu:
    return siluOf(x);
  }
  return x;
}

/// sigmoid(x) and 1 - sigmoid(x) = sigmoid(-x) from one exp, each without
/// the cancellation of 1 - s where s nears 1.
HYBRID_HOST_DEVICE void sigmoidPair(float x, float &s, float &oneMinusS) {
  const float e = expf(-fabsf(x)), r = 1.0f / (1.0f + e);
  s = x >= 0 ? r : e * r;
  oneMinusS = x >= 0 ? e * r : r;
}

// The derivatives act'(x), as hg's VJP rules define them (VjpRules.cpp),
// evaluated where their terms would cancel in f32 through the sigmoids
// they are: 1 + tanh u = 2 sigmoid(2u), 1 - tanh^2 u = 4 sigmoid(2u)
// sigmoid(-2u), 1 + erf(x / sqrt 2) = erfc(-x / sqrt 2).

/// silu: s (1 + x (1 - s)), s = sigmoid(x).
HYBRID_HOST_DEVICE float siluSlope(float x) {
  float s, oneMinusS;
  sigmoidPair(x, s, oneMinusS);
  return s * (1.0f + x * oneMinusS);
}

/// gelu (erf): Phi(x) + x phi(x).
HYBRID_HOST_DEVICE float geluErfSlope(float x) {
  const float kInvSqrt2 = 0.7071067811865476f;
  const float kInvSqrt2Pi = 0.3989422804014327f;
  const float cdf = 0.5f * erfcf(-x * kInvSqrt2);
  return cdf + x * (kInvSqrt2Pi * expf(-0.5f * x * x));
}

/// gelu_tanh: (1 + tanh u)/2 + x/2 (1 - tanh^2 u) k (1 + 3 a x^2), u = k (x
/// + a x^3), k = sqrt(2 / pi), a = 0.044715; with t = sigmoid(2u) that is
/// t + 2 x t (1 - t) k (1 + 3 a x^2).
/// Past |x| = 20 the formula's f32 values are exactly 1 and -0 (t or 1 - t
/// is 0); past ~1e13 its terms overflow into inf * 0 = NaN, so those values
/// are returned directly there.
HYBRID_HOST_DEVICE float geluTanhSlope(float x) {
  if (x > 20.0f)
    return 1.0f;
  if (x < -20.0f)
    return -0.0f;
  const float kK = 0.7978845608028654f; // sqrt(2 / pi)
  const float kA = 0.044715f;
  const float x2 = x * x;
  float t, oneMinusT;
  sigmoidPair(2.0f * kK * (x + kA * x2 * x), t, oneMinusT);
  const float du = kK * (1.0f + 3.0f * kA * x2);
  return t * (1.0f + 2.0f * x * oneMinusT * du);
}

/// grad_out act'(x), in f32. relu's is grad_out where x > 0, else 0 (as a
/// select, so an infinite grad_out is not multiplied by 0).
HYBRID_HOST_DEVICE float activationGrad(Activation a, float x, float gradOut) {
  switch (a) {
  case Activation::None:
    return gradOut;
  case Activation::Relu:
    return x > 0 ? gradOut : 0.0f;
  case Activation::GeluErf:
    return gradOut * geluErfSlope(x);
  case Activation::GeluTanh:
    return gradOut * geluTanhSlope(x);
  case Activation::Silu:
    return gradOut * siluSlope(x);
  }
  return gradOut;
}

} // namespace hybrid::activation
