// What only the CUDA device has: its allocators (the contract both keep,
// run for each: reuse, alignment, peak accounting, trim, out of memory,
// deferred reuse, threads, fixed addresses and graphs over their memory;
// the caching allocator's size classes), stream ordering through events,
// pinned-staged host copies, and its error messages. Every test skips,
// saying so, where no GPU is present.
#include "TestBundles.h"
#include "TestSupport.h"

#include "hybrid/Bundle.h"
#include "hybrid/CpuDevice.h"
#include "hybrid/CudaDevice.h"
#include "hybrid/Engine.h"
#include "hybrid/SafeTensors.h"

#include "cuda/CudaKernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <optional>
#include <random>
#include <thread>

using namespace hybrid;
using namespace hybrid::test;

namespace {

/// Sets an environment variable for a scope, then puts the old value back
/// (the device reads HYBRID_CUDA_ALLOCATOR when it is made).
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

/// A fresh device per test, with the allocator the environment names.
class CudaDeviceTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    if (CudaDevice::deviceCount(&why) == 0)
      GTEST_SKIP() << "no CUDA device: skipped (" << why << ")";
    device_ = std::make_shared<CudaDevice>(0);
  }
  CudaDevice &dev() { return *device_; }

  std::vector<uint8_t> read(const void *src, size_t bytes) {
    std::vector<uint8_t> out(bytes);
    dev().copyDeviceToHost(out.data(), src, bytes, dev().defaultStream());
    dev().synchronize(dev().defaultStream());
    return out;
  }

  std::shared_ptr<CudaDevice> device_;
};

/// The same with each allocator in turn: what the runtime relies on holds
/// for both.
class CudaAllocatorTest : public CudaDeviceTest,
                          public ::testing::WithParamInterface<std::string> {
protected:
  void SetUp() override {
    ScopedEnv allocator("HYBRID_CUDA_ALLOCATOR", GetParam());
    CudaDeviceTest::SetUp();
  }
};

INSTANTIATE_TEST_SUITE_P(Allocators, CudaAllocatorTest,
                         ::testing::Values("caching", "async"),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           return info.param;
                         });

/// The caching allocator's own rules (size classes, best fit).
class CudaCachingAllocatorTest : public CudaDeviceTest {
protected:
  void SetUp() override {
    ScopedEnv allocator("HYBRID_CUDA_ALLOCATOR", "caching");
    CudaDeviceTest::SetUp();
  }
};

std::vector<uint8_t> pattern(size_t bytes, uint32_t seed) {
  std::vector<uint8_t> v(bytes);
  std::mt19937 rng(seed);
  for (uint8_t &b : v)
    b = static_cast<uint8_t>(rng());
  return v;
}

bool aligned(const void *p, size_t to) {
  return reinterpret_cast<uintptr_t>(p) % to == 0;
}

/// One default-constructed op of every type Ops.h has.
template <size_t... I> std::vector<Op> everyOp(std::index_sequence<I...>) {
  return {Op(std::in_place_index<I>)...};
}

} // namespace

TEST_F(CudaDeviceTest, NameAndProperties) {
  EXPECT_EQ(dev().name(), "cuda:0");
  EXPECT_FALSE(dev().hostAddressable());
  EXPECT_EQ(dev().ordinal(), 0);
  int count = CudaDevice::deviceCount();
  expectError([&] { CudaDevice bad(count); },
              {"cuda:" + std::to_string(count) + ": no such device",
               "this process sees " + std::to_string(count)});
}

TEST_F(CudaDeviceTest, AnUnknownAllocatorIsRefused) {
  ScopedEnv allocator("HYBRID_CUDA_ALLOCATOR", "slab");
  expectError([&] { CudaDevice other(0); },
              {"cuda:0: HYBRID_CUDA_ALLOCATOR is 'slab': expected caching or "
               "async"});
}

TEST_P(CudaAllocatorTest, IsTheOneTheEnvironmentNames) {
  EXPECT_EQ(dev().allocatorKind(), GetParam());
}

