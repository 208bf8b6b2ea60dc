// The activations and their derivatives as device functions of f32 (the
// unary kernels, the GEMM epilogue, activation_grad): the shared
// definitions of kernels/common/ActivationMath.h, the CPU's too.
#pragma once

#include "common/ActivationMath.h"

namespace hybrid::cuda {
using namespace hybrid::activation;
} // namespace hybrid::cuda
