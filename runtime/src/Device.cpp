// What every backend inherits from Device: the refusal of stream capture
// where the backend has no graphs (the CPU runs its work at once, so there
// is nothing to record).
#include "hybrid/Device.h"

namespace hybrid {

std::unique_ptr<Graph> Device::capture(Stream &,
                                       const std::function<void()> &) {
  throw Error(name() + ": this device cannot capture work into a graph");
}

void Device::launch(Graph &, Stream &) {
  throw Error(name() + ": this device has no graphs to launch");
}

} // namespace hybrid