// A freed block serves the next request that fits without the driver,
// also when nobody synchronised in between; MemoryStats count what callers
// asked for.
TEST_P(CudaAllocatorTest, ReusesFreedMemoryAndCountsCallersBytes) {
  MemoryStats s0 = dev().memoryStats();
  void *a = dev().allocate(1000);
  MemoryStats s1 = dev().memoryStats();
  EXPECT_EQ(s1.bytesInUse - s0.bytesInUse, 1000u);
  EXPECT_EQ(s1.allocations, s0.allocations + 1);
  CudaCacheStats c1 = dev().cacheStats();
  EXPECT_GE(c1.reservedBytes, 1000u);
  dev().deallocate(a);
  MemoryStats s2 = dev().memoryStats();
  EXPECT_EQ(s2.bytesInUse, s0.bytesInUse);
  EXPECT_EQ(s2.frees, s0.frees + 1);
  EXPECT_EQ(s2.peakBytes, std::max(s0.peakBytes, s0.bytesInUse + 1000));
  EXPECT_GE(dev().cacheStats().cachedBytes, 1000u);
  void *b = dev().allocate(900);
  CudaCacheStats c3 = dev().cacheStats();
  EXPECT_EQ(c3.driverAllocations, c1.driverAllocations);
  EXPECT_EQ(c3.reservedBytes, c1.reservedBytes);
  EXPECT_EQ(c3.cacheHits, c1.cacheHits + 1);
  std::vector<uint8_t> data = pattern(900, 1);
  dev().copyHostToDevice(b, data.data(), 900, dev().defaultStream());
  EXPECT_TRUE(read(b, 900) == data);
  dev().deallocate(b);
}

// Every alignment asked for, zero bytes at a distinct address, and each
// block wholly the caller's: written one after the other, all read back
// intact.
TEST_P(CudaAllocatorTest, AlignmentAndZeroBytes) {
  void *z1 = dev().allocate(0), *z2 = dev().allocate(0);
  EXPECT_NE(z1, nullptr);
  EXPECT_NE(z1, z2);
  struct Held {
    void *ptr;
    std::vector<uint8_t> data;
  };
  std::vector<Held> held;
  uint32_t seed = 0;
  for (size_t alignment : {size_t(1), size_t(256), size_t(512), size_t(4096),
                           size_t(64) << 10, size_t(2) << 20})
    for (size_t bytes : {size_t(1), size_t(100), (size_t(3) << 20) + 7}) {
      void *p = dev().allocate(bytes, alignment);
      EXPECT_TRUE(aligned(p, std::max<size_t>(alignment, 256)))
          << bytes << " bytes at alignment " << alignment << ": " << p;
      held.push_back({p, pattern(bytes, ++seed)});
      dev().copyHostToDevice(p, held.back().data.data(), bytes,
                             dev().defaultStream());
    }
  for (const Held &h : held) {
    EXPECT_TRUE(read(h.ptr, h.data.size()) == h.data) << h.ptr;
    dev().deallocate(h.ptr);
  }
  dev().deallocate(z1);
  dev().deallocate(z2);
  expectError([&] { dev().allocate(64, 384); },
              {"cuda:0: alignment 384 is not a power of two"});
}

// The peak hybrid-run prints (MemoryStats::peakBytes) is the most callers
// held at once, in the bytes they asked for, whichever the allocator; the
// peak held from the driver is a high-water mark that trimming keeps.
TEST_P(CudaAllocatorTest, PeaksOfCallersBytesAndOfTheReservation) {
  MemoryStats s0 = dev().memoryStats();
  CudaCacheStats c0 = dev().cacheStats();
  void *a = dev().allocate(size_t(3) << 20);
  void *b = dev().allocate(size_t(5) << 20);
  const size_t reservedAtPeak = dev().cacheStats().reservedBytes;
  EXPECT_GE(reservedAtPeak, c0.reservedBytes + (size_t(8) << 20));
  dev().deallocate(a);
  void *c = dev().allocate(size_t(1) << 20);
  MemoryStats s = dev().memoryStats();
  EXPECT_EQ(s.peakBytes,
            std::max(s0.peakBytes, s0.bytesInUse + (size_t(8) << 20)));
  CudaCacheStats held = dev().cacheStats();
  EXPECT_GE(held.peakReservedBytes, reservedAtPeak);
  EXPECT_GE(held.peakReservedBytes, held.reservedBytes);
  dev().deallocate(b);
  dev().deallocate(c);
  dev().trim();
  EXPECT_EQ(dev().cacheStats().peakReservedBytes, held.peakReservedBytes);
  EXPECT_EQ(dev().memoryStats().peakBytes, s.peakBytes);
}

