// The activations' backward (ops::ActivationGrad): grad_in = grad_out
// act'(input) per element, f32/bf16/f16, computed in f32 and rounded once.
#include "Activation.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include "common/ActivationGrad.h"

namespace hybrid::cpu::kernels {

void activationGrad(const KernelCall &call) {
  const auto a = ActivationGradArgs::bind(call, "activation_grad");
  const ActivationGradProblem p = describeActivationGrad(a);
  visitFloat(p.dtype, "activation_grad", "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = a.input.as<S>(), *g = a.gradOut.as<S>();
    S *out = a.gradIn.as<S>();
    // A transcendental or two per element (see Unary.cpp's costs).
    parallelChunks(p.n, 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = fromFloat<S>(
            cpu::activationGrad(p.activation, toFloat(x[i]), toFloat(g[i])));
    });
  });
}

} // namespace hybrid::cpu::kernels
