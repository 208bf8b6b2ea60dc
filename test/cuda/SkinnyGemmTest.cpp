// The skinny GEMM (SkinnyGemm.h) against the CPU linear kernel: called
// directly (whatever the timing would pick) for 1 to 32 rows, large and odd
// K and N, both weight layouts, every activation with and without bias and
// residual, split K ranges (the combine kernel), unaligned operands (no
// 16-byte loads), f32 / bf16 / f16, with its declared scratch followed by a
// guard region; once captured in a CUDA graph and replayed with new
// operands; and through the linear op, whose plan times it against
// cuBLASLt (HYBRID_CUDA_SKINNY=0 leaves cuBLASLt alone). Linear groups: one
// launch of several members (separate weights, or column ranges of one)
// equals each member alone, bit for bit, and the linear_group op matches
// the CPU on both of its paths.
#include "CudaTestSupport.h"

#include "cuda/Context.h"
#include "cuda/SkinnyGemm.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace hybrid::cuda::test {
namespace {

class SkinnyGemmTest : public CudaKernelTest {};

void cudaOk(cudaError_t e, const char *what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA5;

/// Device memory holding a tensor `offset` bytes past a 256-byte boundary.
struct DeviceTensor {
  char *base = nullptr;
  void *data = nullptr;
  size_t bytes = 0;
  DeviceTensor(size_t n, size_t offset) : bytes(n) {
    cudaOk(cudaMalloc(&base, n + offset + 1), "cudaMalloc");
    data = base + offset;
  }
  ~DeviceTensor() { cudaFree(base); }
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  void upload(const HostTensor &t) {
    cudaOk(cudaMemcpy(data, t.bytes.data(), t.bytes.size(),
                      cudaMemcpyHostToDevice),
           "cudaMemcpy to device");
  }
};

/// A linear's operands in device memory and the GemmProblem of Linear.cpp
/// over them: x [M, K], weight [N, K] (transposed) or [K, N], optional
/// bias [N] and residual [M, N]; every tensor `offset` bytes off alignment.
struct DeviceLinear {
  std::vector<std::unique_ptr<DeviceTensor>> operands;
  std::unique_ptr<DeviceTensor> result;
  HostTensor out;
  GemmProblem problem;

  DeviceLinear(const ops::Linear &attrs, const std::vector<HostTensor> &tensors,
               size_t offset) {
    for (const HostTensor &t : tensors) {
      if (!t.present) {
        operands.push_back(nullptr);
        continue;
      }
      operands.push_back(
          std::make_unique<DeviceTensor>(t.bytes.size(), offset));
      operands.back()->upload(t);
    }
    const HostTensor &x = tensors[0], &w = tensors[1];
    GemmProblem &p = problem;
    p.dtype = x.dtype;
    p.transB = attrs.transposeWeight;
    p.K = x.shape.back();
    p.N = p.transB ? w.shape[0] : w.shape[1];
    p.M = x.numel() / p.K;
    p.lda = p.K;
    p.ldb = p.transB ? p.K : p.N;
    p.ldc = p.N;
    p.ldr = p.N;
    p.activation = attrs.activation;
    Shape outShape = x.shape;
    outShape.back() = p.N;
    out = HostTensor(x.dtype, outShape);
    result = std::make_unique<DeviceTensor>(out.bytes.size(), offset);
    p.A = operands[0]->data;
    p.B = operands[1]->data;
    p.bias = operands[2] ? operands[2]->data : nullptr;
    p.residual = operands[3] ? operands[3]->data : nullptr;
    p.C = result->data;
  }

  HostTensor download() const {
    HostTensor t = out;
    cudaOk(cudaMemcpy(t.bytes.data(), result->data, t.bytes.size(),
                      cudaMemcpyDeviceToHost),
           "cudaMemcpy to host");
    return t;
  }
};

/// The skinny kernel's result for a linear (operands as the linear op takes
/// them), with exactly its declared scratch and a guard region after it;
/// with `counted`, split tiles are finished by their last block (zeroed
/// tile counters, which must be zero again afterwards), else by the
/// combine kernel; with `settled`, the weight is declared settled (its
/// loads may start before the wait for the previous kernel).
HostTensor runSkinny(const ops::Linear &attrs,
                     const std::vector<HostTensor> &operands, int splits,
                     size_t offset = 0, bool counted = false,
                     bool settled = false) {
  DeviceLinear linear(attrs, operands, offset);
  linear.problem.settledB = settled;
  EXPECT_TRUE(skinnyGemmSupports(linear.problem));
  cudaOk(cudaMemset(linear.result->data, 0xFF, linear.out.bytes.size()),
         "cudaMemset");
  const size_t declared = skinnyGemmScratchBytes(linear.problem, splits);
  DeviceTensor scratch(declared + kGuardBytes, 0);
  cudaOk(cudaMemset(scratch.data, 0xFF, declared), "cudaMemset");
  cudaOk(cudaMemset(scratch.base + declared, kGuardByte, kGuardBytes),
         "cudaMemset");
  cudaStream_t stream = nullptr;
  cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate");
  const size_t counterCount = skinnyCounterCount(linear.problem);
  DeviceTensor counters(counterCount * sizeof(unsigned), 0);
  cudaOk(cudaMemset(counters.data, 0, counters.bytes), "cudaMemset");
  skinnyGemm(linear.problem, splits, declared ? scratch.data : nullptr,
             declared, stream, "linear",
             counted ? static_cast<unsigned *>(counters.data) : nullptr,
             counterCount);
  cudaOk(cudaStreamSynchronize(stream), "skinny GEMM");
  std::vector<unsigned> left(counterCount);
  cudaOk(cudaMemcpy(left.data(), counters.data, counters.bytes,
                    cudaMemcpyDeviceToHost),
         "cudaMemcpy counters");
  EXPECT_TRUE(std::all_of(left.begin(), left.end(), [](unsigned c) {
    return c == 0;
  })) << "the skinny GEMM left its tile counters nonzero";
  cudaOk(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::vector<uint8_t> guard(kGuardBytes);
  cudaOk(cudaMemcpy(guard.data(), scratch.base + declared, kGuardBytes,
                    cudaMemcpyDeviceToHost),
         "cudaMemcpy guard");
  EXPECT_TRUE(std::all_of(guard.begin(), guard.end(),
                          [](uint8_t b) { return b == kGuardByte; }))
      << "the skinny GEMM wrote past its " << declared << " bytes of scratch";
  return linear.download();
}

/// Operands of a linear: x [M, K], the weight as `transposed` says (the
/// same random values either way round), bias and residual when asked.
struct LinearOperands {
  HostTensor x, weightNK, bias, residual;
  std::vector<HostTensor> forLayout(bool transposed) const {
    HostTensor w = weightNK;
    if (!transposed)
      w.shape = {weightNK.shape[1], weightNK.shape[0]};
    return {x, w, bias, residual};
  }
};

LinearOperands randomLinear(DType dt, int64_t M, int64_t K, int64_t N,
                            bool bias, bool residual, std::mt19937 &rng) {
  LinearOperands o;
  o.x = randomTensor(dt, {M, K}, rng, -1, 1);
  o.weightNK = randomTensor(dt, {N, K}, rng, -1, 1);
  o.bias = bias ? randomTensor(dt, {N}, rng, -1, 1) : HostTensor::absent();
  o.residual =
      residual ? randomTensor(dt, {M, N}, rng, -1, 1) : HostTensor::absent();
  return o;
}

std::string describe(DType dt, int64_t M, int64_t K, int64_t N, bool transposed,
                     Activation act, bool bias, bool residual, int splits) {
  return std::string(dtypeName(dt)) + " " + std::to_string(M) + " x " +
         std::to_string(K) + " -> " + std::to_string(N) +
         (transposed ? " [N,K] " : " [K,N] ") + activationName(act) +
         (bias ? " bias" : "") + (residual ? " residual" : "") + " splits " +
         std::to_string(splits);
}

void expectSkinnyMatchesCpu(const LinearOperands &o, bool transposed,
                            Activation act, int splits, size_t offset = 0) {
  const ops::Linear attrs{transposed, act};
  const std::vector<HostTensor> operands = o.forLayout(transposed);
  const int64_t M = o.x.shape[0], K = o.x.shape[1], N = o.weightNK.shape[0];
  const std::string what =
      describe(o.x.dtype, M, K, N, transposed, act, o.bias.present,
               o.residual.present, splits) +
      (offset ? " offset " + std::to_string(offset) : "");
  SCOPED_TRACE(what);
  const HostTensor out(o.x.dtype, {M, N});
  const HostTensor cpu = runCpu(attrs, operands, {out})[0];
  const HostTensor gpu = runSkinny(attrs, operands, splits, offset);
  expectClose(gpu, cpu, sumTolerance(o.x.dtype), what);
  // A settled weight changes when it is read, not what is computed.
  const HostTensor early =
      runSkinny(attrs, operands, splits, offset, false, true);
  EXPECT_EQ(early.bytes, gpu.bytes)
      << what << ": with the weight settled the result differs";
  if (splits > 1) {
    // The last block of each tile sums the same partials in the same
    // order as the combine kernel: the same bits.
    const HostTensor counted = runSkinny(attrs, operands, splits, offset, true);
    EXPECT_EQ(counted.bytes, gpu.bytes)
        << what << ": finished by the last block differs from the combine";
  }
}

TEST_F(SkinnyGemmTest, MatchesTheCpuLinear) {
  // Decode shapes (q/k/v, fc1, fc2, the LM head) and odd ones; each with
  // its own epilogue, whole and with K split over three blocks per column
  // tile (uneven slices, the combine kernel).
  struct Case {
    int64_t M, K, N;
  };
  const std::vector<Case> cases = {
      {1, 2048, 2048}, {1, 8192, 2048}, {2, 1000, 72},   {3, 2048, 8192},
      {5, 777, 1001},  {7, 130, 33},    {16, 2048, 512}, {32, 2048, 2048},
      {32, 777, 1001}, {9, 24, 4104},   {1, 2048, 50272}};
  int index = 0;
  for (DType dt : kFloatTypes)
    for (const Case &c : cases) {
      const Activation act = static_cast<Activation>(index % kActivations);
      const bool bias = index % 2 == 0, residual = index % 3 != 0;
      ++index;
      const LinearOperands o =
          randomLinear(dt, c.M, c.K, c.N, bias, residual, rng);
      for (bool transposed : {true, false})
        for (int splits : {1, 3})
          expectSkinnyMatchesCpu(o, transposed, act, splits);
    }
}

TEST_F(SkinnyGemmTest, EveryEpilogue) {
  struct Case {
    int64_t M, K, N;
  };
  for (DType dt : kFloatTypes)
    for (const Case &c : {Case{3, 200, 301}, Case{1, 512, 1024}})
      for (bool bias : {true, false})
        for (bool residual : {false, true}) {
          const LinearOperands o =
              randomLinear(dt, c.M, c.K, c.N, bias, residual, rng);
          for (int a = 0; a < kActivations; ++a)
            for (bool transposed : {true, false})
              for (int splits : {1, 2})
                expectSkinnyMatchesCpu(o, transposed,
                                       static_cast<Activation>(a), splits);
        }
}

TEST_F(SkinnyGemmTest, UnalignedOperands) {
  // Sizes that allow 16-byte loads but addresses that do not (a tensor in
  // the middle of a buffer): the element-wise path.
  for (DType dt : kFloatTypes)
    for (int64_t M : {1, 12})
      for (bool transposed : {true, false}) {
        const LinearOperands o = randomLinear(dt, M, 512, 264, true, true, rng);
        expectSkinnyMatchesCpu(o, transposed, Activation::GeluTanh, 2,
                               dtypeSize(dt));
      }
}

TEST_F(SkinnyGemmTest, SettledWeightsStillWaitForTheInput) {
  // The weight's loads go out before the wait for the previous kernel; x
  // must not. A copy kernel (launched with the same overlap) writes x just
  // before the product on one stream, again with new values each round:
  // the product must see every new x.
  for (DType dt : {DType::BF16, DType::F16})
    for (bool transposed : {true, false}) {
      const int64_t M = 1, K = 2048, N = 2048;
      const ops::Linear attrs{transposed, Activation::None};
      LinearOperands o = randomLinear(dt, M, K, N, true, false, rng);
      DeviceLinear linear(attrs, o.forLayout(transposed), 0);
      linear.problem.settledB = true;
      DeviceTensor source(o.x.bytes.size(), 0);
      cudaStream_t stream = nullptr;
      cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate");
      const Op copy = ops::Copy{};
      CudaCall call;
      call.op = &copy;
      call.operands = {ConstTensor(source.data, dt, o.x.shape)};
      call.results = {Tensor{linear.operands[0]->data, dt, o.x.shape}};
      call.stream = stream;
      call.context = testContext();
      for (int round = 0; round < 4; ++round) {
        o.x = randomTensor(dt, {M, K}, rng, -1, 1);
        source.upload(o.x);
        cudaOk(cudaMemset(linear.operands[0]->data, 0, o.x.bytes.size()),
               "cudaMemset");
        findKernel(copy).run(call);
        skinnyGemm(linear.problem, 1, nullptr, 0, stream, "linear");
        cudaOk(cudaStreamSynchronize(stream), "copy and product");
        const std::string what = describe(dt, M, K, N, transposed,
                                          Activation::None, true, false, 1) +
                                 " round " + std::to_string(round);
        const HostTensor cpu =
            runCpu(attrs, o.forLayout(transposed), {linear.out})[0];
        expectClose(linear.download(), cpu, sumTolerance(dt), what);
      }
      cudaStreamDestroy(stream);
    }
}

TEST_F(SkinnyGemmTest, CapturedGraphReplaysNewOperands) {
  // One capture (global mode: a sync or allocation in the call fails it) of
  // split products (the combine kernel too), replayed after the operands
  // are overwritten in place.
  struct Case {
    DType dt;
    bool transposed;
    int64_t M, K, N;
    Activation act;
    int splits;
  };
  for (const Case &c :
       {Case{DType::BF16, true, 1, 2048, 2048, Activation::Silu, 4},
        Case{DType::F16, false, 3, 1024, 520, Activation::GeluErf, 2},
        Case{DType::F32, true, 2, 777, 1001, Activation::Relu, 3}}) {
    const ops::Linear attrs{c.transposed, c.act};
    LinearOperands o = randomLinear(c.dt, c.M, c.K, c.N, true, true, rng);
    DeviceLinear linear(attrs, o.forLayout(c.transposed), 0);
    const size_t scratchBytes =
        skinnyGemmScratchBytes(linear.problem, c.splits);
    DeviceTensor scratch(scratchBytes, 0);
    cudaStream_t stream = nullptr;
    cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate");
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
           "cudaStreamBeginCapture");
    skinnyGemm(linear.problem, c.splits, scratch.data, scratchBytes, stream,
               "linear");
    cudaOk(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
    cudaOk(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (int round = 0; round < 3; ++round) {
      if (round > 0) {
        o = randomLinear(c.dt, c.M, c.K, c.N, true, true, rng);
        const std::vector<HostTensor> fresh = o.forLayout(c.transposed);
        for (size_t i = 0; i < fresh.size(); ++i)
          linear.operands[i]->upload(fresh[i]);
      }
      cudaOk(cudaMemset(linear.result->data, 0xFF, linear.out.bytes.size()),
             "cudaMemset");
      cudaOk(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
      cudaOk(cudaStreamSynchronize(stream), "graph execution");
      const std::string what = describe(c.dt, c.M, c.K, c.N, c.transposed,
                                        c.act, true, true, c.splits) +
                               " replay " + std::to_string(round);
      const HostTensor cpu =
          runCpu(attrs, o.forLayout(c.transposed), {linear.out})[0];
      expectClose(linear.download(), cpu, sumTolerance(c.dt), what);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
  }
}

/// The plan of the linear call of these sizes in the test context.
const GemmPlan *planOf(DType dt, bool transposed, int64_t M, int64_t K,
                       int64_t N) {
  for (const auto &[key, plan] : testContext()->gemmPlans)
    if (key[0] == static_cast<int64_t>(dt) && key[2] == transposed &&
        key[3] == M && key[4] == N && key[5] == K)
      return &plan;
  return nullptr;
}

TEST_F(SkinnyGemmTest, LinearTimesItAgainstCublasLt) {
  // Through the linear op: the first call times cuBLASLt's algorithms and
  // the skinny kernel's split counts and keeps the fastest; either way the
  // result matches the CPU. Which one won is printed (the benchmark's
  // concern, not the test's).
  struct Case {
    DType dt;
    bool transposed;
    int64_t M, K, N;
    Activation act;
    bool residual;
  };
  for (const Case &c :
       {Case{DType::BF16, true, 1, 2048, 2048, Activation::None, false},
        Case{DType::BF16, true, 1, 2048, 8192, Activation::Relu, false},
        Case{DType::BF16, true, 1, 8192, 2048, Activation::None, true},
        Case{DType::BF16, false, 1, 768, 2304, Activation::None, false},
        Case{DType::BF16, true, 32, 2048, 2048, Activation::None, true},
        Case{DType::F16, true, 4, 4096, 1024, Activation::Silu, false},
        Case{DType::F32, true, 1, 1024, 4096, Activation::GeluTanh, true}}) {
    const ops::Linear attrs{c.transposed, c.act};
    const LinearOperands o =
        randomLinear(c.dt, c.M, c.K, c.N, true, c.residual, rng);
    const Tolerance tol = sumTolerance(c.dt);
    const std::string what =
        describe(c.dt, c.M, c.K, c.N, c.transposed, c.act, true, c.residual, 0);
    for (int call = 0; call < 2; ++call) // tuned, then the kept choice
      expectMatchesCpu(attrs, o.forLayout(c.transposed),
                       {HostTensor(c.dt, {c.M, c.N})}, what, &tol);
    const GemmPlan *plan = planOf(c.dt, c.transposed, c.M, c.K, c.N);
    ASSERT_NE(plan, nullptr) << what;
    EXPECT_TRUE(plan->tuned) << what;
    EXPECT_FALSE(plan->skinnyCandidates.empty()) << what;
    std::printf("[ linear   ] %s: %s\n", what.c_str(),
                plan->stream ? ("streaming GEMV, stash " +
                                std::to_string(std::max(0, plan->stash)))
                                   .c_str()
                : plan->skinnySplits
                    ? ("skinny kernel, " + std::to_string(plan->skinnySplits) +
                       " split(s)")
                          .c_str()
                    : "cuBLASLt");
  }
}

TEST_F(SkinnyGemmTest, EnvironmentDisablesIt) {
  ASSERT_EQ(setenv("HYBRID_CUDA_SKINNY", "0", 1), 0);
  const LinearOperands o =
      randomLinear(DType::BF16, 2, 1536, 1544, false, false, rng);
  const Tolerance tol = sumTolerance(DType::BF16);
  expectMatchesCpu(ops::Linear{true}, o.forLayout(true),
                   {HostTensor(DType::BF16, {2, 1544})},
                   "linear with HYBRID_CUDA_SKINNY=0", &tol);
  unsetenv("HYBRID_CUDA_SKINNY");
  const GemmPlan *plan = planOf(DType::BF16, true, 2, 1536, 1544);
  ASSERT_NE(plan, nullptr);
  EXPECT_TRUE(plan->skinnyCandidates.empty());
  EXPECT_EQ(plan->skinnySplits, 0);
}

TEST_F(SkinnyGemmTest, WhatItTakes) {
  GemmProblem p;
  p.dtype = DType::BF16;
  p.M = 32;
  p.N = 5;
  p.K = 7;
  EXPECT_TRUE(skinnyGemmSupports(p));
  p.M = 33;
  EXPECT_FALSE(skinnyGemmSupports(p));
  p.M = 1;
  p.batch = 2;
  EXPECT_FALSE(skinnyGemmSupports(p));
  p.batch = 1;
  p.transA = true;
  EXPECT_FALSE(skinnyGemmSupports(p));
  p.transA = false;
  p.K = 0;
  EXPECT_FALSE(skinnyGemmSupports(p));
  p.K = 7;
  p.dtype = DType::I32;
  EXPECT_FALSE(skinnyGemmSupports(p));
  // Split candidates start with 1, fit the scratch and stop once the
  // blocks fill the GPU.
  p.dtype = DType::BF16;
  p.transB = true;
  p.K = 2048;
  p.N = 2048;
  const std::vector<int> splits = skinnySplitCandidates(p, 1 << 20, 132);
  ASSERT_FALSE(splits.empty());
  EXPECT_EQ(splits.front(), 1);
  for (int s : splits)
    EXPECT_LE(skinnyGemmScratchBytes(p, s), size_t(1) << 20);
  EXPECT_EQ(skinnySplitCandidates(p, 0, 132), std::vector<int>{1});
  p.N = 50272;
  EXPECT_EQ(skinnySplitCandidates(p, 1 << 30, 132), std::vector<int>{1});
}

// ---------------------------------------------------------------------------
// Linear groups: several products of one x in one launch.

/// A linear group's operands (x, then weight and bias per member) in device
/// memory, and the GemmProblem of each member as Linear.cpp makes it: its
/// rows of a [N, K] weight, or its columns of a [K, N] one.
struct DeviceGroup {
  std::vector<std::unique_ptr<DeviceTensor>> operands, results;
  std::vector<HostTensor> outs;
  std::vector<GemmProblem> problems;

  DeviceGroup(const ops::LinearGroup &attrs,
              const std::vector<HostTensor> &tensors) {
    for (const HostTensor &t : tensors) {
      if (!t.present) {
        operands.push_back(nullptr);
        continue;
      }
      operands.push_back(std::make_unique<DeviceTensor>(t.bytes.size(), 0));
      operands.back()->upload(t);
    }
    const HostTensor &x = tensors[0];
    const bool transW = attrs.transposeWeight;
    const int64_t K = x.shape.back();
    const size_t bytes = dtypeSize(x.dtype);
    for (size_t i = 0; i < attrs.featureBegins.size(); ++i) {
      const HostTensor &w = tensors[1 + 2 * i];
      const int64_t begin = attrs.featureBegins[i], end = attrs.featureEnds[i];
      GemmProblem p;
      p.dtype = x.dtype;
      p.transB = transW;
      p.K = K;
      p.N = end - begin;
      p.M = x.numel() / K;
      p.lda = K;
      p.ldb = transW ? K : w.shape[1];
      p.ldc = p.N;
      p.activation = attrs.activation;
      p.A = operands[0]->data;
      p.B = static_cast<const char *>(operands[1 + 2 * i]->data) +
            (transW ? begin * K : begin) * bytes;
      if (operands[2 + 2 * i])
        p.bias = static_cast<const char *>(operands[2 + 2 * i]->data) +
                 begin * bytes;
      outs.emplace_back(x.dtype, Shape{p.M, p.N});
      results.push_back(
          std::make_unique<DeviceTensor>(outs.back().bytes.size(), 0));
      cudaOk(cudaMemset(results.back()->data, 0xFF, outs.back().bytes.size()),
             "cudaMemset");
      p.C = results.back()->data;
      problems.push_back(p);
    }
  }

  std::vector<HostTensor> download() const {
    std::vector<HostTensor> got = outs;
    for (size_t i = 0; i < got.size(); ++i)
      cudaOk(cudaMemcpy(got[i].bytes.data(), results[i]->data,
                        got[i].bytes.size(), cudaMemcpyDeviceToHost),
             "cudaMemcpy to host");
    return got;
  }
};

/// skinnyGemmGroup's results for a group (operands as linear_group takes
/// them), with exactly its declared scratch and a guard region after it,
/// finished by the last block of each tile (`counted`) or the combine
/// kernel.
std::vector<HostTensor> runSkinnyGroup(const ops::LinearGroup &attrs,
                                       const std::vector<HostTensor> &operands,
                                       int splits, bool counted) {
  DeviceGroup group(attrs, operands);
  const GemmProblem *problems = group.problems.data();
  const size_t count = group.problems.size();
  EXPECT_TRUE(skinnyGemmGroupSupports(problems, count));
  const size_t declared = skinnyGemmGroupScratchBytes(problems, count, splits);
  DeviceTensor scratch(declared + kGuardBytes, 0);
  cudaOk(cudaMemset(scratch.data, 0xFF, declared), "cudaMemset");
  cudaOk(cudaMemset(scratch.base + declared, kGuardByte, kGuardBytes),
         "cudaMemset");
  const size_t counterCount = skinnyGroupCounterCount(problems, count);
  DeviceTensor counters(counterCount * sizeof(unsigned), 0);
  cudaOk(cudaMemset(counters.data, 0, counters.bytes), "cudaMemset");
  cudaStream_t stream = nullptr;
  cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate");
  skinnyGemmGroup(problems, count, splits, declared ? scratch.data : nullptr,
                  declared, stream, "linear_group",
                  counted ? static_cast<unsigned *>(counters.data) : nullptr,
                  counterCount);
  cudaOk(cudaStreamSynchronize(stream), "skinny GEMM group");
  cudaOk(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::vector<unsigned> left(counterCount);
  cudaOk(cudaMemcpy(left.data(), counters.data, counters.bytes,
                    cudaMemcpyDeviceToHost),
         "cudaMemcpy counters");
  EXPECT_TRUE(std::all_of(left.begin(), left.end(), [](unsigned c) {
    return c == 0;
  })) << "the skinny GEMM group left its tile counters nonzero";
  std::vector<uint8_t> guard(kGuardBytes);
  cudaOk(cudaMemcpy(guard.data(), scratch.base + declared, kGuardBytes,
                    cudaMemcpyDeviceToHost),
         "cudaMemcpy guard");
  EXPECT_TRUE(std::all_of(guard.begin(), guard.end(),
                          [](uint8_t b) { return b == kGuardByte; }))
      << "the skinny GEMM group wrote past its " << declared
      << " bytes of scratch";
  return group.download();
}

/// A group of three members of x [M, K = 100]: q, k and v with weights of
/// their own ([N, K], N = 37, 64, 129, each with a bias), or (GPT-2's
/// c_attn) the column ranges [0, 37), [37, 101), [101, 230) of one
/// [K, 230] weight and its bias. Operands and the results' shapes.
struct GroupCase {
  ops::LinearGroup attrs;
  std::vector<HostTensor> operands, results;
};

GroupCase randomGroup(DType dt, int64_t M, bool sharedWeight, Activation act,
                      std::mt19937 &rng) {
  constexpr int64_t K = 100;
  const std::vector<int64_t> widths = {37, 64, 129};
  GroupCase c;
  c.attrs.transposeWeight = !sharedWeight;
  c.attrs.activation = act;
  c.operands.push_back(randomTensor(dt, {M, K}, rng, -1, 1));
  const HostTensor fused = randomTensor(dt, {K, 230}, rng, -1, 1);
  const HostTensor fusedBias = randomTensor(dt, {230}, rng, -1, 1);
  int64_t begin = 0;
  for (int64_t n : widths) {
    if (sharedWeight) {
      c.attrs.featureBegins.push_back(begin);
      c.attrs.featureEnds.push_back(begin + n);
      c.operands.push_back(fused);
      c.operands.push_back(fusedBias);
    } else {
      c.attrs.featureBegins.push_back(0);
      c.attrs.featureEnds.push_back(n);
      c.operands.push_back(randomTensor(dt, {n, K}, rng, -1, 1));
      c.operands.push_back(randomTensor(dt, {n}, rng, -1, 1));
    }
    c.results.emplace_back(dt, Shape{M, n});
    begin += n;
  }
  return c;
}

TEST_F(SkinnyGemmTest, GroupIsEachMemberAlone) {
  // One launch over every member's column tiles gives each member exactly
  // the bits skinnyGemm gives it alone (same split, same finish), and so
  // matches the CPU's linear_group.
  int index = 0;
  for (DType dt : kFloatTypes)
    for (int64_t M : {1, 3, 17})
      for (bool shared : {false, true}) {
        const Activation act = static_cast<Activation>(index++ % kActivations);
        const GroupCase c = randomGroup(dt, M, shared, act, rng);
        const std::vector<HostTensor> cpu =
            runCpu(c.attrs, c.operands, c.results);
        for (int splits : {1, 2, 3})
          for (bool counted : {false, true}) {
            const std::string what =
                std::string(dtypeName(dt)) + " M " + std::to_string(M) +
                (shared ? " column ranges of one [K, N] weight"
                        : " three [N, K] weights") +
                " " + activationName(act) + " splits " +
                std::to_string(splits) + (counted ? " counted" : "");
            SCOPED_TRACE(what);
            const std::vector<HostTensor> gpu =
                runSkinnyGroup(c.attrs, c.operands, splits, counted);
            ASSERT_EQ(gpu.size(), cpu.size());
            for (size_t i = 0; i < gpu.size(); ++i) {
              expectClose(gpu[i], cpu[i], sumTolerance(dt),
                          what + " member " + std::to_string(i));
              ops::LinearGroup alone = c.attrs;
              alone.featureBegins = {c.attrs.featureBegins[i]};
              alone.featureEnds = {c.attrs.featureEnds[i]};
              const std::vector<HostTensor> single = runSkinnyGroup(
                  alone,
                  {c.operands[0], c.operands[1 + 2 * i], c.operands[2 + 2 * i]},
                  splits, counted);
              EXPECT_EQ(gpu[i].bytes, single[0].bytes)
                  << what << " member " << i << " differs from its product "
                  << "alone";
            }
          }
      }
}

TEST_F(SkinnyGemmTest, MoreMembersThanOneLaunchTakes) {
  // Six members: two launches, the counters reused by the second.
  GroupCase c = randomGroup(DType::BF16, 2, false, Activation::None, rng);
  const GroupCase more =
      randomGroup(DType::BF16, 2, false, Activation::None, rng);
  for (size_t i = 0; i < 3; ++i) {
    c.attrs.featureBegins.push_back(more.attrs.featureBegins[i]);
    c.attrs.featureEnds.push_back(more.attrs.featureEnds[i]);
    c.operands.push_back(more.operands[1 + 2 * i]);
    c.operands.push_back(more.operands[2 + 2 * i]);
    c.results.push_back(more.results[i]);
  }
  const std::vector<HostTensor> cpu = runCpu(c.attrs, c.operands, c.results);
  for (bool counted : {false, true}) {
    const std::vector<HostTensor> gpu =
        runSkinnyGroup(c.attrs, c.operands, 2, counted);
    for (size_t i = 0; i < gpu.size(); ++i)
      expectClose(gpu[i], cpu[i], sumTolerance(DType::BF16),
                  "six members, member " + std::to_string(i));
  }
}

TEST_F(SkinnyGemmTest, LinearGroupOpMatchesCpu) {
  // Through the op: the first call tunes each member's plan (and runs them
  // one by one), the second runs them as the plans say: one skinny launch
  // when each chose the skinny kernel, cuBLASLt per member (M = 40, past
  // the skinny kernel's rows) otherwise.
  for (DType dt : kFloatTypes)
    for (int64_t M : {1, 3, 40})
      for (bool shared : {false, true}) {
        const GroupCase c =
            randomGroup(dt, M, shared, Activation::GeluTanh, rng);
        const Tolerance tol = sumTolerance(dt);
        const std::string what =
            std::string("linear_group ") + dtypeName(dt) + " M " +
            std::to_string(M) + (shared ? " [K, N] ranges" : " [N, K] weights");
        for (int call = 0; call < 2; ++call)
          expectMatchesCpu(c.attrs, c.operands, c.results, what, &tol);
      }
}

TEST_F(SkinnyGemmTest, LinearGroupOpReplaysInAGraph) {
  // A decode step's group: tuned by a first call, captured once (one skinny
  // launch when every member chose the skinny kernel) and replayed with new
  // input rows.
  for (DType dt : {DType::BF16, DType::F32})
    for (bool shared : {false, true}) {
      const GroupCase c = randomGroup(dt, 1, shared, Activation::None, rng);
      const Tolerance tol = sumTolerance(dt);
      const std::string what = std::string("linear_group graph ") +
                               dtypeName(dt) +
                               (shared ? " [K, N] ranges" : " [N, K] weights");
      expectMatchesCpu(c.attrs, c.operands, c.results, what + " tuning", &tol);
      CapturedCall step(c.attrs, c.operands, c.results);
      std::vector<HostTensor> operands = c.operands;
      for (int round = 0; round < 2; ++round) {
        operands[0] = randomTensor(dt, operands[0].shape, rng, -1, 1);
        step.setOperand(0, operands[0]);
        const std::vector<HostTensor> gpu = step.replay();
        const std::vector<HostTensor> cpu =
            runCpu(c.attrs, operands, c.results);
        ASSERT_EQ(gpu.size(), cpu.size());
        for (size_t i = 0; i < gpu.size(); ++i)
          expectClose(gpu[i], cpu[i], tol,
                      what + " replay " + std::to_string(round) + " member " +
                          std::to_string(i));
      }
    }
}

TEST_F(SkinnyGemmTest, PinnedPlansAreWhatTuningKeeps) {
  // HYBRID_CUDA_PLANS' pins (set here on the context, for shapes no other
  // test uses): tuning keeps the pinned kind of kernel, and the pinned
  // count where one is given; each result still matches the CPU.
  Context &context = *testContext();
  struct Unpin { // (the shared context keeps no pin past this test)
    Context &context;
    ~Unpin() { context.planPins.clear(); }
  } unpin{context};
  std::string error;
  ASSERT_TRUE(parsePlanPins("1x1536x2560=cublaslt,1x1536x2568=stream:2,"
                            "1x1536x2576=skinny,1x1536x2584=stream:0,"
                            "1x1024x40+48=stream:1,1x1024x56+64=apart",
                            context.planPins, error))
      << error;
  const Tolerance tol = sumTolerance(DType::BF16);
  struct Case {
    int64_t N;
    bool stream;
    int stash;   ///< -1: any
    bool skinny; ///< (neither: cuBLASLt)
  };
  for (const Case &c :
       {Case{2560, false, -1, false}, Case{2568, true, 2, false},
        Case{2576, false, -1, true}, Case{2584, true, 0, false}}) {
    const LinearOperands o =
        randomLinear(DType::BF16, 1, 1536, c.N, true, false, rng);
    const std::string what = "pinned 1 x 1536 x " + std::to_string(c.N);
    for (int call = 0; call < 2; ++call)
      expectMatchesCpu(ops::Linear{true}, o.forLayout(true),
                       {HostTensor(DType::BF16, {1, c.N})}, what, &tol);
    const GemmPlan *plan = planOf(DType::BF16, true, 1, 1536, c.N);
    ASSERT_NE(plan, nullptr) << what;
    EXPECT_TRUE(plan->tuned) << what;
    EXPECT_EQ(plan->stream, c.stream) << what;
    EXPECT_EQ(plan->skinnySplits > 0, c.skinny) << what;
    if (c.stash >= 0)
      EXPECT_EQ(plan->stash, c.stash) << what;
  }
  // Two groups of [N, K] weights sharing x: one pinned to the streaming
  // GEMV with one stashed step, one to its members' own plans.
  for (const std::vector<int64_t> &widths :
       {std::vector<int64_t>{40, 48}, std::vector<int64_t>{56, 64}}) {
    ops::LinearGroup attrs;
    attrs.transposeWeight = true;
    std::vector<HostTensor> operands = {
        randomTensor(DType::BF16, {1, 1024}, rng, -1, 1)};
    std::vector<HostTensor> results;
    for (int64_t n : widths) {
      attrs.featureBegins.push_back(0);
      attrs.featureEnds.push_back(n);
      operands.push_back(randomTensor(DType::BF16, {n, 1024}, rng, -1, 1));
      operands.push_back(randomTensor(DType::BF16, {n}, rng, -1, 1));
      results.emplace_back(DType::BF16, Shape{1, n});
    }
    const std::string what = "pinned group of " + std::to_string(widths[0]) +
                             "+" + std::to_string(widths[1]);
    for (int call = 0; call < 2; ++call)
      expectMatchesCpu(attrs, operands, results, what, &tol);
    const GroupPlan *plan = nullptr;
    for (const auto &[key, p] : context.groupPlans)
      if (key.size() == 2 && key[0][3] == 1 && key[0][4] == widths[0] &&
          key[1][4] == widths[1] && key[0][5] == 1024)
        plan = &p;
    ASSERT_NE(plan, nullptr) << what;
    if (widths[0] == 40) {
      EXPECT_EQ(plan->splits, GroupPlan::kStreamGroup) << what;
      EXPECT_EQ(plan->stash, 1) << what;
    } else {
      EXPECT_EQ(plan->splits, 0) << what;
    }
  }
}

TEST_F(SkinnyGemmTest, PreferredStreamingGemvThroughTheOps) {
  // HYBRID_CUDA_STREAM=prefer: a linear's plan and a linear group take the
  // streaming GEMV untimed, so gemm()'s and gemmGroup()'s dispatch to it
  // runs (the group also captured and replayed); each matches the CPU.
  // Shapes no other test uses (plans and group picks are cached).
  ASSERT_EQ(setenv("HYBRID_CUDA_STREAM", "prefer", 1), 0);
  const Tolerance tol = sumTolerance(DType::BF16);
  const LinearOperands o =
      randomLinear(DType::BF16, 3, 1552, 1560, true, true, rng);
  for (int call = 0; call < 2; ++call)
    expectMatchesCpu(ops::Linear{true, Activation::Relu}, o.forLayout(true),
                     {HostTensor(DType::BF16, {3, 1560})},
                     "linear, streaming GEMV preferred", &tol);

  GroupCase c;
  c.attrs.transposeWeight = true;
  c.attrs.activation = Activation::GeluTanh;
  c.operands.push_back(randomTensor(DType::BF16, {2, 264}, rng, -1, 1));
  for (int64_t n : {40, 72, 9}) {
    c.attrs.featureBegins.push_back(0);
    c.attrs.featureEnds.push_back(n);
    c.operands.push_back(randomTensor(DType::BF16, {n, 264}, rng, -1, 1));
    c.operands.push_back(randomTensor(DType::BF16, {n}, rng, -1, 1));
    c.results.emplace_back(DType::BF16, Shape{2, n});
  }
  for (int call = 0; call < 2; ++call)
    expectMatchesCpu(c.attrs, c.operands, c.results,
                     "linear_group, streaming GEMV preferred", &tol);
  CapturedCall step(c.attrs, c.operands, c.results);
  std::vector<HostTensor> operands = c.operands;
  operands[0] = randomTensor(DType::BF16, operands[0].shape, rng, -1, 1);
  step.setOperand(0, operands[0]);
  const std::vector<HostTensor> gpu = step.replay();
  const std::vector<HostTensor> cpu = runCpu(c.attrs, operands, c.results);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i)
    expectClose(gpu[i], cpu[i], tol,
                "linear_group replayed, member " + std::to_string(i));
  unsetenv("HYBRID_CUDA_STREAM");

  const GemmPlan *plan = planOf(DType::BF16, true, 3, 1552, 1560);
  ASSERT_NE(plan, nullptr);
  EXPECT_TRUE(plan->stream);
  const GemmPlan *member = planOf(DType::BF16, true, 2, 264, 72);
  ASSERT_NE(member, nullptr);
  EXPECT_TRUE(member->stream);
}

TEST_F(SkinnyGemmTest, WhatAGroupTakes) {
  GemmProblem p;
  p.dtype = DType::BF16;
  p.M = 4;
  p.N = 64;
  p.K = 128;
  p.lda = 128;
  int anchor = 0;
  p.A = &anchor;
  GemmProblem q = p;
  q.N = 32;
  const GemmProblem same[] = {p, q};
  EXPECT_TRUE(skinnyGemmGroupSupports(same, 2));
  EXPECT_EQ(skinnyGemmGroupScratchBytes(same, 2, 2),
            skinnyGemmScratchBytes(p, 2) + skinnyGemmScratchBytes(q, 2));
  GemmProblem otherX = q;
  int elsewhere = 0;
  otherX.A = &elsewhere;
  const GemmProblem differentX[] = {p, otherX};
  EXPECT_FALSE(skinnyGemmGroupSupports(differentX, 2));
  GemmProblem residual = q;
  residual.residual = &anchor;
  const GemmProblem withResidual[] = {p, residual};
  EXPECT_FALSE(skinnyGemmGroupSupports(withResidual, 2));
  EXPECT_TRUE(skinnyGemmGroupSupports(&residual, 1));
  GemmProblem act = q;
  act.activation = Activation::Relu;
  const GemmProblem mixed[] = {p, act};
  EXPECT_FALSE(skinnyGemmGroupSupports(mixed, 2));
}

} // namespace
} // namespace hybrid::cuda::test
