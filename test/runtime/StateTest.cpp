// State buffers, on every device backend: two executables of one bundle
// sharing one state across calls, allocation on first use with the plan's
// shape, shape agreement, release (bytes back to the allocator, retaken
// zero-filled, as the device's counters see it) and the engine's state API.
#include "DeviceTest.h"
#include "TestBundles.h"
#include "TestSupport.h"

#include "hybrid/Engine.h"

using namespace hybrid;
using namespace hybrid::test;

namespace {

HostTensor rows(int64_t batch, float value) {
  return HostTensor::fromVector<float>(
      {batch, 4}, std::vector<float>(static_cast<size_t>(batch * 4), value));
}

std::vector<float> accumulate(Engine &engine, int64_t batch, float value) {
  return engine.executable("accumulate")
      .run({{"x", rows(batch, value)}})
      .at("total")
      .toVector<float>();
}

std::vector<float> readDoubled(Engine &engine, int64_t batch) {
  return engine.executable("read")
      .run({{"like", rows(batch, 0)}})
      .at("doubled")
      .toVector<float>();
}

std::vector<float> filled(int64_t batch, float v) {
  return std::vector<float>(static_cast<size_t>(batch * 4), v);
}

using StateOnDevice = DeviceTest;
HYBRID_TEST_ON_EVERY_DEVICE(StateOnDevice);

} // namespace

TEST_P(StateOnDevice, TwoExecutablesShareOneStateAcrossCalls) {
  Engine engine = Engine::create(stateBundle(), device());
  EXPECT_FALSE(engine.states().allocated("acc"));
  EXPECT_EQ(accumulate(engine, 2, 1.5f), filled(2, 1.5f));
  EXPECT_TRUE(engine.states().allocated("acc"));
  EXPECT_EQ(accumulate(engine, 2, 2.0f), filled(2, 3.5f));
  // "read" sees what "accumulate" wrote, and only reads it.
  EXPECT_EQ(readDoubled(engine, 2), filled(2, 7.0f));
  EXPECT_EQ(readDoubled(engine, 2), filled(2, 7.0f));
  // Once both have bound the bucket and the state, calls allocate nothing.
  uint64_t allocations = device()->memoryStats().allocations;
  EXPECT_EQ(accumulate(engine, 2, 0.5f), filled(2, 4.0f));
  EXPECT_EQ(readDoubled(engine, 2), filled(2, 8.0f));
  EXPECT_EQ(device()->memoryStats().allocations, allocations);

  DeviceTensor acc = engine.state("acc");
  EXPECT_EQ(acc.shape, (Shape{2, 4}));
  EXPECT_EQ(acc.dtype, DType::F32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(acc.data) % 256, 0u);
  EXPECT_EQ(readDeviceAs<float>(*device(), acc.data, 8)[7], 4.0f);
  // Both executables bind the same memory.
  EXPECT_EQ(engine.executable("accumulate").bufferAddress(1), acc.data);
  EXPECT_EQ(engine.executable("read").bufferAddress(1), acc.data);
}

TEST_P(StateOnDevice, TheFirstUserMayBeAReader) {
  Engine engine = Engine::create(stateBundle(), device());
  // The first user of a state may be a reader: it gets zeros.
  EXPECT_EQ(readDoubled(engine, 3), filled(3, 0.0f));
  EXPECT_EQ(accumulate(engine, 3, 1.0f), filled(3, 1.0f));
}

TEST_P(StateOnDevice, LaterUsesMustAgreeOnTheShape) {
  Engine engine = Engine::create(stateBundle(), device());
  accumulate(engine, 2, 1.0f);
  expectError([&] { readDoubled(engine, 3); },
              {"state 'acc': read uses it as f32 [3,4] but it holds f32 "
               "[2,4] (allocated by accumulate)"});
  // The failed bind left everything usable.
  EXPECT_EQ(readDoubled(engine, 2), filled(2, 2.0f));
  engine.releaseState("acc");
  EXPECT_EQ(readDoubled(engine, 3), filled(3, 0.0f));
  EXPECT_EQ(engine.state("acc").shape, (Shape{3, 4}));
}

