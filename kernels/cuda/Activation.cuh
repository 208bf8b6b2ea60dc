// The activations and their derivatives as device functions of f32 (the
// unary kernels, the GEMM epilogue, activation_grad): the shared
// definitions of kernels/common/ActivationMath.h, the CPU's too.
#pragma once

#include "common/ActivationMath.h"

namespace hybrid::cuda {
using activation::activate;
using activation::activationGrad;
using activation::geluErfOf;
using activation::geluErfSlope;
using activation::geluTanhOf;
using activation::geluTanhSlope;
using activation::reluOf;
using activation::sigmoidOf;
using activation::sigmoidPair;
using activation::siluOf;
using activation::siluSlope;
} // namespace hybrid::cuda
