// Executables built by hand as BundleDesc, run end to end on every device
// backend (the conformance suite; CPU-only where a CPU kernel's checks are
// the subject): results against a double-precision reference, buckets (no
// allocation and fixed addresses per bucket, reserve, limits), the
// device-resident API, symbol binding and its errors, plan and kernel errors.
#include "DeviceTest.h"
#include "TestBundles.h"
#include "TestSupport.h"

#include "hybrid/Bundle.h"
#include "hybrid/CpuDevice.h"
#include "hybrid/Engine.h"
#include "hybrid/Float16.h"
#include "hybrid/SafeTensors.h"

#include <cmath>
#include <random>

using namespace hybrid;
using namespace hybrid::test;

namespace {

std::shared_ptr<CpuDevice> cpu() { return std::make_shared<CpuDevice>(); }

const std::vector<float> kWeight = {1.0f, 0.5f, -1.0f, 2.0f};
const std::vector<float> kBias = {0.0f, 0.1f, 0.2f, -0.3f};

Engine normEngine(BundleDesc b, std::shared_ptr<Device> device) {
  Engine engine = Engine::create(std::move(b), device);
  engine.initRandom(1);
  writeDevice(*device, engine.weights().mutableData(0), kWeight.data(), 16);
  writeDevice(*device, engine.weights().mutableData(1), kBias.data(), 16);
  return engine;
}

/// Parameter i of an engine's weight store, as f32 values on the host.
std::vector<float> paramValues(Engine &engine, size_t i) {
  const WeightStore &w = engine.weights();
  return readDeviceAs<float>(engine.device(), w.data(i),
                             static_cast<size_t>(numElements(w.shape(i))));
}

std::vector<float> inputRows(int64_t batch) {
  std::vector<float> x;
  for (int64_t i = 0; i < batch * 4; ++i)
    x.push_back(static_cast<float>(std::sin(1.7 * i + 0.3) * 3));
  return x;
}

/// normBundle's outputs in double precision.
void normReference(const std::vector<float> &x, int64_t batch,
                   std::vector<double> &y, std::vector<double> &normed) {
  std::vector<float> c = normBundleConstant();
  y.assign(batch * 4, 0);
  normed.assign(batch * 4, 0);
  for (int64_t r = 0; r < batch; ++r) {
    double t0[4], mean = 0, var = 0;
    for (int k = 0; k < 4; ++k)
      mean += t0[k] = double(x[r * 4 + k]) + c[k];
    mean /= 4;
    for (int k = 0; k < 4; ++k)
      var += (t0[k] - mean) * (t0[k] - mean);
    var /= 4;
    for (int k = 0; k < 4; ++k) {
      double t1 =
          (t0[k] - mean) / std::sqrt(var + 1e-5) * kWeight[k] + kBias[k];
      normed[r * 4 + k] = t1;
      y[r * 4 + k] = t1 + x[r * 4 + k];
    }
  }
}

void expectNear(const HostTensor &t, const std::vector<double> &want,
                double tol = 1e-5) {
  ASSERT_EQ(t.dtype(), DType::F32);
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  const float *p = t.as<float>();
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(p[i], want[i], tol) << "element " << i;
}

NamedTensors xInput(int64_t batch) {
  return {{"x", HostTensor::fromVector<float>({batch, 4}, inputRows(batch))}};
}

using ExecutableOnDevice = DeviceTest;
HYBRID_TEST_ON_EVERY_DEVICE(ExecutableOnDevice);

} // namespace

