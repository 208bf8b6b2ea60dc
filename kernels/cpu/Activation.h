// The activations as scalar f32 functions: the one copy the unary kernels
// and the linear kernel's epilogue (ops::Activation) share.
#pragma once

#include "hybrid/Ops.h"

#include <cmath>

namespace hybrid::cpu {

/// Stable for large |x|: exp never overflows.
inline float sigmoidOf(float x) {
  if (x >= 0)
    return 1.0f / (1.0f + std::exp(-x));
  float e = std::exp(x);
  return e / (1.0f + e);
}

inline float reluOf(float x) { return x < 0 ? 0.0f : x; } // NaN stays NaN
inline float siluOf(float x) { return x * sigmoidOf(x); }

inline float geluErfOf(float x) {
  const float kInvSqrt2 = 0.7071067811865476f;
  return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
}

/// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): one expf instead of tanhf,
/// about three times faster and as exact (GPT-2 spends a sixth of its
/// forward here). exp overflowing to inf gives -0, the limit.
inline float geluTanhOf(float x) {
  const float k2Alpha = 1.5957691216057308f; // 2 sqrt(2 / pi)
  return x / (1.0f + std::exp(-k2Alpha * (x + 0.044715f * x * x * x)));
}

inline float activate(Activation a, float x) {
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

} // namespace hybrid::cpu
