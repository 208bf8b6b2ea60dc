// Kernels give the same results on one thread and on several: the parallel
// splits change which thread computes an element, never how.
#include "KernelTestSupport.h"

#include "cpu/Parallel.h"

#include <atomic>
#include <chrono>
#include <thread>

namespace hybrid::cpu::test {
namespace {

/// Runs `body` with 1 and then 3 threads (more than the cores is fine) and
/// returns both results.
template <typename Body>
std::pair<HostTensor, HostTensor> onOneAndThreeThreads(Body body) {
  int before = numThreads();
  setNumThreads(1);
  HostTensor one = body();
  setNumThreads(3);
  HostTensor three = body();
  setNumThreads(before);
  return {std::move(one), std::move(three)};
}

TEST(Threading, ElementwiseReductionsAndNormsAreBitwiseStable) {
  Random rng(80);
  // Large enough for every kernel here to split over threads.
  HostTensor a = rng.f32({1536, 700}), b = rng.f32({700});
  HostTensor w = rng.f32({700}), bias = rng.f32({700});
  HostTensor cond = rng.boolean({1536, 1});
  auto check = [](const std::pair<HostTensor, HostTensor> &r,
                  const std::string &what) {
    expectEqual(r.first, r.second, what);
  };
  check(onOneAndThreeThreads([&] {
          return run(ops::Binary{BinaryKind::Add}, {&a, &b}, DType::F32,
                     {1536, 700});
        }),
        "add");
  check(onOneAndThreeThreads([&] {
          return run(ops::Unary{UnaryKind::GeluErf}, {&a}, DType::F32,
                     {1536, 700});
        }),
        "gelu");
  check(onOneAndThreeThreads([&] {
          return run(ops::Select{}, {&cond, &a, &b}, DType::F32, {1536, 700});
        }),
        "select");
  check(onOneAndThreeThreads([&] {
          return run(ops::Transpose{{1, 0}}, {&a}, DType::F32, {700, 1536});
        }),
        "transpose");
  check(onOneAndThreeThreads([&] {
          return run(ops::Reduce{ReduceKind::Sum, {1}}, {&a}, DType::F32,
                     {1536, 1});
        }),
        "reduce_sum rows");
  check(onOneAndThreeThreads([&] {
          return run(ops::Reduce{ReduceKind::Max, {0}}, {&a}, DType::F32,
                     {1, 700});
        }),
        "reduce_max columns");
  check(onOneAndThreeThreads([&] {
          return run(ops::Softmax{0}, {&a}, DType::F32, {1536, 700});
        }),
        "softmax");
  check(onOneAndThreeThreads([&] {
          return run(ops::LayerNorm{1e-5}, {&a, &w, &bias}, DType::F32,
                     {1536, 700});
        }),
        "layer_norm");
  check(onOneAndThreeThreads([&] {
          return run(ops::CumSum{1}, {&a}, DType::F32, {1536, 700});
        }),
        "cumsum");
}

TEST(Threading, PerThreadScratchPathsAreBitwiseStable) {
  // Reductions, softmax and cumsum over a middle axis keep per-thread
  // accumulators.
  Random rng(83);
  HostTensor x = rng.f32({128, 300, 40});
  auto check = [](const std::pair<HostTensor, HostTensor> &r,
                  const std::string &what) {
    expectEqual(r.first, r.second, what);
  };
  check(onOneAndThreeThreads([&] {
          return run(ops::Reduce{ReduceKind::Sum, {1}, false}, {&x}, DType::F32,
                     {128, 40});
        }),
        "reduce_sum middle axis");
  check(onOneAndThreeThreads(
            [&] { return run(ops::Softmax{1}, {&x}, DType::F32, x.shape); }),
        "softmax middle axis");
  check(onOneAndThreeThreads(
            [&] { return run(ops::CumSum{1}, {&x}, DType::F32, x.shape); }),
        "cumsum middle axis");
  HostTensor q = rng.f32({8, 4, 1, 64}), kv = rng.f32({8, 4, 300, 64});
  check(onOneAndThreeThreads([&] {
          return run(ops::Attention{0.125, true},
                     {&q, &kv, &kv, nullptr, nullptr, nullptr, nullptr},
                     DType::F32, q.shape);
        }),
        "decode attention");
}

TEST(Threading, ThreadChunksSplittingRowsStayCorrect) {
  // Three threads split these results mid-row (and a single long row).
  Random rng(82);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{1000003}, {1000003}},
      {{37, 1, 9001}, {1, 3, 9001}},
      {{9999, 97}, {97}}};
  int before = numThreads();
  setNumThreads(3);
  for (auto &[sa, sb] : cases) {
    HostTensor a = rng.f32(sa), b = rng.f32(sb);
    Shape out = sa.size() == 3 ? Shape{37, 3, 9001} : sa;
    HostTensor got =
        run(ops::Binary{BinaryKind::Sub}, {&a, &b}, DType::F32, out);
    std::vector<double> want(numElements(out));
    for (int64_t k = 0; k < numElements(out); ++k) {
      auto idx = unravel(k, out);
      want[k] = a.f()[broadcastIndex(idx, sa)] - b.f()[broadcastIndex(idx, sb)];
    }
    expectNear(got, want, 1e-6, 1e-6, "sub " + shapeToString(out));
    HostTensor expanded = run(ops::BroadcastTo{}, {&b}, DType::F32, out);
    for (int64_t k = 0; k < numElements(out); ++k)
      ASSERT_EQ(expanded.f()[k], b.f()[broadcastIndex(unravel(k, out), sb)]);
  }
  setNumThreads(before);
}