// trim() gives everything held and not handed out back to the driver (the
// pool's unused reservation), pending blocks included; the next request
// takes from the driver again.
TEST_P(CudaAllocatorTest, TrimReturnsWhatIsNotHandedOut) {
  std::vector<void *> blocks;
  for (size_t mib : {1, 3, 8, 8})
    blocks.push_back(dev().allocate(mib << 20));
  size_t inUse = dev().memoryStats().bytesInUse;
  for (void *p : blocks)
    dev().deallocate(p);
  CudaCacheStats before = dev().cacheStats();
  EXPECT_GE(before.cachedBytes, size_t(20) << 20);
  size_t released = dev().trim();
  CudaCacheStats after = dev().cacheStats();
  EXPECT_EQ(released, before.cachedBytes);
  EXPECT_EQ(after.cachedBytes, 0u);
  EXPECT_EQ(after.reservedBytes, before.reservedBytes - released);
  EXPECT_GT(after.driverFrees, before.driverFrees);
  EXPECT_EQ(dev().memoryStats().bytesInUse, inUse - (size_t(20) << 20));
  void *again = dev().allocate(size_t(8) << 20);
  EXPECT_EQ(dev().cacheStats().driverAllocations, after.driverAllocations + 1);
  dev().fillZero(again, size_t(8) << 20, dev().defaultStream());
  EXPECT_EQ(read(again, 16), std::vector<uint8_t>(16, 0));
  dev().deallocate(again);
}

TEST_P(CudaAllocatorTest, OutOfMemoryTrimsThenNamesTheSizeTheCallAndDevice) {
  void *cached = dev().allocate(size_t(4) << 20);
  dev().deallocate(cached);
  size_t freeBytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&freeBytes, &total), cudaSuccess);
  size_t tooMuch = total + (size_t(1) << 30);
  uint64_t allocations = dev().memoryStats().allocations;
  const char *call = GetParam() == "async" ? "from cudaMallocFromPoolAsync)"
                                           : "from cudaMalloc)";
  expectError([&] { dev().allocate(tooMuch); },
              {"cuda:0: out of memory: cannot allocate " +
                   std::to_string(tooMuch) + " bytes",
               call, "free of", "MiB"});
  EXPECT_EQ(dev().memoryStats().allocations, allocations);
  // What was held was given back before giving up.
  EXPECT_EQ(dev().cacheStats().cachedBytes, 0u);
  // And the device still works.
  void *p = dev().allocate(1 << 20);
  dev().fillZero(p, 1 << 20, dev().defaultStream());
  EXPECT_EQ(read(p, 16), std::vector<uint8_t>(16, 0));
  dev().deallocate(p);
  expectError([&] { dev().allocate(SIZE_MAX - 10); },
              {"cuda:0: out of memory"});
}

// Memory freed while enqueued work still reads it is reused only after
// that work: the reader sees its data even though the block was freed and
// handed out again at once.
TEST_P(CudaAllocatorTest, BlocksFreedWhileInUseAreReusedOnlyAfterTheDevice) {
  const size_t n = size_t(64) << 20;
  std::vector<uint8_t> data = pattern(n, 3), zeros(n, 0);
  void *src = dev().allocate(n);
  void *dst = dev().allocate(n);
  Stream &s = dev().defaultStream();
  dev().copyHostToDevice(src, data.data(), n, s);
  dev().copyDeviceToDevice(dst, src, n, s);
  dev().deallocate(src);
  std::unique_ptr<Stream> other = dev().createStream();
  void *again = dev().allocate(n);
  dev().copyHostToDevice(again, zeros.data(), n, *other);
  dev().synchronize();
  EXPECT_TRUE(read(dst, n) == data);
  dev().deallocate(again);
  dev().deallocate(dst);
}

TEST_P(CudaAllocatorTest, IsThreadSafe) {
  size_t inUse = dev().memoryStats().bytesInUse;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<void *> held;
      for (int i = 0; i < 400; ++i) {
        if (held.size() > 8 || (!held.empty() && rng() % 3 == 0)) {
          dev().deallocate(held.back());
          held.pop_back();
        } else {
          held.push_back(dev().allocate(rng() % (3 << 20)));
        }
      }
      for (void *p : held)
        dev().deallocate(p);
    });
  for (std::thread &t : threads)
    t.join();
  MemoryStats s = dev().memoryStats();
  EXPECT_EQ(s.bytesInUse, inUse);
  EXPECT_EQ(s.allocations, s.frees);
}