TEST_P(ExecutableOnDevice, NormBundleMatchesReferenceAndGrowsOnlyWhenNeeded) {
  Engine engine = normEngine(normBundle(), device());
  Executable &exe = engine.executable("forward");
  EXPECT_EQ(exe.inputNames(), std::vector<std::string>{"x"});
  EXPECT_EQ(exe.describeOutput(0), "y: f32 [batch,2,2]");
  size_t lastCapacity = 0;
  for (int64_t batch : {3, 1, 3, 5}) {
    NamedTensors out = engine.forward(xInput(batch));
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out.at("y").shape(), (Shape{batch, 2, 2}));
    EXPECT_EQ(out.at("normed").shape(), (Shape{batch, 4}));
    std::vector<double> y, normed;
    normReference(inputRows(batch), batch, y, normed);
    expectNear(out.at("y"), y);
    expectNear(out.at("normed"), normed);
    EXPECT_EQ(exe.symbolValues(), std::vector<int64_t>{batch});
    // The workspace (1280 * batch bytes) grows only when a call needs more.
    EXPECT_EQ(exe.workspaceBytes(), static_cast<size_t>(1280 * batch));
    size_t cap = exe.allocationBytes();
    EXPECT_GE(cap, exe.workspaceBytes() + exe.scratchBytes());
    if (cap > lastCapacity && lastCapacity)
      EXPECT_GT(static_cast<size_t>(1280 * batch), lastCapacity);
    if (static_cast<size_t>(1280 * batch) <= lastCapacity)
      EXPECT_EQ(cap, lastCapacity);
    lastCapacity = cap;
  }
}

// What CUDA graph capture needs: a second call on the same bucket allocates
// no device memory and every buffer has the address it had.
TEST_P(ExecutableOnDevice, SameBucketAllocatesNothingAndKeepsAddresses) {
  Engine engine = normEngine(normBundle(), device());
  Executable &exe = engine.executable("forward");
  engine.forward(xInput(4));
  std::vector<const void *> first;
  for (size_t i = 0; i < exe.desc().buffers.size(); ++i) {
    first.push_back(exe.bufferAddress(i));
    EXPECT_NE(first.back(), nullptr) << "buffer " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first.back()) % 4, 0u);
  }
  DeviceTensor in = exe.input(0), out = exe.output(0);
  MemoryStats before = device()->memoryStats();
  NamedTensors second = engine.forward(xInput(4));
  MemoryStats after = device()->memoryStats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.bytesInUse, before.bytesInUse);
  for (size_t i = 0; i < first.size(); ++i)
    EXPECT_EQ(exe.bufferAddress(i), first[i]) << "buffer " << i;
  EXPECT_EQ(exe.input(0).data, in.data);
  EXPECT_EQ(exe.output(0).data, out.data);
  std::vector<double> y, normed;
  normReference(inputRows(4), 4, y, normed);
  expectNear(second.at("y"), y);
  // Workspace slots are aligned as the bundle says (256).
  for (size_t i = 0; i < first.size(); ++i) {
    BufferKind k = exe.desc().buffers[i].kind;
    if (k == BufferKind::Workspace || k == BufferKind::Input ||
        k == BufferKind::Output)
      EXPECT_EQ(reinterpret_cast<uintptr_t>(first[i]) % 256, 0u) << i;
  }
}

TEST_P(ExecutableOnDevice, ReserveSizesForTheLargestBucket) {
  Engine engine = Engine::create(normBundle(), device());
  engine.initRandom(1);
  Executable &exe = engine.executable("forward");
  exe.reserve({64});
  size_t reserved = exe.allocationBytes();
  EXPECT_GE(reserved, static_cast<size_t>(1280 * 64));
  uint64_t allocations = device()->memoryStats().allocations;
  std::vector<const void *> at2;
  for (int64_t batch : {2, 64, 7, 2}) {
    engine.forward(xInput(batch));
    if (batch == 2 && at2.empty())
      for (size_t i = 0; i < exe.desc().buffers.size(); ++i)
        at2.push_back(exe.bufferAddress(i));
  }
  EXPECT_EQ(device()->memoryStats().allocations, allocations);
  EXPECT_EQ(exe.allocationBytes(), reserved);
  for (size_t i = 0; i < at2.size(); ++i)
    EXPECT_EQ(exe.bufferAddress(i), at2[i]);
  // reserve keeps the bound bucket.
  exe.reserve({3});
  EXPECT_EQ(exe.symbolValues(), std::vector<int64_t>{2});
  expectError([&] { exe.reserve({65}); },
              {"forward: batch = 65 exceeds its limit 64"});
}

