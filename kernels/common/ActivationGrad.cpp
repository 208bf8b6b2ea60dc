// activation_grad's host-side checks, shared by every backend.
#include "common/ActivationGrad.h"

#include "common/Check.h"

#include <string>

namespace hybrid::kernels {

ActivationGradProblem describeActivationGrad(const ActivationGradArgs &a) {
  constexpr const char *kKernel = "activation_grad";
  expectSameDType(a.gradOut, a.input, kKernel, "grad_out", "input");
  expectSameDType(a.gradIn, a.input, kKernel, "result", "input");
  expectShape(a.gradOut, a.input.shape, kKernel, "grad_out");
  expectShape(a.gradIn, a.input.shape, kKernel, "result");
  const Activation act = a.attrs.activation;
  if (act == Activation::None || static_cast<int>(act) >= kActivations)
    fail(kKernel, "invalid activation " +
                      std::to_string(static_cast<int>(act)) +
                      " (relu, gelu, gelu_tanh or silu)");
  expectFloat(a.input.dtype, kKernel, "input");
  ActivationGradProblem p;
  p.dtype = a.input.dtype;
  p.n = a.input.numel();
  p.activation = act;
  return p;
}

} // namespace hybrid::kernels
