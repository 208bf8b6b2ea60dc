// The memory contract of the kernels: every kernel family runs with exactly
// the scratch its ScratchFn declares (a guard region after it must stay
// untouched), declares it from shapes and dtypes alone, reports too little
// of it as an error, and allocates no heap memory that grows with the data
// while it runs.
#include "KernelTestSupport.h"

#include <cstdlib>
#include <new>

// Counts the binary's heap allocations while HeapCounter::counting (see
// KernelTestSupport.h).
void *operator new(size_t n) {
  if (hybrid::cpu::test::HeapCounter::counting) {
    hybrid::cpu::test::HeapCounter::bytes += n;
    ++hybrid::cpu::test::HeapCounter::calls;
  }
  if (void *p = std::malloc(n ? n : 1))
    return p;
  throw std::bad_alloc();
}
void *operator new[](size_t n) { return operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }

namespace hybrid::cpu::test {
namespace {

/// One call of a kernel family; `scale` multiplies its leading dimension.
struct FamilyCase {
  std::string name;
  Op op;
  std::vector<HostTensor> operands;
  std::vector<bool> absent; // per operand: pass it as absent
  DType resultType;
  Shape resultShape;

  std::vector<const HostTensor *> pointers() const {
    std::vector<const HostTensor *> p;
    for (size_t i = 0; i < operands.size(); ++i)
      p.push_back(i < absent.size() && absent[i] ? nullptr : &operands[i]);
    return p;
  }
};

/// A call of every kernel family (several for families whose scratch
/// depends on the shape), with floats of dtype `ft`.
std::vector<FamilyCase> familyCases(DType ft, int64_t scale) {
  Random rng(90);
  const int64_t R = 8 * scale;
  auto f = [&](Shape s, float lo = -2, float hi = 2) {
    return rng.floats(ft, std::move(s), lo, hi);
  };
  std::vector<FamilyCase> c;
  c.push_back({"add",
               ops::Binary{BinaryKind::Add},
               {f({R, 33}), f({33})},
               {},
               ft,
               {R, 33}});
  c.push_back({"less",
               ops::Binary{BinaryKind::Less},
               {f({R, 33}), f({R, 1})},
               {},
               DType::Bool,
               {R, 33}});
  c.push_back({"gelu_tanh",
               ops::Unary{UnaryKind::GeluTanh},
               {f({R, 65})},
               {},
               ft,
               {R, 65}});
  c.push_back({"clip", ops::Clip{-1.0, 1.0}, {f({R, 33})}, {}, ft, {R, 33}});
  c.push_back({"select",
               ops::Select{},
               {rng.boolean({R, 1}), f({R, 33}), f({33})},
               {},
               ft,
               {R, 33}});
  c.push_back(
      {"cast", ops::Cast{}, {f({R, 33}, -100, 100)}, {}, DType::I32, {R, 33}});
  c.push_back({"copy", ops::Copy{}, {f({R, 33})}, {}, ft, {33, R}});
  c.push_back({"fill", ops::Fill{1.5}, {}, {}, ft, {R, 33}});
  c.push_back({"transpose",
               ops::Transpose{{2, 0, 1}},
               {f({R, 33, 40})},
               {},
               ft,
               {40, R, 33}});
  c.push_back({"broadcast_to", ops::BroadcastTo{}, {f({33})}, {}, ft, {R, 33}});
  c.push_back({"slice",
               ops::Slice{{0, 1}, {1, 40}, {R, 0}, {2, -3}},
               {f({R, 41})},
               {},
               ft,
               {(R - 1 + 1) / 2, 14}});
  c.push_back(
      {"concat", ops::Concat{1}, {f({R, 3}), f({R, 30})}, {}, ft, {R, 33}});
  c.push_back({"gather",
               ops::Gather{0},
               {f({R, 33}), rng.integers(DType::I32, {R}, -R, R - 1)},
               {},
               ft,
               {R, 33}});
  c.push_back({"gather_nd",
               ops::GatherNd{0},
               {f({R, 5, 7}), rng.integers(DType::I64, {R, 2}, 0, 4)},
               {},
               ft,
               {R, 7}});
  c.push_back({"iota", ops::Iota{1, 2}, {}, {}, ft, {R * 33}});
  c.push_back(
      {"cumsum columns", ops::CumSum{0}, {f({R, 33})}, {}, ft, {R, 33}});
  c.push_back({"cumsum rows", ops::CumSum{1}, {f({R, 33})}, {}, ft, {R, 33}});
  c.push_back(
      {"trilu", ops::Trilu{false, 1}, {f({3, R, 33})}, {}, ft, {3, R, 33}});
  c.push_back({"reduce_sum columns",
               ops::Reduce{ReduceKind::Sum, {0}, false},
               {f({R, 33, 5})},
               {},
               ft,
               {33, 5}});
  c.push_back({"reduce_max rows",
               ops::Reduce{ReduceKind::Max, {1}, true},
               {f({R, 33})},
               {},
               ft,
               {R, 1}});
  c.push_back(
      {"softmax rows", ops::Softmax{-1}, {f({R, 65})}, {}, ft, {R, 65}});
  c.push_back({"log_softmax columns",
               ops::Softmax{0, true},
               {f({R, 65})},
               {},
               ft,
               {R, 65}});
  c.push_back({"layer_norm",
               ops::LayerNorm{1e-5, -1},
               {f({R, 65}), f({1, 65}), f({65})},
               {},
               ft,
               {R, 65}});
  c.push_back({"layer_norm no weight",
               ops::LayerNorm{1e-5, -2},
               {f({4, R, 65}), f({65}), f({R, 65})},
               {false, true, false},
               ft,
               {4, R, 65}});
  c.push_back({"rms_norm",
               ops::RmsNorm{1e-6, -1},
               {f({R, 65}), f({65})},
               {},
               ft,
               {R, 65}});
  c.push_back({"matmul batched",
               ops::MatMul{},
               {f({2, R, 33}), f({2, 33, 40})},
               {},
               ft,
               {2, R, 40}});
  c.push_back({"matmul folded",
               ops::MatMul{},
               {f({R, 33}), f({33, 300})},
               {},
               ft,
               {R, 300}});
  c.push_back({"linear",
               ops::Linear{true},
               {f({R, 260}), f({300, 260}), f({300}), f({R, 300})},
               {},
               ft,
               {R, 300}});
  c.push_back({"embedding",
               ops::Embedding{},
               {f({50, 33}), rng.integers(DType::I64, {R}, 0, 49)},
               {},
               ft,
               {R, 33}});
  c.push_back({"rotary",
               ops::Rotary{false},
               {f({1, 2, R, 16}), f({1, R, 16}), f({1, R, 16})},
               {},
               ft,
               {1, 2, R, 16}});
  c.push_back({"attention decode",
               ops::Attention{0.25, true},
               {f({2, 4, 1, 16}), f({2, 2, R * 8, 16}), f({2, 2, R * 8, 16}),
                f({2, 1, 1, R * 8}), f({4}, 0, 1), i64({1}, {R * 8 - 3}),
                rng.integers(DType::I32, {2, R * 8}, 0, 1)},
               {},
               ft,
               {2, 4, 1, 16}});
  c.push_back(
      {"attention prefill",
       ops::Attention{0.125, true, 100},
       {f({1, 2, R + 64, 64}), f({1, 1, R + 300, 64}), f({1, 1, R + 300, 24}),
        f({R + 300}), f({2}), HostTensor(), HostTensor()},
       {false, false, false, false, true, true, true},
       ft,
       {1, 2, R + 64, 24}});
  // Into a cache: one key block at small scales, several at large ones
  // (key_length counts them at run time), padding keys from a key_mask.
  c.push_back({"attention cached prefill",
               ops::Attention{0.125, true},
               {f({2, 2, 40, 32}), f({2, 1, R * 64, 32}), f({2, 1, R * 64, 32}),
                HostTensor(), HostTensor(), i64({1}, {R * 4 + 40}),
                rng.integers(DType::I64, {2, R * 64}, 0, 1)},
               {false, false, false, true, true},
               ft,
               {2, 2, 40, 32}});
  c.push_back({"cache_write",
               ops::CacheWrite{2},
               {f({2, 2, R, 16}), i64({1}, {R / 2})},
               {},
               ft,
               {2, 2, 3 * R, 16}});
  c.push_back({"sample top-k top-p",
               ops::Sample{},
               {f({R, 300}), f32({3}, {0.8f, 0.9f, 50}), i64({2}, {11, 5})},
               {},
               DType::I64,
               {R}});
  c.push_back({"sample",
               ops::Sample{},
               {f({R, 300}), f32({3}, {1.5f, 1, 0}), i64({2}, {11, 6})},
               {},
               DType::I64,
               {R}});
  return c;
}

/// Runs `body` with `threads` worker threads.
template <typename Body> void withThreads(int threads, Body body) {
  const int before = numThreads();
  setNumThreads(threads);
  body();
  setNumThreads(before);
}

TEST(Scratch, EveryFamilyRunsInExactlyItsDeclaredScratch) {
  // runKernel gives exactly the declared bytes, poisoned, with a guard.
  for (DType ft : kFloatTypes)
    for (int threads : {1, 2, 3})
      withThreads(threads, [&] {
        for (const FamilyCase &c : familyCases(ft, 4)) {
          SCOPED_TRACE(c.name + " " + dtypeName(ft) + " threads " +
                       std::to_string(threads));
          HostTensor got(c.resultType, c.resultShape);
          runKernelOn(c.op, c.pointers(), got);
          // The same result with ample scratch (threads change which
          // thread computes an element, not how, except in GEMMs).
          ScratchPolicy::resize = [](size_t b) { return 2 * b + 4096; };
          HostTensor ample(c.resultType, c.resultShape);
          runKernelOn(c.op, c.pointers(), ample);
          ScratchPolicy::resize = nullptr;
          expectEqual(got, ample, c.name);
        }
      });
}

TEST(Scratch, DeclaredFromShapesAndDtypesAlone) {
  for (DType ft : kFloatTypes)
    for (const FamilyCase &c : familyCases(ft, 2)) {
      KernelEntry entry = findKernel(c.op);
      HostTensor result(c.resultType, c.resultShape);
      KernelCall withData, withoutData;
      withData.op = withoutData.op = &c.op;
      for (const HostTensor *t : c.pointers()) {
        withData.operands.push_back(t ? t->cview() : ConstTensor::absent());
        ConstTensor shapeOnly = t ? ConstTensor(nullptr, t->dtype, t->shape)
                                  : ConstTensor::absent();
        withoutData.operands.push_back(shapeOnly);
      }
      withData.results = {result.view()};
      withoutData.results = {result.view()};
      withoutData.results[0].data = nullptr;
      for (int threads : {1, 2, 16}) {
        const size_t a = scratchBytes(entry, withData, threads);
        EXPECT_EQ(a, scratchBytes(entry, withoutData, threads))
            << c.name << " " << dtypeName(ft);
        EXPECT_GE(scratchBytes(entry, withData, 16),
                  scratchBytes(entry, withData, 1))
            << c.name;
      }
    }
}

TEST(Scratch, BadShapesNeedNoScratchAndDoNotThrow) {
  // A ScratchFn never throws: malformed calls are the run's to report.
  const Op op = ops::Linear{true};
  HostTensor x = Random(1).floats(DType::BF16, {3, 5});
  HostTensor w = Random(2).floats(DType::BF16, {4, 6});
  HostTensor y(DType::BF16, {3, 4});
  KernelCall call;
  call.op = &op;
  call.operands = {x.cview(), w.cview(), ConstTensor::absent(),
                   ConstTensor::absent()};
  call.results = {y.view()};
  EXPECT_EQ(scratchBytes(findKernel(op), call, 4), 0u);
  call.operands.clear();
  EXPECT_EQ(scratchBytes(findKernel(op), call, 4), 0u);
}

TEST(Scratch, TooLittleIsAnErrorThatSaysHowMuch) {
  withThreads(1, [] {
    int checked = 0;
    for (DType ft : kFloatTypes)
      for (const FamilyCase &c : familyCases(ft, 2)) {
        HostTensor result(c.resultType, c.resultShape);
        runKernelOn(c.op, c.pointers(), result);
        const size_t need = lastRun().scratchBytes;
        if (need == 0)
          continue;
        ++checked;
        ScratchPolicy::resize = [](size_t b) { return b - 1; };
        std::string err;
        try {
          runKernelOn(c.op, c.pointers(), result);
        } catch (const Error &e) {
          err = e.what();
        }
        ScratchPolicy::resize = nullptr;
        EXPECT_NE(err.find("needs " + std::to_string(need) +
                           " bytes of scratch, got " +
                           std::to_string(need - 1)),
                  std::string::npos)
            << c.name << " " << dtypeName(ft) << ": '" << err << "'";
      }
    EXPECT_GT(checked, 10);
  });
}

TEST(Scratch, ScratchForFewerThreadsRunsOnFewer) {
  // A buffer sized for one thread still runs (on one thread) when more are
  // available, and gives the same result.
  for (DType ft : {DType::F32, DType::BF16})
    for (const FamilyCase &c : familyCases(ft, 16)) {
      HostTensor one(c.resultType, c.resultShape),
          three(c.resultType, c.resultShape);
      size_t oneThread = 0;
      withThreads(1, [&] {
        runKernelOn(c.op, c.pointers(), one);
        oneThread = lastRun().scratchBytes;
      });
      static size_t given;
      given = oneThread;
      ScratchPolicy::resize = [](size_t) { return given; };
      withThreads(3, [&] { runKernelOn(c.op, c.pointers(), three); });
      ScratchPolicy::resize = nullptr;
      if (std::holds_alternative<ops::MatMul>(c.op) ||
          std::holds_alternative<ops::Linear>(c.op))
        expectNear(three, one.values(), 1e-4, 1e-4, c.name);
      else
        expectEqual(three, one, c.name + " " + dtypeName(ft));
    }
}

TEST(Scratch, NoHeapAllocationGrowsWithTheData) {
  // Small fixed things (a Shape copy, a few strides) are allowed; nothing
  // that grows with the tensors.
  HeapCounter::bytes = 0;
  HeapCounter::counting = true;
  { std::vector<char> probe(1 << 20); } // the counter counts
  HeapCounter::counting = false;
  ASSERT_GE(HeapCounter::bytes, size_t(1) << 20);
  for (DType ft : kFloatTypes)
    for (int threads : {1, 2})
      withThreads(threads, [&] {
        std::vector<FamilyCase> small = familyCases(ft, 1),
                                large = familyCases(ft, 32);
        for (size_t i = 0; i < small.size(); ++i) {
          size_t bytes[2];
          for (int s = 0; s < 2; ++s) {
            const FamilyCase &c = s ? large[i] : small[i];
            HostTensor result(c.resultType, c.resultShape);
            runKernelOn(c.op, c.pointers(), result); // warm up
            runKernelOn(c.op, c.pointers(), result);
            bytes[s] = lastRun().heapBytes;
          }
          EXPECT_EQ(bytes[0], bytes[1])
              << small[i].name << " " << dtypeName(ft) << " allocates "
              << bytes[0] << " bytes at scale 1 but " << bytes[1]
              << " at scale 32";
          EXPECT_LE(bytes[1], 2048u) << small[i].name << " " << dtypeName(ft);
        }
      });
}

} // namespace
} // namespace hybrid::cpu::test
