// Where a step's GPU time goes, kernel by kernel: with HYBRID_CUDA_PROFILE=1
// in the environment, the CUDA device brackets every kernel command with
// two timing events, waits for the second, and adds the time between them
// to the command's op and shapes; the table goes to stderr when the device
// is destroyed (Device::resetProfile starts it afresh: hybrid-run's timing
// loops call it after their warm-up). Launches then run one at a time (no
// overlap, no graphs: capture is refused), so it measures kernels, not what a
// step costs.
#pragma once

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>

namespace hybrid::cudabackend {

class KernelProfile {
public:
  /// Whether HYBRID_CUDA_PROFILE is set to something other than 0.
  static bool requested();

  KernelProfile(int ordinal, std::string device);
  ~KernelProfile();
  KernelProfile(const KernelProfile &) = delete;
  KernelProfile &operator=(const KernelProfile &) = delete;

  /// Brackets the launches `launch` makes on `stream` and charges them to
  /// `key` (op, dtype and shapes). Throws hybrid::Error.
  template <typename Fn>
  void measure(cudaStream_t stream, const std::string &key, Fn &&launch) {
    std::lock_guard<std::mutex> lock(mutex_);
    start(stream);
    launch();
    stop(stream, key);
  }

  /// Forgets every key's calls and time.
  void reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
  }

  /// The table: one line per key, by total time, with the share of the
  /// whole; empty when nothing ran.
  std::string report() const;

private:
  void start(cudaStream_t stream);
  void stop(cudaStream_t stream, const std::string &key);

  struct Entry {
    long calls = 0;
    double ms = 0;
  };
  std::string device_;
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

} // namespace hybrid::cudabackend
