// The activations' backward (ops::ActivationGrad): grad_in = grad_out
// act'(input) per element, f32/bf16/f16, computed in f32 and rounded once.
#include "Activation.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

namespace hybrid::cpu::kernels {

void activationGrad(const KernelCall &call) {
  const char *kernel = "activation_grad";
  expectArity(call, kernel, 2, 1);
  const ConstTensor &input = call.operands[0], &gradOut = call.operands[1];
  const Tensor &gradIn = call.results[0];
  expectSameDType(gradOut, input, kernel, "grad_out", "input");
  expectSameDType(gradIn, input, kernel, "result", "input");
  expectShape(gradOut, input.shape, kernel, "grad_out");
  expectShape(gradIn, input.shape, kernel, "result");
  const Activation act = call.attrs<ops::ActivationGrad>().activation;
  if (act == Activation::None || static_cast<int>(act) >= kActivations)
    fail(kernel, "invalid activation " + std::to_string(static_cast<int>(act)) +
                     " (relu, gelu, gelu_tanh or silu)");
  visitFloat(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    const S *x = input.as<S>(), *g = gradOut.as<S>();
    S *out = gradIn.as<S>();
    // A transcendental or two per element (see Unary.cpp's costs).
    parallelChunks(input.numel(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        out[i] = fromFloat<S>(
            cpu::activationGrad(act, toFloat(x[i]), toFloat(g[i])));
    });
  });
}

} // namespace hybrid::cpu::kernels
