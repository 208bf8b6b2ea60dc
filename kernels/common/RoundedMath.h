// Arithmetic rounded once per operation on every backend, for kernels
// whose results must be torch's bits (each torch op rounds on its own, so
// a fused multiply-add would round once where torch rounds twice).
#pragma once

#include "hybrid/HostDevice.h"
#include <cmath>

namespace hybrid::kernels {

namespace rn {

// Each product, sum, quotient and square root rounded to nearest on its
// own: the _rn intrinsics on the device (nvcc would fuse multiply-adds),
// plain operators on the host, whose callers are compiled without
// contraction (cpu/CMakeLists.txt: -ffp-contract=off for their files).
HYBRID_HOST_DEVICE float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
HYBRID_HOST_DEVICE float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
HYBRID_HOST_DEVICE float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
HYBRID_HOST_DEVICE float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
HYBRID_HOST_DEVICE float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

/// A double product never fused into the sum after it.
HYBRID_HOST_DEVICE double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

} // namespace rn

} // namespace hybrid::kernels
