// What every backend inherits from Device: the refusal of stream capture
// where the backend has no graphs (the CPU runs its work at once, so there
// is nothing to record); and measuring a phase of device work.
#include "hybrid/Device.h"

#include <chrono>

namespace hybrid {

std::unique_ptr<Graph> Device::capture(Stream &,
                                       const std::function<void()> &) {
  throw Error(name() + ": this device cannot capture work into a graph");
}

void Device::launch(Graph &, Stream &) {
  throw Error(name() + ": this device has no graphs to launch");
}

PhaseCost measurePhase(Device &device, const std::function<void()> &work) {
  device.synchronize();
  const MemoryStats before = device.memoryStats();
  const auto start = std::chrono::steady_clock::now();
  work();
  device.synchronize();
  const auto end = std::chrono::steady_clock::now();
  const MemoryStats after = device.memoryStats();
  PhaseCost cost;
  cost.seconds = std::chrono::duration<double>(end - start).count();
  cost.bytesAllocated = after.bytesAllocated - before.bytesAllocated;
  cost.bytesCopied = after.bytesCopied - before.bytesCopied;
  return cost;
}

} // namespace hybrid
