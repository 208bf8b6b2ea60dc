// The host side of the kernels' timeline (see Timeline.h).
#include "Timeline.h"
#include "Check.h"

#include <cuda_runtime.h>

#include <mutex>

namespace hybrid::cuda::timeline {
namespace {

struct State {
  std::mutex mutex;
  std::vector<void *(*)()> files;
  Log *log = nullptr;
  size_t capacity = 0;
};

State &state() {
  static State s;
  return s;
}

/// Points every registered file's log pointer at `log`.
void point(State &s, Log *log) {
  for (auto symbol : s.files) {
    void *address = symbol();
    checkCuda(address ? cudaSuccess : cudaErrorInvalidSymbol, "timeline",
              "cudaGetSymbolAddress");
    checkCuda(cudaMemcpy(address, &log, sizeof log, cudaMemcpyHostToDevice),
              "timeline", "cudaMemcpy");
  }
}

} // namespace

bool built() {
#ifdef HYBRID_CUDA_TIMELINE
  return true;
#else
  return false;
#endif
}

bool registerFile(void *(*symbol)()) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.files.push_back(symbol);
  return true;
}

void enable(size_t capacity) {
  if (!built())
    fail("timeline", "this build has no kernel timeline (configure with "
                     "-DHYBRIDC_CUDA_TIMELINE=ON)");
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.log)
    fail("timeline", "already enabled");
  if (capacity == 0)
    fail("timeline", "a log of no launches");
  const size_t bytes = sizeof(Log) + (capacity - 1) * sizeof(Mark);
  Log *log = nullptr;
  checkCuda(cudaMalloc(&log, bytes), "timeline", "cudaMalloc");
  const Log head{0, capacity, {}};
  checkCuda(
      cudaMemcpy(log, &head, offsetof(Log, marks), cudaMemcpyHostToDevice),
      "timeline", "cudaMemcpy");
  point(s, log);
  s.log = log;
  s.capacity = capacity;
}

Logged read() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.log)
    return {};
  unsigned long long count = 0;
  checkCuda(cudaDeviceSynchronize(), "timeline", "cudaDeviceSynchronize");
  checkCuda(
      cudaMemcpy(&count, &s.log->count, sizeof count, cudaMemcpyDeviceToHost),
      "timeline", "cudaMemcpy");
  Logged logged;
  logged.marks.resize(count < s.capacity ? count : s.capacity);
  logged.dropped = count - logged.marks.size();
  if (!logged.marks.empty())
    checkCuda(cudaMemcpy(logged.marks.data(), s.log->marks,
                         logged.marks.size() * sizeof(Mark),
                         cudaMemcpyDeviceToHost),
              "timeline", "cudaMemcpy");
  return logged;
}

void disable() {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.log)
    return;
  cudaDeviceSynchronize();
  point(s, nullptr);
  cudaFree(s.log);
  s.log = nullptr;
}

} // namespace hybrid::cuda::timeline
