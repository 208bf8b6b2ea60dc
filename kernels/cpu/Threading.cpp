// The kernels' worker threads: one pool for every kernel, GEMMs included
// (two pools spinning against each other ruin a small host). The thread
// that starts a parallel loop works on it too and never waits for a worker
// that has not started: on a shared host a worker may wait milliseconds for
// a core, and an OpenMP-style barrier made every parallel kernel wait with
// it.
#include "Parallel.h"
#include "Scratch.h"

#include "KernelCheck.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HYBRID_PAUSE() _mm_pause()
#else
#define HYBRID_PAUSE() std::this_thread::yield()
#endif

namespace hybrid::cpu {
namespace {

/// Pauses a worker spins for the next loop before it sleeps (about 50 us):
/// long enough to bridge the serial kernels between parallel ones, short
/// enough not to take a shared host's cores from others.
constexpr int kWorkerSpins = 2000;

thread_local int tSlot = 0;
thread_local bool tInLoop = false;

/// Sets the calling thread's loop slot for the scope.
class SlotScope {
public:
  explicit SlotScope(int slot) : slot_(tSlot), inLoop_(tInLoop) {
    tSlot = slot;
    tInLoop = true;
  }
  ~SlotScope() {
    tSlot = slot_;
    tInLoop = inLoop_;
  }

private:
  int slot_;
  bool inLoop_;
};

/// The pool. One loop runs at a time (callers on several threads take
/// turns). A loop is published as a generation number packed with its
/// chunk counters into one atomic word, so a worker that wakes up late can
/// neither claim a chunk of a later loop nor be waited for.
class WorkerPool {
public:
  static WorkerPool &get() {
    // Never destroyed: workers sleep until the process exits.
    static WorkerPool *pool = new WorkerPool(defaultThreads());
    return *pool;
  }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  void resize(int threads) {
    std::lock_guard<std::mutex> running(runMutex_);
    stopWorkers();
    threads_ = threads;
    for (int i = 1; i < threads; ++i)
      workers_.emplace_back([this] { workerLoop(); });
  }