// HYBRID_CUDA_ALLOCATOR_REPORT=1: one line on stderr when the device goes,
// as bench/allocator_ab.sh reads it.
TEST_P(CudaAllocatorTest, ReportsItsPeaksWhenAsked) {
  std::shared_ptr<CudaDevice> reporting;
  {
    ScopedEnv allocator("HYBRID_CUDA_ALLOCATOR", GetParam());
    ScopedEnv report("HYBRID_CUDA_ALLOCATOR_REPORT", "1");
    reporting = std::make_shared<CudaDevice>(0);
  }
  reporting->deallocate(reporting->allocate(size_t(3) << 20));
  ::testing::internal::CaptureStderr();
  reporting.reset();
  std::string line = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(line.find("hybrid: cuda:0 allocator " + GetParam() + ": peak "),
            std::string::npos)
      << line;
  EXPECT_NE(line.find(" GiB held from CUDA, peak 0.003 GiB in use; 1 "
                      "allocations, 1 from CUDA\n"),
            std::string::npos)
      << line;
}

// The caching allocator's classes: 1.5 MiB takes a 2 MiB block; a small
// request is not served by a large cached block, nor a request four times
// smaller than the cached block; a block of the same class comes back at
// the same address.
TEST_F(CudaCachingAllocatorTest, SizeClassesAndBestFit) {
  size_t before = dev().cacheStats().reservedBytes;
  void *large = dev().allocate(size_t(3) << 19);
  EXPECT_EQ(dev().cacheStats().reservedBytes - before, size_t(2) << 20);
  dev().deallocate(large);
  void *small = dev().allocate(512);
  EXPECT_NE(small, large);
  dev().deallocate(small);
  void *huge = dev().allocate(size_t(64) << 20);
  dev().deallocate(huge);
  void *quarter = dev().allocate(size_t(16) << 20);
  EXPECT_NE(quarter, huge);
  dev().deallocate(quarter);
  void *a = dev().allocate(1000);
  dev().deallocate(a);
  EXPECT_EQ(dev().allocate(900), a);
  dev().deallocate(a);
}

// A stream that waits on an event sees what the other stream did before
// recording it; the host waits only for the stream it synchronises.
TEST_F(CudaDeviceTest, EventsOrderStreams) {
  const size_t n = size_t(64) << 20;
  std::vector<uint8_t> data = pattern(n, 7);
  void *a = dev().allocate(n), *b = dev().allocate(n);
  dev().fillZero(b, n, dev().defaultStream());
  dev().synchronize(dev().defaultStream());
  std::unique_ptr<Stream> producer = dev().createStream();
  std::unique_ptr<Stream> consumer = dev().createStream();
  std::unique_ptr<Event> ready = dev().createEvent();
  dev().copyHostToDevice(a, data.data(), n, *producer);
  dev().copyDeviceToDevice(b, a, n, *producer);
  dev().record(*ready, *producer);
  dev().wait(*consumer, *ready);
  std::vector<uint8_t> got(n);
  dev().copyDeviceToHost(got.data(), b, n, *consumer);
  dev().synchronize(*consumer);
  EXPECT_TRUE(got == data);
  // Recording again moves the event.
  dev().fillZero(b, n, *producer);
  dev().record(*ready, *producer);
  dev().wait(*consumer, *ready);
  dev().copyDeviceToHost(got.data(), b, 4096, *consumer);
  dev().synchronize(*consumer);
  EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 4096),
            std::vector<uint8_t>(4096, 0));
  dev().deallocate(a);
  dev().deallocate(b);
  // Streams and events of another backend are refused.
  CpuDevice cpu;
  expectError([&] { dev().synchronize(cpu.defaultStream()); },
              {"cuda:0: the stream is not a CUDA stream"});
  std::unique_ptr<Event> cpuEvent = cpu.createEvent();
  expectError([&] { dev().record(*cpuEvent, dev().defaultStream()); },
              {"cuda:0: the event is not a CUDA event"});
}

