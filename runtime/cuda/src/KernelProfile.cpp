// The kernel profile of HYBRID_CUDA_PROFILE (see KernelProfile.h).
#include "KernelProfile.h"

#include "CudaCheck.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace hybrid::cudabackend {

bool KernelProfile::requested() {
  const char *v = std::getenv("HYBRID_CUDA_PROFILE");
  return v && *v && std::strcmp(v, "0") != 0;
}

KernelProfile::KernelProfile(int ordinal, std::string device)
    : device_(std::move(device)) {
  CurrentDevice guard(ordinal, device_);
  checkCuda(cudaEventCreate(&begin_), device_, "cudaEventCreate (profile)");
  checkCuda(cudaEventCreate(&end_), device_, "cudaEventCreate (profile)");
}

KernelProfile::~KernelProfile() {
  cudaEventDestroy(begin_);
  cudaEventDestroy(end_);
}

void KernelProfile::start(cudaStream_t stream) {
  checkCuda(cudaEventRecord(begin_, stream), device_,
            "cudaEventRecord (profile)");
}

void KernelProfile::stop(cudaStream_t stream, const std::string &key) {
  checkCuda(cudaEventRecord(end_, stream), device_,
            "cudaEventRecord (profile)");
  checkCuda(cudaEventSynchronize(end_), device_,
            "cudaEventSynchronize (profile)");
  float ms = 0;
  checkCuda(cudaEventElapsedTime(&ms, begin_, end_), device_,
            "cudaEventElapsedTime (profile)");
  Entry &e = entries_[key];
  ++e.calls;
  e.ms += ms;
}

std::string KernelProfile::report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.empty())
    return "";
  std::vector<std::pair<std::string, Entry>> rows(entries_.begin(),
                                                  entries_.end());
  std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.ms > b.second.ms;
  });
  double total = 0;
  for (const auto &r : rows)
    total += r.second.ms;
  std::string out = device_ + " kernel profile (" + std::to_string(total) +
                    " ms of kernels):\n";
  char line[64];
  for (const auto &[key, e] : rows) {
    std::snprintf(line, sizeof line, "%10.3f ms %6.1f%% %8ld x %9.2f us  ",
                  e.ms, 100 * e.ms / total, e.calls, 1000 * e.ms / e.calls);
    out += line + key + "\n";
  }
  return out;
}

} // namespace hybrid::cudabackend