TEST(Threading, GemmsAgreeAcrossThreadCounts) {
  Random rng(81);
  HostTensor x = rng.f32({96, 256}), w = rng.f32({768, 256});
  auto lin = onOneAndThreeThreads([&] {
    return run(ops::Linear{}, {&x, &w, nullptr, nullptr}, DType::F32,
               {96, 768});
  });
  expectEqual(lin.second, lin.first, "linear"); // batch-invariant GEMM
  HostTensor q = rng.f32({1, 4, 80, 64}), kv = rng.f32({1, 2, 80, 64});
  auto att = onOneAndThreeThreads([&] {
    return run(ops::Attention{0.125, true},
               {&q, &kv, &kv, nullptr, nullptr, nullptr, nullptr}, DType::F32,
               {1, 4, 80, 64});
  });
  expectEqual(att.second, att.first, "attention");
}

TEST(Threading, PoolRunsEveryChunkOnceWithOneThreadPerSlot) {
  const int before = numThreads();
  for (int threads : {1, 2, 3, 5}) {
    setNumThreads(threads);
    EXPECT_EQ(numThreads(), threads);
    for (int64_t chunks : {int64_t(1), int64_t(7), int64_t(64), int64_t(999)})
      for (int limit : {1, 2, threads}) {
        std::vector<std::atomic<int>> runs(chunks);
        std::vector<std::atomic<int>> busy(8);
        std::atomic<bool> overlap{false}, badSlot{false};
        parallelChunkIndices(chunks, limit, [&](int64_t c) {
          const int slot = workerSlot();
          if (slot < 0 || slot >= std::max(1, limit))
            badSlot = true;
          else if (busy[slot]++ != 0)
            overlap = true; // two threads in one slot: shared scratch
          ++runs[c];
          // Inside a parallel loop, nested loops run serially on the
          // calling slot (a loop run serially leaves its nested loops free
          // to use the pool).
          if (inParallelLoop()) {
            int inner = 0;
            parallelChunkIndices(
                5, limit, [&](int64_t) { inner += workerSlot() == slot; });
            EXPECT_EQ(inner, 5);
          }
          if (slot >= 0 && slot < 8)
            --busy[slot];
        });
        for (int64_t c = 0; c < chunks; ++c)
          ASSERT_EQ(runs[c].load(), 1)
              << "chunk " << c << " threads " << threads << " limit " << limit;
        EXPECT_FALSE(overlap);
        EXPECT_FALSE(badSlot);
        EXPECT_FALSE(inParallelLoop());
        EXPECT_EQ(workerSlot(), 0);
      }
  }
  setNumThreads(before);
}

TEST(Threading, CallerDoesNotWaitForIdleWorkers) {
  // The caller takes chunks itself: a loop finishes even while every worker
  // is held up (here: busy in a loop started from another thread, which
  // waits its turn), as on a host whose other cores are taken.
  const int before = numThreads();
  setNumThreads(2);
  std::atomic<int> done{0};
  parallelChunkIndices(8, 2, [&](int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ++done;
  });
  EXPECT_EQ(done.load(), 8);
  // Loops from several threads take turns and all complete.
  std::atomic<int64_t> sum{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r)
        parallelChunkIndices(16, 2, [&](int64_t c) { sum += c; });
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(sum.load(), 3 * 50 * (15 * 16 / 2));
  setNumThreads(before);
}

} // namespace
} // namespace hybrid::cpu::test