// Host copies go through pinned staging: the source may be reused as soon
// as copyHostToDevice returns, large copies are chunked, and many small
// ones may be in flight at once.
TEST_F(CudaDeviceTest, PinnedStagingCopies) {
  Stream &s = dev().defaultStream();
  const size_t n = (size_t(40) << 20) + 12345; // several chunks, a ragged end
  std::vector<uint8_t> data = pattern(n, 11);
  void *d = dev().allocate(n);
  {
    std::vector<uint8_t> scratch = data;
    dev().copyHostToDevice(d, scratch.data(), n, s);
    std::fill(scratch.begin(), scratch.end(), 0); // before the device ran
  }
  std::vector<uint8_t> back(n);
  dev().copyDeviceToHost(back.data(), d, n, s);
  dev().synchronize(s);
  EXPECT_TRUE(back == data);

  // 500 small copies to distinct offsets, none waited for, each from a
  // buffer rewritten right after (more than the small staging buffers).
  std::vector<uint8_t> one(100);
  for (size_t i = 0; i < 500; ++i) {
    std::fill(one.begin(), one.end(), static_cast<uint8_t>(i));
    dev().copyHostToDevice(static_cast<uint8_t *>(d) + i * 100, one.data(), 100,
                           s);
  }
  std::vector<uint8_t> small(500 * 100);
  dev().copyDeviceToHost(small.data(), d, small.size(), s);
  dev().synchronize(s);
  for (size_t i = 0; i < 500; ++i)
    ASSERT_EQ(small[i * 100 + 99], static_cast<uint8_t>(i)) << i;

  // Copies from several threads on their own streams.
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::unique_ptr<Stream> own = dev().createStream();
      const size_t m = size_t(9) << 20;
      std::vector<uint8_t> mine = pattern(m, 100 + t), got(m);
      uint8_t *slot = static_cast<uint8_t *>(d) + t * m;
      for (int r = 0; r < 3; ++r) {
        dev().copyHostToDevice(slot, mine.data(), m, *own);
        dev().copyDeviceToHost(got.data(), slot, m, *own);
        dev().synchronize(*own);
      }
      ok[t] = got == mine;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
  dev().deallocate(d);
}

TEST_F(CudaDeviceTest, DeviceToDeviceCopiesOverlapLikeMemmove) {
  Stream &s = dev().defaultStream();
  const size_t n = 1 << 20, shift = 1000;
  std::vector<uint8_t> data = pattern(n + shift, 5);
  void *d = dev().allocate(n + shift);
  uint8_t *p = static_cast<uint8_t *>(d);
  dev().copyHostToDevice(d, data.data(), n + shift, s);
  dev().copyDeviceToDevice(p + shift, p, n, s); // forwards, overlapping
  std::vector<uint8_t> want = data;
  std::memmove(want.data() + shift, want.data(), n);
  EXPECT_TRUE(read(d, n + shift) == want);
  dev().copyDeviceToDevice(p, p + shift, n, s); // backwards
  std::memmove(want.data(), want.data() + shift, n);
  EXPECT_TRUE(read(d, n + shift) == want);
  dev().fillZero(p + 10, 20, s);
  std::fill(want.begin() + 10, want.begin() + 30, 0);
  EXPECT_TRUE(read(d, n + shift) == want);
  dev().deallocate(d);
}

// Every entry point makes its device current and restores the caller's.
TEST_F(CudaDeviceTest, KeepsTheCallersCurrentDevice) {
  int count = CudaDevice::deviceCount();
  if (count < 2)
    GTEST_SKIP() << "one CUDA device: the other-device case is skipped";
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  void *p = dev().allocate(4096);
  dev().fillZero(p, 4096, dev().defaultStream());
  std::vector<uint8_t> back = read(p, 4096);
  dev().deallocate(p);
  int current = -1;
  cudaGetDevice(&current);
  EXPECT_EQ(current, 1);
  EXPECT_EQ(back, std::vector<uint8_t>(4096, 0));
  cudaSetDevice(0);
}

// For one bucket a call allocates nothing, not even from the driver, and
// every buffer keeps its address (what graph capture needs), whichever the
// allocator.
TEST_P(CudaAllocatorTest, RepeatedCallsAllocateNothingAndKeepAddresses) {
  Engine engine = Engine::create(tinyLmBundle(), device_);
  engine.initRandom(7);
  Executable &exe = engine.executable("forward");
  NamedTensors in = {{"input_ids", HostTensor::fromVector<int64_t>(
                                       {2, 3}, {0, 5, 15, 7, 7, 1})}};
  HostTensor first = engine.forward(in).at("logits");
  std::vector<const void *> addresses;
  for (size_t i = 0; i < exe.desc().buffers.size(); ++i)
    addresses.push_back(exe.bufferAddress(i));
  MemoryStats stats = dev().memoryStats();
  CudaCacheStats cache = dev().cacheStats();
  for (int r = 0; r < 5; ++r) {
    HostTensor again = engine.forward(in).at("logits");
    EXPECT_EQ(again.toVector<float>(), first.toVector<float>());
  }
  EXPECT_EQ(dev().memoryStats().allocations, stats.allocations);
  EXPECT_EQ(dev().cacheStats().driverAllocations, cache.driverAllocations);
  for (size_t i = 0; i < addresses.size(); ++i)
    EXPECT_EQ(exe.bufferAddress(i), addresses[i]) << "buffer " << i;
}