// Device-resident use: bind a bucket, write the input slot, enqueue on a
// stream, read the output slot; nothing is copied by the executable.
TEST_P(ExecutableOnDevice, DeviceResidentBindEnqueue) {
  Engine engine = Engine::create(normBundle(), device());
  engine.initRandom(1);
  writeDevice(*device(), engine.weights().mutableData(0), kWeight.data(), 16);
  writeDevice(*device(), engine.weights().mutableData(1), kBias.data(), 16);
  Executable &exe = engine.executable("forward");
  expectError([&] { exe.input(0); }, {"forward: no bucket is bound"});
  std::unique_ptr<Stream> stream = device()->createStream();
  expectError([&] { exe.enqueue(*stream); }, {"forward: no bucket is bound"});
  exe.bind({3});
  DeviceTensor x = exe.input(exe.inputIndex("x"));
  EXPECT_EQ(x.shape, (Shape{3, 4}));
  EXPECT_EQ(x.dtype, DType::F32);
  std::vector<float> rows = inputRows(3);
  device()->copyHostToDevice(x.data, rows.data(), x.bytes(), *stream);
  exe.enqueue(*stream);
  DeviceTensor y = exe.output(exe.outputIndex("normed"));
  std::vector<float> got(12);
  device()->copyDeviceToHost(got.data(), y.data, y.bytes(), *stream);
  device()->synchronize(*stream);
  std::vector<double> want, normed;
  normReference(rows, 3, want, normed);
  for (size_t i = 0; i < normed.size(); ++i)
    EXPECT_NEAR(got[i], normed[i], 1e-5);
  expectError([&] { exe.outputIndex("logits"); },
              {"forward: no output 'logits' (outputs: y, normed)"});
  expectError(
      [&] {
        exe.bind({2, 3});
      },
      {"forward: expected 1 symbol values, got 2"});
  expectError([&] { exe.bind({0}); }, {"forward: batch = 0 but it must be"});
}

/// The norm bundle with normed = copy(t1) moved to a second stream, after
/// t1 is ready on stream 0 (an event recorded there, waited for there).
BundleDesc twoStreamNormBundle() {
  BundleDesc b = normBundle();
  ExecutableDesc &e = b.executables[0];
  e.numStreams = 2;
  e.numEvents = 1;
  e.commands[4].stream = 1;
  e.commands.insert(e.commands.begin() + 4,
                    command(ops::WaitEvent{0}, {}, {}, "", 1));
  e.commands.insert(e.commands.begin() + 2,
                    command(ops::RecordEvent{0}, {}, {}));
  return b;
}

// enqueueGraph replays the same work on what the buffers hold now: new
// inputs give new outputs, across a second stream and its events, and
// another bucket captures anew. (On the CPU it is enqueue.)
TEST_P(ExecutableOnDevice, GraphReplaysReadTheBuffersAnew) {
  Engine engine = normEngine(twoStreamNormBundle(), device());
  Executable &exe = engine.executable("forward");
  std::unique_ptr<Stream> stream = device()->createStream();
  for (int64_t batch : {3, 5}) {
    exe.bind({batch});
    const size_t allocations = device()->memoryStats().allocations;
    // Call 1 runs the commands, 2 captures them, 3 and 4 replay.
    for (int call = 0; call < 4; ++call) {
      std::vector<float> rows = inputRows(batch);
      for (float &v : rows)
        v = v * static_cast<float>(call + 1) - static_cast<float>(call);
      DeviceTensor x = exe.input(exe.inputIndex("x"));
      device()->copyHostToDevice(x.data, rows.data(), x.bytes(), *stream);
      exe.enqueueGraph(*stream);
      DeviceTensor y = exe.output(exe.outputIndex("normed"));
      std::vector<float> got(static_cast<size_t>(batch) * 4);
      device()->copyDeviceToHost(got.data(), y.data, y.bytes(), *stream);
      device()->synchronize(*stream);
      std::vector<double> want, normed;
      normReference(rows, batch, want, normed);
      for (size_t i = 0; i < normed.size(); ++i)
        ASSERT_NEAR(got[i], normed[i], 1e-5)
            << "batch " << batch << " call " << call << " at " << i;
    }
    EXPECT_EQ(device()->memoryStats().allocations, allocations)
        << "a call of a bound bucket allocated";
  }
}

