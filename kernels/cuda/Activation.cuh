// The activations as device functions of f32: the one copy the unary
// kernels and the GEMM epilogue (ops::Activation) share; and their
// derivatives, for the activation_grad kernel. Same formulas as the CPU's
// kernels/cpu/Activation.h.
#pragma once

#include "hybrid/Ops.h"

namespace hybrid::cuda {

/// Stable for large |x|: exp never overflows.
__device__ __forceinline__ float sigmoidOf(float x) {
  if (x >= 0)
    return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}

__device__ __forceinline__ float reluOf(float x) {
  return x < 0 ? 0.0f : x; // NaN stays NaN
}
__device__ __forceinline__ float siluOf(float x) { return x * sigmoidOf(x); }
__device__ __forceinline__ float geluErfOf(float x) {
  return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
}
/// 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), as the CPU computes it.
__device__ __forceinline__ float geluTanhOf(float x) {
  const float k2Alpha = 1.5957691216057308f; // 2 sqrt(2 / pi)
  return x / (1.0f + expf(-k2Alpha * (x + 0.044715f * x * x * x)));
}

__device__ __forceinline__ float activate(Activation a, float x) {
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
__device__ __forceinline__ void sigmoidPair(float x, float &s,
                                            float &oneMinusS) {
  const float e = expf(-fabsf(x)), r = 1.0f / (1.0f + e);
  s = x >= 0 ? r : e * r;
  oneMinusS = x >= 0 ? e * r : r;
}

// The derivatives act'(x), as the CPU evaluates them (see there).

/// silu: s (1 + x (1 - s)), s = sigmoid(x).
__device__ __forceinline__ float siluSlope(float x) {
  float s, oneMinusS;
  sigmoidPair(x, s, oneMinusS);
  return s * (1.0f + x * oneMinusS);
}

/// gelu (erf): Phi(x) + x phi(x).
__device__ __forceinline__ float geluErfSlope(float x) {
  const float kInvSqrt2 = 0.7071067811865476f;
  const float kInvSqrt2Pi = 0.3989422804014327f;
  const float cdf = 0.5f * erfcf(-x * kInvSqrt2);
  return cdf + x * (kInvSqrt2Pi * expf(-0.5f * x * x));
}

/// gelu_tanh: t + 2 x t (1 - t) k (1 + 3 a x^2), t = sigmoid(2u).
__device__ __forceinline__ float geluTanhSlope(float x) {
  const float kK = 0.7978845608028654f; // sqrt(2 / pi)
  const float kA = 0.044715f;
  const float x2 = x * x;
  float t, oneMinusT;
  sigmoidPair(2.0f * kK * (x + kA * x2 * x), t, oneMinusT);
  const float du = kK * (1.0f + 3.0f * kA * x2);
  return t * (1.0f + 2.0f * x * oneMinusT * du);
}

/// grad_out act'(x), in f32; relu's is a select.
__device__ __forceinline__ float activationGrad(Activation a, float x,
                                                float gradOut) {
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

} // namespace hybrid::cuda
