// The k3 estimate of KL to the reference per token (ops::KlK3, GRPO's
// penalty) and its backward (ops::KlK3Grad): the per-token math every
// backend runs, in torch's order, and the call's checks, written once.
#pragma once

#include "common/Check.h"
#include "common/RoundedMath.h"

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>

namespace hybrid::kernels {

struct KlK3Problem {
  int64_t n = 0;
};

namespace klk3 {

HYBRID_HOST_DEVICE float exp(float x) {
#if defined(__CUDA_ARCH__)
  return expf(x);
#else
  return std::exp(x);
#endif
}

} // namespace klk3

/// (exp(d) - d) - 1, d = ref - logp (TRL's per_token_kl).
HYBRID_HOST_DEVICE float klK3(float logp, float ref) {
  const float d = ref - logp;
  return (klk3::exp(d) - d) - 1.0f;
}

/// d kl / d logp at upstream gradient g, as autograd sums its two paths:
/// g (through -d) - g exp(d) (through exp).
HYBRID_HOST_DEVICE float klK3Grad(float logp, float ref, float g) {
  return rn::sub(g, rn::mul(g, klk3::exp(ref - logp)));
}

/// Checks a call of either op: f32 operands (the backward's third is the
/// upstream gradient) and result of the log-probabilities' shape.
template <typename Args>
KlK3Problem describeKlK3(const Args &a, const Tensor &result,
                         const char *kernel) {
  expectDType(a.logprobs, DType::F32, kernel, "logprobs");
  expectDType(a.refLogprobs, DType::F32, kernel, "ref_logprobs");
  expectShape(a.refLogprobs, a.logprobs.shape, kernel, "ref_logprobs");
  expectDType(result, DType::F32, kernel, "result");
  expectShape(result, a.logprobs.shape, kernel, "result");
  return {a.logprobs.numel()};
}

} // namespace hybrid::kernels