// A limit is checked before any work: nothing is allocated or run.
TEST_P(ExecutableOnDevice, SymbolOverItsLimitIsAnErrorBeforeAnyWork) {
  Engine engine = Engine::create(tinyLmBundle(), device());
  engine.initRandom(3);
  uint64_t allocations = device()->memoryStats().allocations;
  std::vector<int64_t> ids(2 * 33, 1);
  std::string msg = expectError(
      [&] {
        engine.forward(
            {{"input_ids", HostTensor::fromVector<int64_t>({2, 33}, ids)}});
      },
      {"forward: seq = 33 exceeds its limit 32 (input_ids dim 1)"});
  EXPECT_EQ(device()->memoryStats().allocations, allocations);
  EXPECT_EQ(engine.executable("forward").allocationBytes(), 0u);
  expectError(
      [&] {
        engine.executable("forward").bind({1, 600});
      },
      {"forward: seq = 600 exceeds its limit 32"});
  EXPECT_EQ(device()->memoryStats().allocations, allocations);
}

TEST_P(ExecutableOnDevice, PositionalRun) {
  Engine engine = normEngine(normBundle(), device());
  std::vector<HostTensor> out =
      engine.executable("forward").run(std::vector<HostTensor>{
          HostTensor::fromVector<float>({2, 4}, inputRows(2))});
  ASSERT_EQ(out.size(), 2u);
  std::vector<double> y, normed;
  normReference(inputRows(2), 2, y, normed);
  expectNear(out[0], y);
  expectNear(out[1], normed);
}

TEST_P(ExecutableOnDevice, BorrowedInputsAreNotWritten) {
  Engine engine = normEngine(normBundle(), device());
  std::vector<float> x = inputRows(2);
  std::vector<float> copy = x;
  engine.forward({{"x", HostTensor::borrow(DType::F32, {2, 4}, x.data())}});
  EXPECT_EQ(x, copy);
}

TEST_P(ExecutableOnDevice, InputErrors) {
  Engine engine = normEngine(normBundle(), device());
  expectError(
      [&] {
        engine.forward({{"x", HostTensor::fromVector<int64_t>(
                                  {2, 4}, std::vector<int64_t>(8))}});
      },
      {"forward: x: expected f32, got i64"});
  expectError(
      [&] {
        engine.forward({{"x", HostTensor::fromVector<float>({3}, {1, 2, 3})}});
      },
      {"forward: x: expected rank 2 [batch,4], got shape [3]"});
  expectError(
      [&] {
        engine.forward({{"x", HostTensor::fromVector<float>(
                                  {2, 5}, std::vector<float>(10))}});
      },
      {"forward: x: dim 1 is 5, expected 4"});
  expectError([&] { engine.forward({}); },
              {"forward: missing input x: f32 [batch,4]"});
  NamedTensors extra = xInput(2);
  extra["y"] = HostTensor::fromVector<float>({1}, {0});
  expectError([&] { engine.forward(extra); },
              {"forward: unexpected input 'y' (inputs: x)"});
  expectError(
      [&] {
        engine.forward({{"x", HostTensor::allocate(DType::F32, {0, 4})}});
      },
      {"x: dim 0 is 0 but batch must be at least 1"});
  expectError([&] { engine.executable("train_step"); },
              {"has no executable 'train_step' (it has: forward)"});
}

TEST_P(ExecutableOnDevice, SymbolBoundByTwoInputsMustAgree) {
  BundleDesc b = normBundle();
  ExecutableDesc &e = b.executables[0];
  SymExpr batch = SymExpr::symbol(0);
  e.buffers.push_back(buffer(BufferKind::Input, DType::F32, {batch, 4}, 1, "x2",
                             SymExpr(1280) * batch));
  e.workspaceBytes = SymExpr(1536) * batch;
  e.inputs.push_back({"x2", 10});
  e.commands[2].operands = {5, 10}; // t2 = t1 + x2
  Engine engine = normEngine(b, device());
  NamedTensors in = xInput(2);
  in["x2"] = HostTensor::fromVector<float>({3, 4}, std::vector<float>(12));
  expectError(
      [&] { engine.forward(in); },
      {"forward: x2: dim 0 is 3 but batch was bound to 2 (by x dim 0)"});
  in["x2"] = HostTensor::fromVector<float>({2, 4}, std::vector<float>(8, 1.f));
  NamedTensors out = engine.forward(in);
  std::vector<double> y, normed;
  normReference(inputRows(2), 2, y, normed);
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = normed[i] + 1.0;
  expectNear(out.at("y"), y);
}

