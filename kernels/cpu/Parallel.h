// How kernels split work over OpenMP threads: only loops with enough work are
// parallel, so the many small tensors of a decode step stay on one thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include <omp.h>

namespace hybrid::cpu {

/// Below this much work (elements times a per-element cost, about a
/// millisecond on one core) a loop stays serial. Forking is cheap on an idle
/// machine, but on a busy one (a CI host running tests side by side) each
/// parallel region can wait a scheduler slice for its second thread, so
/// only loops long enough to amortise that are split.
constexpr int64_t kParallelMinWork = 1 << 20;

/// Whether a loop of n items of workPerItem each is worth threads (never
/// inside another parallel region: the outer one already uses them all).
inline bool worthThreads(int64_t n, int64_t workPerItem) {
  return n > 1 && n * workPerItem >= kParallelMinWork &&
         omp_get_max_threads() > 1 && !omp_in_parallel();
}

/// The threads a parallel loop may use: `limit` when positive (a kernel
/// whose scratch holds that many), else all of them.
inline int loopThreads(int limit) {
  return limit > 0 ? limit : omp_get_max_threads();
}

/// Calls fn(i) for i in [0, n); parallel when n * workPerItem is large, on
/// at most `threads` threads (0: all). fn may use omp_get_thread_num() to
/// pick its scratch. fn must not throw: validate before the loop.
template <typename Fn>
void parallelFor(int64_t n, int64_t workPerItem, Fn &&fn, int threads = 0) {
  const bool parallel =
      worthThreads(n, workPerItem) && loopThreads(threads) > 1;
#pragma omp parallel for schedule(static) if (parallel)                        \
    num_threads(loopThreads(threads))
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}

/// Calls fn(begin, end) on contiguous chunks covering [0, n), one per thread
/// when n * workPerItem is large, else once with [0, n).
template <typename Fn>
void parallelChunks(int64_t n, int64_t workPerItem, Fn &&fn, int threads = 0) {
  if (n <= 0)
    return;
  if (!worthThreads(n, workPerItem) || loopThreads(threads) < 2) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel num_threads(loopThreads(threads))
  {
    int64_t threads = omp_get_num_threads();
    int64_t t = omp_get_thread_num();
    int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    if (begin < end)
      fn(begin, end);
  }
}

} // namespace hybrid::cpu
