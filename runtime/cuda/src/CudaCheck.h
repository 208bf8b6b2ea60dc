// Shared by the CUDA backend's sources: failed CUDA calls as one-line
// hybrid::Errors, and making the backend's device current for a scope or a
// destructor's calls.
#pragma once

#include "hybrid/Types.h"

#include <cuda_runtime.h>

#include <string>

namespace hybrid::cudabackend {

/// "cuda:N: CALL failed: <CUDA's error string> (cudaErrorName)".
inline std::string cudaFailure(const std::string &device, const char *call,
                               cudaError_t status) {
  return device + ": " + call + " failed: " + cudaGetErrorString(status) +
         " (" + cudaGetErrorName(status) + ")";
}

/// Throws hybrid::Error naming the device and the call unless `status` is
/// cudaSuccess. Clears the thread's last error first so that a recoverable
/// failure (out of memory) does not resurface in a later, unrelated check.
inline void checkCuda(cudaError_t status, const std::string &device,
                      const char *call) {
  if (status == cudaSuccess)
    return;
  cudaGetLastError();
  throw Error(cudaFailure(device, call, status));
}

/// Makes device `ordinal` current for the scope and restores the caller's
/// current device after it (a caller may be using another GPU on this
/// thread). Costs one cudaGetDevice when the device is already current.
class CurrentDevice {
public:
  CurrentDevice(int ordinal, const std::string &device) {
    int current = -1;
    checkCuda(cudaGetDevice(&current), device, "cudaGetDevice");
    if (current == ordinal)
      return;
    checkCuda(cudaSetDevice(ordinal), device, "cudaSetDevice");
    previous_ = current;
  }
  ~CurrentDevice() {
    if (previous_ >= 0)
      cudaSetDevice(previous_); // best effort: destructors do not throw
  }
  CurrentDevice(const CurrentDevice &) = delete;
  CurrentDevice &operator=(const CurrentDevice &) = delete;

private:
  int previous_ = -1;
};

/// Runs CUDA calls in a destructor on device `ordinal`, restoring the
/// caller's current device: errors are ignored (destructors do not throw,
/// and a failed destroy leaves nothing to recover).
template <typename Fn> void onDevice(int ordinal, Fn &&fn) noexcept {
  int previous = -1;
  cudaGetDevice(&previous);
  if (previous != ordinal)
    cudaSetDevice(ordinal);
  fn();
  if (previous >= 0 && previous != ordinal)
    cudaSetDevice(previous);
}

} // namespace hybrid::cudabackend
