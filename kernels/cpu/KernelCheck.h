// Validation the CPU kernels use: kernels/common's checks (every
// user-reachable inconsistency in a call becomes a hybrid::Error that names
// the kernel), visible in hybrid::cpu through CpuKernels.h.
#pragma once

#include "common/Check.h"
#include "cpu/CpuKernels.h"

#include <cstdint>
#include <string>
