// kl_k3 and kl_k3_grad: the k3 estimate of KL to the reference per token
// and its gradient (kernels/common/KlK3.h holds the math and the checks
// both backends share).
#include "Kernels.h"

#include "common/KlK3.h"

namespace hybrid::cpu::kernels {

void klK3(const KernelCall &call) {
  const auto a = KlK3Args::bind(call, "kl_k3");
  const KlK3Problem p = describeKlK3(a, a.kl, "kl_k3");
  const float *logp = a.logprobs.as<float>(), *ref = a.refLogprobs.as<float>();
  float *out = a.kl.as<float>();
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = ::hybrid::kernels::klK3(logp[i], ref[i]);
}

void klK3Grad(const KernelCall &call) {
  const auto a = KlK3GradArgs::bind(call, "kl_k3_grad");
  const KlK3Problem p = describeKlK3(a, a.gradLogprobs, "kl_k3_grad");
  expectDType(a.grad, DType::F32, "kl_k3_grad", "grad");
  expectShape(a.grad, a.logprobs.shape, "kl_k3_grad", "grad");
  const float *logp = a.logprobs.as<float>(), *ref = a.refLogprobs.as<float>(),
              *g = a.grad.as<float>();
  float *out = a.gradLogprobs.as<float>();
  for (int64_t i = 0; i < p.n; ++i)
    out[i] = ::hybrid::kernels::klK3Grad(logp[i], ref[i], g[i]);
}

} // namespace hybrid::cpu::kernels
