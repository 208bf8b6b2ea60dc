// How kernels split work over OpenMP threads: only loops with enough work are
// parallel, so the many small tensors of a decode step stay on one thread.
#pragma once

#include <cstdint>

#include <omp.h>

namespace hybrid::cpu {

/// Below this many elements (or multiply-adds) of work a loop stays serial.
constexpr int64_t kParallelMinWork = 1 << 15;

/// Calls fn(i) for i in [0, n); parallel when n * workPerItem is large. fn
/// must not throw: validate before the loop.
template <typename Fn>
void parallelFor(int64_t n, int64_t workPerItem, Fn &&fn) {
  bool parallel =
      n > 1 && n * workPerItem >= kParallelMinWork && omp_get_max_threads() > 1;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t i = 0; i < n; ++i)
    fn(i);
}

/// Calls fn(begin, end) on contiguous chunks covering [0, n), one per thread
/// when n * workPerItem is large, else once with [0, n).
template <typename Fn>
void parallelChunks(int64_t n, int64_t workPerItem, Fn &&fn) {
  if (n <= 0)
    return;
  if (n == 1 || n * workPerItem < kParallelMinWork ||
      omp_get_max_threads() == 1) {
    fn(int64_t(0), n);
    return;
  }
#pragma omp parallel
  {
    int64_t threads = omp_get_num_threads();
    int64_t t = omp_get_thread_num();
    int64_t begin = n * t / threads, end = n * (t + 1) / threads;
    if (begin < end)
      fn(begin, end);
  }
}

} // namespace hybrid::cpu