  void run(int64_t chunks, int limit, detail::ChunkFn fn, void *context) {
    std::lock_guard<std::mutex> running(runMutex_);
    const uint64_t generation = ++generation_ & 0xffffffffu;
    // Everything a worker reads is stored before the generation it acquires.
    fn_ = fn;
    context_ = context;
    limit_.store(limit, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    join_.store(generation << 32, std::memory_order_release);
    claim_.store(generation << 32 | uint64_t(chunks) << 16,
                 std::memory_order_release);
    posted_.store(static_cast<uint32_t>(generation), std::memory_order_release);
    if (sleepers_.load(std::memory_order_acquire) > 0) {
      // Taking the lock orders this wake-up after a sleeper's last check.
      { std::lock_guard<std::mutex> lock(sleepMutex_); }
      wake_.notify_all();
    }
    {
      SlotScope scope(0);
      work(static_cast<uint32_t>(generation));
    }
    // Wait only for chunks that others have claimed and are running.
    for (int spins = 0;
         done_.load(std::memory_order_acquire) != static_cast<int64_t>(chunks);
         ++spins) {
      if (spins < 4096)
        HYBRID_PAUSE();
      else
        std::this_thread::yield();
    }
  }

private:
  explicit WorkerPool(int threads) { resize(threads); }

  static int defaultThreads() {
    // OMP_NUM_THREADS keeps working as it did when the kernels used OpenMP.
    if (const char *env = std::getenv("OMP_NUM_THREADS")) {
      const int n = std::atoi(env);
      if (n > 0)
        return n;
    }
    const unsigned n = std::thread::hardware_concurrency();
    return n ? static_cast<int>(n) : 1;
  }

  /// Claims and runs chunks of loop `generation` until none are left.
  void work(uint32_t generation) {
    uint64_t word = claim_.load(std::memory_order_acquire);
    while (true) {
      const uint64_t next = word & 0xffff, total = (word >> 16) & 0xffff;
      if ((word >> 32) != generation || next >= total)
        return;
      if (!claim_.compare_exchange_weak(word, word + 1,
                                        std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        continue;
      // The loop cannot finish before this chunk does, so fn_ and context_
      // are still this loop's.
      fn_(context_, static_cast<int64_t>(next));
      done_.fetch_add(1, std::memory_order_release);
      word = claim_.load(std::memory_order_acquire);
    }
  }

  /// Takes a worker slot in loop `generation`: 1 .. limit - 1, or 0 when
  /// the loop is over or has enough threads.
  int join(uint32_t generation) {
    uint64_t word = join_.load(std::memory_order_acquire);
    while (true) {
      const int joined = static_cast<int>(word & 0xffffffffu);
      if ((word >> 32) != generation ||
          joined + 1 >= limit_.load(std::memory_order_acquire))
        return 0;
      if (join_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
        return joined + 1;
    }
  }

  void workerLoop() {
    uint32_t seen = posted_.load(std::memory_order_acquire);
    while (true) {
      // Spin briefly: kernels come back to back, and waking from a futex
      // costs tens of microseconds.
      uint32_t now = posted_.load(std::memory_order_acquire);
      for (int spins = 0; now == seen && spins < kWorkerSpins && !stopping_;
           ++spins) {
        HYBRID_PAUSE();
        now = posted_.load(std::memory_order_acquire);
      }
      if (now == seen) {
        std::unique_lock<std::mutex> lock(sleepMutex_);
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        wake_.wait(lock, [&] {
          return stopping_ || posted_.load(std::memory_order_acquire) != seen;
        });
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
        if (stopping_)
          return;
        now = posted_.load(std::memory_order_acquire);
      }
      if (stopping_)
        return;
      seen = now;
      if (const int slot = join(now)) {
        SlotScope scope(slot);
        work(now);
      }
    }
  }

  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(sleepMutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_)
      t.join();
    workers_.clear();
    stopping_ = false;
  }

  std::atomic<int> threads_{1};
  std::vector<std::thread> workers_;
  std::mutex runMutex_;
  std::mutex sleepMutex_;
  std::condition_variable wake_;
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  // The running loop: generation << 32 | chunks << 16 | next chunk, the
  // generation << 32 | joined workers, chunks done, and the thread limit.
  uint64_t generation_ = 0;
  std::atomic<uint64_t> claim_{0};
  std::atomic<uint64_t> join_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int> limit_{1};
  std::atomic<uint32_t> posted_{0};
  detail::ChunkFn fn_ = nullptr;
  void *context_ = nullptr;
};

} // namespace

namespace detail {

void runChunks(int64_t chunks, int threads, ChunkFn fn, void *context) {
  if (chunks <= 0)
    return;
  // The chunk counter has 16 bits; loops never ask for that many chunks.
  if (threads < 2 || chunks == 1 || inParallelLoop() || chunks > 0xffff) {
    for (int64_t c = 0; c < chunks; ++c)
      fn(context, c);
    return;
  }
  WorkerPool::get().run(chunks, threads, fn, context);
}

} // namespace detail

bool inParallelLoop() { return tInLoop; }

int workerSlot() { return tSlot; }

void setNumThreads(int n) {
  if (n <= 0) {
    const unsigned hw = std::thread::hardware_concurrency();
    n = hw ? static_cast<int>(hw) : 1;
  }
  if (n != WorkerPool::get().threads())
    WorkerPool::get().resize(n);
}

int numThreads() { return WorkerPool::get().threads(); }

int workerThreads() { return inParallelLoop() ? 1 : numThreads(); }

int scratchThreads(const KernelCall &call, const ScratchLayout &layout,
                   const char *kernel) {
  const int wanted = workerThreads();
  const size_t have = call.scratch ? call.scratchBytes : 0;
  if (have >= layout.bytes(wanted))
    return wanted;
  const size_t base = alignScratch(layout.shared);
  const size_t each = alignScratch(layout.perThread);
  if (have < base + each)
    fail(kernel, "needs " + std::to_string(layout.bytes(wanted)) +
                     " bytes of scratch, got " + std::to_string(have));
  return static_cast<int>((have - base) / each);
}

} // namespace hybrid::cpu
