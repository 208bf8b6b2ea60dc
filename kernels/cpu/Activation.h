// The activations and their derivatives for the CPU kernels: the shared
// definitions of kernels/common/ActivationMath.h.
#pragma once

#include "common/ActivationMath.h"

namespace hybrid::cpu {
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
} // namespace hybrid::cpu
