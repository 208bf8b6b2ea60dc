// Host-side checks only the CUDA kernels need (see Check.h).
#include "Check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>

namespace hybrid::cuda {

void checkCuda(int status, const char *kernel, const char *what) {
  if (status != cudaSuccess)
    fail(kernel, std::string(what) + " failed: " +
                     cudaGetErrorString(static_cast<cudaError_t>(status)));
}

void checkLaunch(const char *kernel) {
  checkCuda(cudaGetLastError(), kernel, "kernel launch");
}

int envInteger(const char *name, int lo, int hi, int fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return fallback;
  char *end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end || n < lo || n > hi ? fallback : static_cast<int>(n);
}

} // namespace hybrid::cuda