// Step tuning (StepTuner.h) replays the real decode step to time the GEMM
// plans' options inside it, and puts the generation's state back around
// the replays: the generation that tuned gives the bits of the ones after
// it (the same seed, sampled), which tune nothing more. With each
// allocator: the captured step runs over its memory, and the KV cache
// released and taken again is captured anew.
TEST_P(CudaAllocatorTest, StepTuningLeavesTheGenerationItTunedIntact) {
  if (!std::ifstream(HYBRID_TEST_GPT2_BUNDLE).good())
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_BUNDLE << ": skipped";
  const char *off = std::getenv("HYBRID_CUDA_STEP_TUNE");
  if (off && std::string(off) == "0")
    GTEST_SKIP() << "HYBRID_CUDA_STEP_TUNE=0: skipped";
  const std::string fixture = std::string(HYBRIDC_FIXTURES_DIR) + "/gpt2";
  Engine engine = Engine::create(
      std::make_shared<const BundleDesc>(readBundle(HYBRID_TEST_GPT2_BUNDLE)),
      device_);
  engine.loadWeights(fixture, {"lm_head.weight"});
  SafeTensorsFile ref = SafeTensorsFile::open(fixture + "/ref.safetensors");
  HostTensor prompt = ref.toHost(*ref.find("greedy_prompt"), DType::I64);
  GenerateConfig config;
  config.greedy = false;
  config.temperature = 0.9f;
  config.topK = 40;
  config.seed = 5;
  config.maxNewTokens = 24;
  GenerateResult first = engine.generate(prompt, nullptr, config);
  const size_t trials = dev().stepTuningTrials();
  EXPECT_GT(trials, 0u) << "no GEMM plan of the step had a close option";
  GenerateResult second = engine.generate(prompt, nullptr, config);
  EXPECT_EQ(dev().stepTuningTrials(), trials);
  EXPECT_EQ(first.tokens.toVector<int64_t>(),
            second.tokens.toVector<int64_t>());
  EXPECT_EQ(first.logprobs.toVector<float>(),
            second.logprobs.toVector<float>());
  EXPECT_EQ(first.lengths.toVector<int64_t>(),
            second.lengths.toVector<int64_t>());
  // Captured anew (the cache released, then retaken): the settled plans,
  // not tuned again, and the same bits.
  GenerateConfig release = config;
  release.releaseInferenceCache = true;
  engine.generate(prompt, nullptr, release);
  GenerateResult again = engine.generate(prompt, nullptr, config);
  EXPECT_EQ(dev().stepTuningTrials(), trials);
  EXPECT_EQ(first.tokens.toVector<int64_t>(), again.tokens.toVector<int64_t>());
  EXPECT_EQ(first.logprobs.toVector<float>(), again.logprobs.toVector<float>());
}

// Device-resident use on the caller's stream: the stream orders the copies
// around the executable's commands, and the results equal the host path's.
TEST_F(CudaDeviceTest, DeviceResidentCallsOnTheCallersStream) {
  Engine engine = Engine::create(tinyLmBundle(), device_);
  engine.initRandom(7);
  Executable &exe = engine.executable("forward");
  exe.bind({4, 32});
  std::unique_ptr<Stream> stream = dev().createStream();
  std::vector<int64_t> ids(4 * 32);
  std::iota(ids.begin(), ids.end(), 0);
  for (int64_t &v : ids)
    v %= 16;
  DeviceTensor x = exe.input(0), y = exe.output(0);
  std::vector<float> got(static_cast<size_t>(numElements(y.shape)));
  std::vector<float> want;
  for (int r = 0; r < 3; ++r) {
    dev().copyHostToDevice(x.data, ids.data(), x.bytes(), *stream);
    exe.enqueue(*stream);
    dev().copyDeviceToHost(got.data(), y.data, y.bytes(), *stream);
    dev().synchronize(*stream);
    if (want.empty())
      want = engine
                 .forward({{"input_ids",
                            HostTensor::fromVector<int64_t>({4, 32}, ids)}})
                 .at("logits")
                 .toVector<float>();
    EXPECT_EQ(got, want);
  }
}