TEST_P(StateOnDevice, ReleaseReturnsBytesAndTheNextUseRetakesThem) {
  Engine engine = Engine::create(stateBundle(), device());
  accumulate(engine, 16, 1.0f);
  accumulate(engine, 16, 1.0f);
  readDoubled(engine, 16); // its workspace too: only the state moves below
  size_t held = engine.states().bytesInUse();
  EXPECT_EQ(held, 16u * 4 * 4);
  MemoryStats before = device()->memoryStats();
  engine.releaseState("acc");
  MemoryStats after = device()->memoryStats();
  EXPECT_EQ(before.bytesInUse - after.bytesInUse, held);
  EXPECT_EQ(after.frees, before.frees + 1);
  EXPECT_EQ(engine.states().bytesInUse(), 0u);
  EXPECT_FALSE(engine.states().allocated("acc"));
  expectError([&] { engine.state("acc"); }, {"state 'acc' is not allocated"});
  engine.releaseState("acc"); // releasing twice is harmless

  // Both executables cached the old address; the next call of either
  // notices and retakes the state, zero-filled.
  EXPECT_EQ(readDoubled(engine, 16), filled(16, 0.0f));
  EXPECT_EQ(device()->memoryStats().bytesInUse, before.bytesInUse);
  EXPECT_EQ(accumulate(engine, 16, 2.0f), filled(16, 2.0f));
  EXPECT_EQ(readDoubled(engine, 16), filled(16, 4.0f));
}

TEST_P(StateOnDevice, RetakingAStateCostsAnAllocationAndAFill) {
  Engine engine = Engine::create(stateBundle(), device());
  accumulate(engine, 16, 1.0f);
  readDoubled(engine, 16);
  // The device's counters: what a phase allocates, copies and fills.
  Device &d = *device();
  PhaseCost copies = measurePhase(d, [&] {
    DeviceAllocation a(device(), 1000);
    std::vector<uint8_t> host(1000, 7);
    d.copyHostToDevice(a.get(), host.data(), 1000, d.defaultStream());
    d.fillZero(a.get(), 600, d.defaultStream());
    d.copyDeviceToHost(host.data(), a.get(), 1000, d.defaultStream());
    d.synchronize(d.defaultStream());
  });
  EXPECT_EQ(copies.bytesAllocated, 1000u);
  EXPECT_EQ(copies.bytesCopied, 2600u);
  EXPECT_GE(copies.seconds, 0.0);
  // A call on bound buffers and held state allocates nothing; the state
  // let go comes back as its bytes, allocated and zero-filled.
  PhaseCost held = measurePhase(d, [&] { readDoubled(engine, 16); });
  EXPECT_EQ(held.bytesAllocated, 0u);
  engine.releaseState("acc");
  PhaseCost retaken = measurePhase(d, [&] { readDoubled(engine, 16); });
  EXPECT_EQ(retaken.bytesAllocated, 16u * 4 * 4);
  // (A backend may copy more when an address changed: kernel arguments.)
  if (onCpu())
    EXPECT_EQ(retaken.bytesCopied, held.bytesCopied + 16u * 4 * 4);
  else
    EXPECT_GE(retaken.bytesCopied, held.bytesCopied + 16u * 4 * 4);
  PhaseCost both = held;
  both += retaken;
  EXPECT_EQ(both.bytesAllocated, retaken.bytesAllocated);
}

TEST_P(StateOnDevice, ExplicitAllocationComesFirst) {
  Engine engine = Engine::create(stateBundle(), device());
  engine.allocateState("acc", {4, 4});
  float ten = 10.0f;
  writeDevice(*device(), engine.state("acc").data, &ten, sizeof ten);
  engine.allocateState("acc", {4, 4}); // same shape: nothing happens
  std::vector<float> total = accumulate(engine, 4, 1.0f);
  EXPECT_EQ(total[0], 11.0f);
  EXPECT_EQ(total[1], 1.0f);
  expectError(
      [&] {
        engine.allocateState("acc", {4, 5});
      },
      {"state 'acc'", "[4,5]", "[4,4]"});
  expectError([&] { accumulate(engine, 5, 1.0f); },
              {"state 'acc': accumulate uses it as f32 [5,4] but it holds "
               "f32 [4,4] (allocated by an explicit allocate)"});
  expectError([&] { engine.state("kv"); },
              {"no state 'kv' (the bundle's states: acc)"});
  expectError([&] { engine.releaseState("kv"); }, {"no state 'kv'"});
}

TEST_P(StateOnDevice, EnginesOnOneDeviceShareItsAllocator) {
  Engine a = Engine::create(stateBundle(), device());
  Engine b = Engine::create(stateBundle(), device());
  accumulate(a, 2, 1.0f);
  size_t afterA = device()->memoryStats().bytesInUse;
  accumulate(b, 2, 5.0f);
  EXPECT_GT(device()->memoryStats().bytesInUse, afterA);
  // Separate engines, separate states.
  EXPECT_EQ(readDoubled(a, 2), filled(2, 2.0f));
  EXPECT_EQ(readDoubled(b, 2), filled(2, 10.0f));
}
