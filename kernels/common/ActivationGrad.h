// activation_grad calls as plain data, checked once for every backend.
#pragma once

#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

/// One call: grad_in = grad_out act'(input) over n elements of `dtype` (act'
/// is ActivationMath.h's, both backends').
struct ActivationGradProblem {
  DType dtype = DType::F32;
  int64_t n = 0;
  Activation activation = Activation::Relu;
};

/// Checks the call (input, grad_out and result of one shape and float
/// dtype; an activation other than None) and describes it.
ActivationGradProblem describeActivationGrad(const ActivationGradArgs &a);

} // namespace hybrid::kernels
