// The activations and their derivatives for the CPU kernels: the shared
// definitions of kernels/common/ActivationMath.h.
#pragma once

#include "common/ActivationMath.h"

namespace hybrid::cpu {
using namespace hybrid::activation;
} // namespace hybrid::cpu
