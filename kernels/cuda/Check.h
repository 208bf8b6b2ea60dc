// Host-side checks only the CUDA kernels need (failed CUDA calls name
// themselves, measurement switches); the checks every backend shares are
// kernels/common/Check.h's, visible here through CudaKernels.h.
#pragma once

#include "common/Check.h"
#include "cuda/CudaKernels.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace hybrid::cuda {

/// Throws "<kernel>: <what> failed: <CUDA error string>" unless `status`
/// (a cudaError_t) is success.
void checkCuda(int status, const char *kernel, const char *what);

/// Checks the launch just enqueued (cudaGetLastError), naming the kernel.
void checkLaunch(const char *kernel);

/// The whole number environment variable `name` holds when it is one in
/// [lo, hi], else `fallback` (unset, not a number, out of range): the
/// kernels' measurement switches. Callers read it once (a static).
int envInteger(const char *name, int lo, int hi, int fallback);

/// Whether `launch` (Device.cuh) overlaps a kernel's launch with the end of
/// the kernel before it on the current device: compute capability 9.0 or
/// later, and HYBRID_CUDA_PDL not "0" (which measures what it buys).
bool overlapLaunches();

} // namespace hybrid::cuda