TEST_P(ExecutableOnDevice, ComputedInputDimsAreChecked) {
  BundleDesc b = normBundle();
  ExecutableDesc &e = b.executables[0];
  SymExpr batch = SymExpr::symbol(0);
  e.buffers.push_back(buffer(BufferKind::Input, DType::F32,
                             {SymExpr(2) * batch, 4}, 1, "pairs",
                             SymExpr(1280) * batch));
  e.workspaceBytes = SymExpr(1536) * batch;
  e.inputs.push_back({"pairs", 10});
  Engine engine = normEngine(b, device());
  NamedTensors in = xInput(2);
  in["pairs"] = HostTensor::fromVector<float>({5, 4}, std::vector<float>(20));
  expectError([&] { engine.forward(in); },
              {"forward: pairs: dim 0 is 5, expected 2*batch = 4"});
  in["pairs"] = HostTensor::fromVector<float>({4, 4}, std::vector<float>(16));
  EXPECT_NO_THROW(engine.forward(in));
}

TEST_P(ExecutableOnDevice, UnboundSymbolIsReported) {
  BundleDesc b = normBundle();
  ExecutableDesc &e = b.executables[0];
  e.symbols.push_back("pages");
  e.symbolMax.push_back(0);
  e.workspaceBytes = SymExpr(32) * SymExpr::symbol(0) + SymExpr::symbol(1);
  Engine engine = normEngine(b, device());
  expectError([&] { engine.forward(xInput(2)); },
              {"forward: symbol 'pages' is not bound"});
}

TEST_P(ExecutableOnDevice, WeightsMustBeLoaded) {
  Engine engine = Engine::create(normBundle(), device());
  expectError([&] { engine.forward(xInput(2)); },
              {"forward: weights are not loaded"});
}

