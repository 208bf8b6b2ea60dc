// The kernel timeline of HYBRID_CUDA_TIMELINE (see KernelTimeline.h).
#include "KernelTimeline.h"

#include "cuda/Timeline.h"
#include "hybrid/Types.h"

#include <cstdio>
#include <cstdlib>

namespace hybrid::cudabackend {

namespace timeline = cuda::timeline;

/// Launches kept: ~128 decode steps of a 200-kernel graph, 40 times over.
constexpr size_t kCapacity = size_t(1) << 20;

std::string KernelTimeline::requestedFile() {
  const char *v = std::getenv("HYBRID_CUDA_TIMELINE");
  return v ? v : "";
}

KernelTimeline::KernelTimeline(std::string device, std::string file)
    : device_(std::move(device)), file_(std::move(file)) {
  if (!timeline::built()) {
    std::fprintf(stderr,
                 "%s: HYBRID_CUDA_TIMELINE ignored: the CUDA kernels were "
                 "built without -DHYBRIDC_CUDA_TIMELINE=ON\n",
                 device_.c_str());
    return;
  }
  try {
    timeline::enable(kCapacity);
    logging_ = true;
  } catch (const Error &e) {
    std::fprintf(stderr, "%s: HYBRID_CUDA_TIMELINE: %s\n", device_.c_str(),
                 e.what());
  }
}

KernelTimeline::~KernelTimeline() {
  if (!logging_)
    return;
  try {
    const timeline::Logged logged = timeline::read();
    timeline::disable();
    std::FILE *out = std::fopen(file_.c_str(), "w");
    if (!out) {
      std::fprintf(stderr, "%s: HYBRID_CUDA_TIMELINE: cannot write %s\n",
                   device_.c_str(), file_.c_str());
      return;
    }
    std::fputs("grid_x,grid_y,grid_z,threads,arrive_ns,start_ns\n", out);
    for (const auto &m : logged.marks)
      std::fprintf(out, "%u,%u,%u,%u,%llu,%llu\n", m.grid[0], m.grid[1],
                   m.grid[2], m.threads,
                   static_cast<unsigned long long>(m.arrive),
                   static_cast<unsigned long long>(m.start));
    std::fclose(out);
    std::fprintf(stderr, "%s: kernel timeline: %zu launches in %s%s\n",
                 device_.c_str(), logged.marks.size(), file_.c_str(),
                 logged.dropped
                     ? " (later launches past the log's capacity dropped)"
                     : "");
  } catch (const Error &e) {
    std::fprintf(stderr, "%s: HYBRID_CUDA_TIMELINE: %s\n", device_.c_str(),
                 e.what());
  }
}

} // namespace hybrid::cudabackend
