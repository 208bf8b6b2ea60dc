// The activations as device functions of f32: the one copy the unary
// kernels and the GEMM epilogue (ops::Activation) share. Same formulas as
// the CPU's kernels/cpu/Activation.h.
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

} // namespace hybrid::cuda