TEST_F(CudaDeviceTest, CollectiveOperandCountIsCheckedAtPrepare) {
  BundleDesc b = normBundle();
  ExecutableDesc &e = b.executables[0];
  CommandDesc c;
  c.op = ops::Collective{CollectiveKind::AllReduce, 0};
  c.operands = {4, 5};
  c.results = {9};
  expectError([&] { dev().prepare(c, e); },
              {"executable 'forward': ", "takes one operand and one result"});
}

// An op the CUDA kernels do not cover fails when the executable is loaded,
// naming the op and where the command came from.
TEST_F(CudaDeviceTest, OpWithoutAKernelFailsAtPrepare) {
  ExecutableDesc exe;
  exe.name = "forward";
  int missing = 0;
  for (const Op &op :
       everyOp(std::make_index_sequence<std::variant_size_v<Op>>())) {
    if (std::holds_alternative<ops::RecordEvent>(op) ||
        std::holds_alternative<ops::WaitEvent>(op) ||
        std::holds_alternative<ops::Collective>(op) || cuda::findKernel(op).run)
      continue;
    ++missing;
    CommandDesc c;
    c.op = op;
    c.loc = "model.mlir:7";
    expectError([&] { dev().prepare(c, exe); },
                {"executable 'forward': the cuda backend has no kernel for '" +
                 std::string(opName(op)) + "' (used at model.mlir:7)"});
  }
  if (!missing)
    GTEST_SKIP() << "every op has a CUDA kernel: nothing to refuse";
}

// Which operands a kernel may read before the previous kernel finishes
// (host logic only: runs without a GPU). A linear's weight is settled when
// it is a parameter (directly or through an alias) of an executable that
// only reads parameters, or a constant; never the input, never on the
// first kernel of a stream, never in an executable that writes parameters.
TEST(SettledOperands, ParametersOfAReadOnlyExecutableAfterItsFirstKernel) {
  ExecutableDesc e;
  e.name = "decode";
  auto buffer = [&](BufferKind kind, int32_t index) {
    BufferDesc b;
    b.kind = kind;
    b.index = index;
    e.buffers.push_back(b);
    return static_cast<int32_t>(e.buffers.size() - 1);
  };
  const int32_t x = buffer(BufferKind::Workspace, -1);
  const int32_t w = buffer(BufferKind::Param, 0);
  const int32_t wView = buffer(BufferKind::Alias, w);
  const int32_t table = buffer(BufferKind::Constant, 0);
  const int32_t state = buffer(BufferKind::State, 0);
  const int32_t y = buffer(BufferKind::Workspace, -1);
  auto linear = [&](int32_t input, int32_t weight, int32_t stream) {
    CommandDesc c;
    c.op = ops::Linear{true, Activation::None};
    c.operands = {input, weight, -1, -1};
    c.results = {y};
    c.stream = stream;
    return c;
  };
  CommandDesc record;
  record.op = ops::RecordEvent{0};
  e.commands = {record,
                linear(x, w, 0),         // the first kernel of stream 0
                linear(x, w, 0),         // weight settled
                linear(x, wView, 0),     // through an alias
                linear(table, state, 0), // a constant input, a state weight
                linear(x, w, 1)};        // the first kernel of stream 1
  EXPECT_EQ(settledOperands(e.commands[1], e), 0u);
  EXPECT_EQ(settledOperands(e.commands[2], e), 1u << 1);
  EXPECT_EQ(settledOperands(e.commands[3], e), 1u << 1);
  EXPECT_EQ(settledOperands(e.commands[4], e), 1u << 0);
  EXPECT_EQ(settledOperands(e.commands[5], e), 0u);
  // A copy of a command is not one of e's: nothing is settled.
  const CommandDesc copy = e.commands[2];
  EXPECT_EQ(settledOperands(copy, e), 0u);
  // The optimizer step writes its parameters: none is settled.
  e.paramAccess = Access::ReadWrite;
  EXPECT_EQ(settledOperands(e.commands[2], e), 0u);
  EXPECT_EQ(settledOperands(e.commands[4], e), 1u << 0);
}