TEST_P(ExecutableOnDevice, BadPlansAreErrorsNotCrashes) {
  {
    BundleDesc b = normBundle();
    b.executables[0].workspaceBytes = SymExpr(1024) * SymExpr::symbol(0);
    Engine engine = normEngine(b, device());
    expectError([&] { engine.forward(xInput(2)); },
                {"buffer 9 'normed' at workspace offset 2048 (32 bytes) "
                 "exceeds the 2048-byte workspace for batch=2"});
  }
  {
    // Offsets are rounded up to the alignment (1032 -> 1280); one that
    // leaves no room for that is out of the workspace.
    BundleDesc b = normBundle();
    b.executables[0].buffers[5].offset = SymExpr(512) * SymExpr::symbol(0) + 8;
    b.executables[0].workspaceBytes = SymExpr(512) * SymExpr::symbol(0) + 264;
    Engine engine = normEngine(b, device());
    expectError([&] { engine.forward(xInput(2)); },
                {"buffer 5 't1' at workspace offset 1280 (",
                 "exceeds the 1288-byte workspace for batch=2"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[0].offset = SymExpr(-256);
    Engine engine = normEngine(b, device());
    expectError([&] { engine.forward(xInput(2)); },
                {"buffer 0 'x' at workspace offset -256"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[4].shape = {SymExpr::symbol(0) - SymExpr(5), 4};
    Engine engine = normEngine(b, device());
    expectError([&] { engine.forward(xInput(2)); },
                {"buffer 4 't0' has invalid shape [-3,4] for batch=2"});
  }
  {
    BundleDesc b = normBundle();
    // batch^70 overflows for batch = 2.
    b.executables[0].workspaceBytes =
        SymExpr::term(1, SymExpr::Monomial(70, 0));
    Engine engine = normEngine(b, device());
    expectError([&] { engine.forward(xInput(2)); }, {"overflows 64 bits"});
  }
}

// A bundle partitioned for several data-parallel ranks needs one process
// per rank and a communicator between them: refused, before anything runs.
TEST(Executable, EngineRefusesABundleForSeveralRanks) {
  BundleDesc b = normBundle();
  b.worldSize = 4;
  b.zeroStage = 2;
  std::string msg = expectError([&] { Engine::create(b, cpu()); }, {});
  EXPECT_EQ(msg, "bundle 'norm-test' was compiled for 4 data-parallel ranks "
                 "(ZeRO stage 2); this runtime runs a single process: compile "
                 "it with --world-size 1");
}

// CPU only: its embedding kernel checks the ids on the host before it runs;
// a GPU kernel sees them only on the device.
TEST(Executable, KernelErrorsNameTheCommand) {
  Engine engine = Engine::create(tinyLmBundle(), cpu());
  engine.initRandom(3);
  NamedTensors in = {
      {"input_ids", HostTensor::fromVector<int64_t>({1, 2}, {3, 99})}};
  expectError([&] { engine.forward(in); },
              {"forward: command 0 'embedding' at tiny.mlir:1: ", "99"});
}

TEST_P(ExecutableOnDevice, TinyLmMatchesReference) {
  Engine engine = Engine::create(tinyLmBundle(), device());
  engine.initRandom(7);
  const int64_t V = 16, D = 8, B = 2, T = 3;
  std::vector<int64_t> ids = {0, 5, 15, 7, 7, 1};
  NamedTensors out = engine.forward(
      {{"input_ids", HostTensor::fromVector<int64_t>({B, T}, ids)}});
  const HostTensor &logits = out.at("logits");
  ASSERT_EQ(logits.shape(), (Shape{B, T, V}));
  std::vector<float> wte = paramValues(engine, 0), g = paramValues(engine, 1),
                     beta = paramValues(engine, 2);
  std::vector<double> want =
      test::tinyLmReference(wte.data(), g.data(), beta.data(), ids);
  expectNear(logits, want, 1e-4);
}

TEST_P(ExecutableOnDevice, RunsFromABundleFileWithSafeTensorsWeights) {
  TempDir dir;
  writeBundle(tinyLmBundle(), dir.file("tiny.hyb"));
  Engine a = Engine::create(readBundle(dir.file("tiny.hyb")), device());
  a.initRandom(11);
  a.weights().saveSafeTensors(dir.file("model.safetensors"));
  Engine b = Engine::create(readBundle(dir.file("tiny.hyb")), device());
  b.loadWeights(dir.path());
  NamedTensors in = {
      {"input_ids", HostTensor::fromVector<int64_t>({1, 4}, {1, 2, 3, 4})}};
  EXPECT_EQ(a.forward(in).at("logits").toVector<float>(),
            b.forward(in).at("logits").toVector<float>());
}

// Commands on a second stream with an event between the streams: the
// executable forks its stream from the caller's and joins it back.
TEST_P(ExecutableOnDevice, SecondStreamAndEvents) {
  Engine engine = normEngine(twoStreamNormBundle(), device());
  for (int64_t batch : {2, 5}) {
    NamedTensors out = engine.forward(xInput(batch));
    std::vector<double> y, normed;
    normReference(inputRows(batch), batch, y, normed);
    expectNear(out.at("y"), y);
    expectNear(out.at("normed"), normed);
  }
}

// A collective over one rank (no communicator given to the device) is a
// copy: normed = all_reduce(t1) over the executable's communicator.
TEST_P(ExecutableOnDevice, CollectiveWithOneRankIsACopy) {
  BundleDesc b = normBundle();
  ExecutableDesc &e = b.executables[0];
  e.communicators = {"world"};
  e.commands[4].op = ops::Collective{CollectiveKind::AllReduce, 0};
  Engine engine = normEngine(b, device());
  NamedTensors out = engine.forward(xInput(3));
  std::vector<double> y, normed;
  normReference(inputRows(3), 3, y, normed);
  expectNear(out.at("normed"), normed);
}

// Only an executable whose param access is read_write may update the
// weights (the optimizer step); the others see the update in place.
TEST_P(ExecutableOnDevice, ReadWriteParamAccessUpdatesTheWeightsInPlace) {
  BundleDesc b = normBundle();
  ExecutableDesc step;
  step.name = "step";
  step.paramAccess = Access::ReadWrite;
  step.buffers = {
      buffer(BufferKind::Input, DType::F32, {4}, 0, "delta", 0),
      buffer(BufferKind::Param, DType::F32, {4}, 1, "ln.bias"),
  };
  step.inputs = {{"delta", 0}};
  step.commands = {command(add(), {1, 0}, {1}, "step.mlir:1")};
  step.workspaceBytes = 256;
  b.executables.push_back(step);
  Engine engine = normEngine(b, device());
  const void *bias = engine.weights().data(1);
  engine.executable("step").run(
      {{"delta", HostTensor::fromVector<float>({4}, {1, 1, 1, 1})}});
  EXPECT_EQ(engine.weights().data(1), bias);
  std::vector<float> p = paramValues(engine, 1);
  for (int k = 0; k < 4; ++k)
    EXPECT_FLOAT_EQ(p[k], kBias[k] + 1.0f);
  // forward reads the updated bias: its normed output moves by one.
  NamedTensors out = engine.forward(xInput(2));
  std::vector<double> y, normed;
  normReference(inputRows(2), 2, y, normed);
  for (double &v : normed)
    v += 1.0;
  expectNear(out.at("normed"), normed);
}

// Damaged bundles (checksum fixed up) that parse must also load: preparing
// every command on the device either works or is one clear error.
TEST_P(ExecutableOnDevice, FuzzedBundlesLoadOrFailCleanly) {
  std::vector<std::vector<uint8_t>> seeds = {serializeBundle(normBundle()),
                                             serializeBundle(tinyLmBundle()),
                                             serializeBundle(stateBundle())};
  std::mt19937 rng(5);
  int loaded = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = seeds[trial % seeds.size()];
    for (int f = 1 + rng() % 4; f > 0; --f)
      bad[kBundleHeaderSize + rng() % (bad.size() - kBundleHeaderSize)] =
          static_cast<uint8_t>(rng());
    std::vector<uint8_t> framed = framePayload(bad.data() + kBundleHeaderSize,
                                               bad.size() - kBundleHeaderSize);
    try {
      Engine engine = Engine::create(
          parseBundle(framed.data(), framed.size(), "fuzz.hyb"), device());
      ++loaded;
    } catch (const Error &e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
  EXPECT_GT(loaded, 10);
  EXPECT_EQ(device()->memoryStats().bytesInUse, 0u);
}

// A bf16 model: weights from an f32 checkpoint convert on load, and the
// logits stay close to the f32 model's on the same (rounded) weights.
TEST_P(ExecutableOnDevice, Bf16ModelFromAnF32Checkpoint) {
  TempDir dir;
  Engine f32 = Engine::create(tinyLmBundle(), device());
  f32.initRandom(7);
  f32.weights().saveSafeTensors(dir.file("model.safetensors"));
  BundleDesc b = tinyLmBundle();
  for (ParamDesc &p : b.params)
    p.dtype = DType::BF16;
  for (BufferDesc &buf : b.executables[0].buffers)
    if (buf.dtype == DType::F32)
      buf.dtype = DType::BF16;
  Engine bf16 = Engine::create(b, device());
  bf16.loadWeights(dir.path());
  std::vector<int64_t> ids = {0, 5, 15, 7, 7, 1};
  NamedTensors in = {
      {"input_ids", HostTensor::fromVector<int64_t>({2, 3}, ids)}};
  HostTensor got = bf16.forward(in).at("logits");
  ASSERT_EQ(got.dtype(), DType::BF16);
  // The reference: the f32 model on the bf16-rounded weights.
  std::vector<std::vector<float>> w;
  for (size_t i = 0; i < 3; ++i) {
    std::vector<uint16_t> p = readDeviceAs<uint16_t>(
        *device(), bf16.weights().data(i),
        static_cast<size_t>(numElements(b.params[i].shape)));
    std::vector<float> v;
    for (int64_t k = 0; k < numElements(b.params[i].shape); ++k)
      v.push_back(bf16ToFloat(p[k]));
    w.push_back(v);
  }
  std::vector<double> want =
      tinyLmReference(w[0].data(), w[1].data(), w[2].data(), ids);
  double largest = 0;
  for (double v : want)
    largest = std::max(largest, std::fabs(v));
  std::vector<float> logits = got.toFloats();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(logits[i], want[i], 2e-2 * largest) << i;
}
