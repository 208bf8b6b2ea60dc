// When each kernel of a step starts on the GPU: with HYBRID_CUDA_TIMELINE=FILE
// in the environment, and kernels built with -DHYBRIDC_CUDA_TIMELINE=ON, the
// CUDA device logs every kernel's arrival and start (kernels/cuda/Timeline.h)
// and writes them to FILE as CSV when it is destroyed; bench/timeline.py
// turns the log into what each kernel of a repeated step costs. Unlike
// HYBRID_CUDA_PROFILE nothing is serialised: graphs, launch overlap and the
// step run as always (one stamp per kernel, from one thread).
#pragma once

#include <string>

namespace hybrid::cudabackend {

class KernelTimeline {
public:
  /// The file HYBRID_CUDA_TIMELINE names, or empty.
  static std::string requestedFile();

  /// Starts the log on the current device; says on stderr, and logs
  /// nothing, when the kernels have no timeline or another device logs.
  KernelTimeline(std::string device, std::string file);
  /// Writes the file (waits for the device). Never throws.
  ~KernelTimeline();
  KernelTimeline(const KernelTimeline &) = delete;
  KernelTimeline &operator=(const KernelTimeline &) = delete;

private:
  std::string device_, file_;
  bool logging_ = false;
};

} // namespace hybrid::cudabackend
