// Scratch memory of a kernel call: the caller's buffer (KernelCall::scratch)
// carved into a shared region and one region per worker thread. A kernel
// computes its layout from shapes and dtypes alone, so the same function
// sizes the buffer (ScratchFn, before the first run) and carves it (run).
#pragma once

#include "cpu/CpuKernels.h"

#include <cstddef>
#include <cstdint>

namespace hybrid::cpu {

/// Scratch regions are 64-byte aligned (cache lines; the caller's buffer is).
constexpr size_t kScratchAlign = 64;

inline size_t alignScratch(size_t bytes) {
  return (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

/// Hands out consecutive aligned arrays from a region; with a null base it
/// only counts, which is how layouts are measured.
class Carve {
public:
  explicit Carve(void *base = nullptr) : base_(static_cast<char *>(base)) {}
  template <typename T> T *take(size_t count) {
    const size_t offset = used_;
    used_ += alignScratch(count * sizeof(T));
    return base_ ? reinterpret_cast<T *>(base_ + offset) : nullptr;
  }
  size_t used() const { return used_; }

private:
  char *base_;
  size_t used_ = 0;
};

/// A kernel's scratch: `shared` bytes, then `perThread` bytes for each
/// worker thread.
struct ScratchLayout {
  size_t shared = 0;
  size_t perThread = 0;
  size_t bytes(int threads) const {
    return alignScratch(shared) + alignScratch(perThread) * threads;
  }
};

/// The worker threads a kernel may use now: the OpenMP thread count, or 1
/// inside a parallel region (the outer region already uses them all).
int workerThreads();

/// How many worker threads the call's scratch supports (at most
/// workerThreads()): a buffer sized for fewer threads runs on fewer. Throws
/// "<kernel>: needs N bytes of scratch, got M" when it cannot hold even one.
int scratchThreads(const KernelCall &call, const ScratchLayout &layout,
                   const char *kernel);

/// The shared region of the call's scratch.
inline void *sharedScratch(const KernelCall &call) { return call.scratch; }

/// Thread `t`'s region of the call's scratch.
inline void *threadScratch(const KernelCall &call, const ScratchLayout &layout,
                           int t) {
  return static_cast<char *>(call.scratch) + alignScratch(layout.shared) +
         alignScratch(layout.perThread) * static_cast<size_t>(t);
}

/// A ScratchFn from a layout function; shapes a layout cannot handle need
/// no scratch (the run reports them).
template <ScratchLayout (*Layout)(const KernelCall &)>
size_t scratchOf(const KernelCall &call, int threads) {
  try {
    return Layout(call).bytes(threads < 1 ? 1 : threads);
  } catch (...) {
    return 0;
  }
}

} // namespace hybrid::cpu
