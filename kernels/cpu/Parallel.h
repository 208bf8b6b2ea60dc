// How kernels split work over threads: loops with enough work run in chunks
// that the calling thread and the pool's workers take one at a time, so a
// worker the OS has not scheduled yet (the host is shared) leaves its share
// to the others instead of holding the loop up. Loops with little work stay
// on the calling thread, so the many small tensors of a decode step do too.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace hybrid::cpu {

/// Below this much work (elements times a per-element cost, about a
/// millisecond on one core) a loop stays serial: waking a worker costs
/// microseconds on an idle host and more on a busy one.
constexpr int64_t kParallelMinWork = 1 << 20;

/// Chunks per thread of a parallel loop: enough that an unscheduled or
/// slower thread delays the loop by a fraction of its share, few enough
/// that taking a chunk stays cheap.
constexpr int64_t kChunksPerThread = 4;

/// The number of threads kernels may use (the calling thread included).
int numThreads();

/// Whether the calling thread is running a chunk of a parallel loop (nested
/// loops then run serially on it: the outer loop already uses every thread).
/// A loop that runs serially leaves its nested loops free to go parallel.
bool inParallelLoop();

/// The calling thread's slot in the running parallel loop: 0 for the thread
/// that started it (and outside loops), 1 .. threads - 1 for workers. A slot
/// runs its chunks one at a time, so a kernel may give each its own scratch.
int workerSlot();

namespace detail {
using ChunkFn = void (*)(void *context, int64_t chunk);
/// Runs fn(context, c) for every c in [0, chunks) on the calling thread and
/// up to threads - 1 workers; returns when all chunks have run. Runs them
/// all on the calling thread inside another loop.
void runChunks(int64_t chunks, int threads, ChunkFn fn, void *context);
} // namespace detail

/// Calls fn(c) for every chunk c in [0, chunks), each on one of at most
/// `threads` threads (one slot per thread, see workerSlot()). fn must not
/// throw: validate before the loop.
template <typename Fn>
void parallelChunkIndices(int64_t chunks, int threads, Fn &&fn) {
  using F = std::remove_reference_t<Fn>;
  detail::runChunks(
      chunks, threads,
      [](void *context, int64_t c) { (*static_cast<F *>(context))(c); },
      const_cast<void *>(static_cast<const void *>(&fn)));
}

/// Whether a loop of n items of workPerItem each is worth threads (never
/// inside another parallel loop).
inline bool worthThreads(int64_t n, int64_t workPerItem) {
  return n > 1 && n * workPerItem >= kParallelMinWork && numThreads() > 1 &&
         !inParallelLoop();
}

/// The threads a parallel loop may use: `limit` when positive (a kernel
/// whose scratch holds that many), else all of them.
inline int loopThreads(int limit) {
  return limit > 0 ? std::min(limit, numThreads()) : numThreads();
}

/// Calls fn(begin, end) on contiguous chunks covering [0, n): several per
/// thread when n * workPerItem is large, else once with [0, n). fn must not
/// throw.
template <typename Fn>
void parallelChunks(int64_t n, int64_t workPerItem, Fn &&fn, int threads = 0) {
  if (n <= 0)
    return;
  threads = loopThreads(threads);
  if (!worthThreads(n, workPerItem) || threads < 2) {
    fn(int64_t(0), n);
    return;
  }
  const int64_t chunks = std::min<int64_t>(n, threads * kChunksPerThread);
  parallelChunkIndices(chunks, threads, [&](int64_t c) {
    fn(n * c / chunks, n * (c + 1) / chunks);
  });
}

/// Calls fn(i) for i in [0, n); parallel when n * workPerItem is large, on
/// at most `threads` threads (0: all). fn may use workerSlot() to pick its
/// scratch. fn must not throw: validate before the loop.
template <typename Fn>
void parallelFor(int64_t n, int64_t workPerItem, Fn &&fn, int threads = 0) {
  parallelChunks(
      n, workPerItem,
      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          fn(i);
      },
      threads);
}

} // namespace hybrid::cpu
