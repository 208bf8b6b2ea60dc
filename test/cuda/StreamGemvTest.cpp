// The streaming GEMV (StreamGemv.h) against the CPU linear kernel, called
// directly: 1 to 8 rows; K from one 16-byte piece to several steps of
// 1024 pieces with a partial last one (each row shape: 4, 2 and 1 rows an
// item); N from 1 to GPT-2's LM head, 50,257 (a partial last item); every
// epilogue; bf16 and f16. The same bits with the weight settled or not, and on
// grids sized for 1 and for 132 multiprocessors (each output's sum runs over K
// in one order whatever the grid), and with 1 or 2 steps a block stashed in
// shared memory. Once captured in a CUDA graph and replayed
// with new operands; a copy kernel writing x right before a settled product;
// the norm prologue (layer_norm / rms_norm); what it declines.
#include "CudaTestSupport.h"

#include "cuda/StreamGemv.h"

#include <cuda_runtime.h>

#include <memory>

namespace hybrid::cuda::test {
namespace {

class StreamGemvTest : public CudaKernelTest {};

void cudaOk(cudaError_t e, const char *what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

/// A tensor's bytes in device memory.
struct Device {
  void *data = nullptr;
  size_t bytes = 0;
  explicit Device(const HostTensor &t) : bytes(t.bytes.size()) {
    cudaOk(cudaMalloc(&data, bytes + 1), "cudaMalloc");
    upload(t);
  }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;
  ~Device() { cudaFree(data); }
  void upload(const HostTensor &t) {
    cudaOk(cudaMemcpy(data, t.bytes.data(), t.bytes.size(),
                      cudaMemcpyHostToDevice),
           "cudaMemcpy to device");
  }
  HostTensor download(HostTensor like) const {
    cudaOk(cudaMemcpy(like.bytes.data(), data, like.bytes.size(),
                      cudaMemcpyDeviceToHost),
           "cudaMemcpy to host");
    return like;
  }
};

/// A linear's operands (x [M, K], weight [N, K], bias?, residual?) on the
/// device with its result poisoned, and the GemmProblem Linear.cpp makes.
struct Product {
  std::vector<HostTensor> host;
  std::vector<std::unique_ptr<Device>> dev;
  std::unique_ptr<Device> out;
  HostTensor result;
  GemmProblem p;

  Product(DType dt, int64_t M, int64_t K, int64_t N, Activation act, bool bias,
          bool residual, std::mt19937 &rng) {
    host = {randomTensor(dt, {M, K}, rng, -1, 1),
            randomTensor(dt, {N, K}, rng, -1, 1),
            bias ? randomTensor(dt, {N}, rng, -1, 1) : HostTensor::absent(),
            residual ? randomTensor(dt, {M, N}, rng, -1, 1)
                     : HostTensor::absent()};
    for (const HostTensor &t : host)
      dev.push_back(t.present ? std::make_unique<Device>(t) : nullptr);
    result = HostTensor(dt, {M, N});
    out = std::make_unique<Device>(result);
    p.dtype = dt;
    p.transB = true;
    p.M = M;
    p.N = N;
    p.K = K;
    p.lda = K;
    p.ldb = K;
    p.ldc = N;
    p.ldr = N;
    p.A = dev[0]->data;
    p.B = dev[1]->data;
    p.bias = bias ? dev[2]->data : nullptr;
    p.residual = residual ? dev[3]->data : nullptr;
    p.C = out->data;
    p.activation = act;
  }

  ops::Linear attrs() const { return ops::Linear{true, p.activation}; }

  HostTensor cpu() const { return runCpu(attrs(), host, {result})[0]; }

  HostTensor run(int smCount, bool settled, int stash = 0) {
    cudaOk(cudaMemset(out->data, 0xFF, out->bytes), "cudaMemset");
    GemmProblem q = p;
    q.settledB = settled;
    streamGemv(q, smCount, nullptr, "linear", stash);
    cudaOk(cudaDeviceSynchronize(), "streaming GEMV");
    return out->download(result);
  }
};

std::string describe(const GemmProblem &p) {
  return std::string(dtypeName(p.dtype)) + " " + std::to_string(p.M) + " x " +
         std::to_string(p.K) + " -> " + std::to_string(p.N) + " " +
         activationName(p.activation) + (p.bias ? " bias" : "") +
         (p.residual ? " residual" : "");
}

TEST_F(StreamGemvTest, MatchesTheCpuLinear) {
  struct Case {
    int64_t M, K, N;
  };
  // K <= 2048: 4 rows an item; <= 4096: 2; beyond, 1 row and 1024 pieces
  // a step (16400: three steps, the last partial).
  const std::vector<Case> cases = {
      {1, 2048, 2048}, {1, 8192, 2048}, {1, 2048, 8192}, {8, 2048, 512},
      {3, 8, 17},      {5, 520, 33},    {2, 1000, 1},    {7, 4104, 100},
      {1, 768, 50257}, {4, 1536, 48},   {1, 3000, 70},   {2, 16400, 37},
      {1, 16384, 301}, {3, 3000, 70},   {8, 4096, 129},  {1, 65536, 3}};
  int index = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (const Case &c : cases) {
      const Activation act = static_cast<Activation>(index % kActivations);
      const bool bias = index % 2 == 0, residual = index % 3 != 0;
      ++index;
      Product product(dt, c.M, c.K, c.N, act, bias, residual, rng);
      ASSERT_TRUE(streamGemvSupports(product.p)) << describe(product.p);
      const std::string what = describe(product.p);
      SCOPED_TRACE(what);
      const HostTensor gpu = product.run(132, false);
      expectClose(gpu, product.cpu(), sumTolerance(dt), what);
      EXPECT_EQ(product.run(132, true).bytes, gpu.bytes)
          << what << ": with the weight settled the result differs";
      EXPECT_EQ(product.run(1, false).bytes, gpu.bytes)
          << what << ": on another grid the result differs";
      // Steps stashed in shared memory (one x row; ignored for more): the
      // same bits, with few steps a block (fewer than the stash) and many
      // (a grid for one multiprocessor: four blocks walking the items; the
      // 65536-long rows: eight steps an item, one item a block).
      for (int stash : {1, 2})
        for (int grid : {132, 1})
          for (bool settled : {false, true})
            EXPECT_EQ(product.run(grid, settled, stash).bytes, gpu.bytes)
                << what << ": with " << stash << " steps stashed, grid " << grid
                << (settled ? ", settled" : "") << ", the result differs";
    }
}

TEST_F(StreamGemvTest, GroupEqualsEachMemberAlone) {
  // Members sharing x (Llama's q, k, v with grouped heads; five, so that a
  // second launch takes the fifth), one launch per four: each result the
  // bits of its product alone.
  for (DType dt : {DType::BF16, DType::F16}) {
    const int64_t M = 3, K = 2056;
    Product first(dt, M, K, 2048, Activation::Silu, true, false, rng);
    std::vector<std::unique_ptr<Product>> members;
    std::vector<GemmProblem> problems;
    for (int64_t N :
         {int64_t(2048), int64_t(512), int64_t(512), int64_t(40), int64_t(1)}) {
      members.push_back(std::make_unique<Product>(dt, M, K, N, Activation::Silu,
                                                  true, false, rng));
      Product &m = *members.back();
      m.host[0] = first.host[0]; // one x for all
      m.p.A = first.dev[0]->data;
      problems.push_back(m.p);
    }
    ASSERT_TRUE(streamGemvGroupSupports(problems.data(), problems.size()));
    std::vector<HostTensor> alone;
    for (auto &m : members)
      alone.push_back(m->run(132, false));
    for (auto &m : members)
      cudaOk(cudaMemset(m->out->data, 0xFF, m->out->bytes), "cudaMemset");
    streamGemvGroup(problems.data(), problems.size(), 132, nullptr, "linear");
    cudaOk(cudaDeviceSynchronize(), "streaming GEMV group");
    for (size_t i = 0; i < members.size(); ++i) {
      const std::string what =
          describe(problems[i]) + " member " + std::to_string(i);
      const HostTensor together = members[i]->out->download(members[i]->result);
      EXPECT_EQ(together.bytes, alone[i].bytes)
          << what << ": in the group the result differs";
      expectClose(together, members[i]->cpu(), sumTolerance(dt), what);
    }
  }
}

TEST_F(StreamGemvTest, StashedGroupEqualsEachMemberAlone) {
  // One x row, so the stash applies: a group's items cross members within
  // a block's stashed steps (a grid for one multiprocessor: four blocks of
  // ~163 of the 651 items) and at 132 multiprocessors; each result the bits of
  // its product alone without a stash.
  for (DType dt : {DType::BF16, DType::F16}) {
    const int64_t K = 2048;
    Product first(dt, 1, K, 2048, Activation::Relu, true, false, rng);
    std::vector<std::unique_ptr<Product>> members;
    std::vector<GemmProblem> problems;
    for (int64_t N : {int64_t(2048), int64_t(512), int64_t(40), int64_t(1)}) {
      members.push_back(std::make_unique<Product>(dt, 1, K, N, Activation::Relu,
                                                  true, false, rng));
      Product &m = *members.back();
      m.host[0] = first.host[0];
      m.p.A = first.dev[0]->data;
      m.p.settledB = true;
      problems.push_back(m.p);
    }
    std::vector<HostTensor> alone;
    for (auto &m : members)
      alone.push_back(m->run(132, false));
    for (int stash : {1, 2})
      for (int smCount : {1, 132}) {
        for (auto &m : members)
          cudaOk(cudaMemset(m->out->data, 0xFF, m->out->bytes), "cudaMemset");
        streamGemvGroup(problems.data(), problems.size(), smCount, nullptr,
                        "linear", stash);
        cudaOk(cudaDeviceSynchronize(), "stashed streaming GEMV group");
        for (size_t i = 0; i < members.size(); ++i)
          EXPECT_EQ(members[i]->out->download(members[i]->result).bytes,
                    alone[i].bytes)
              << describe(problems[i]) << " member " << i << ", " << stash
              << " steps stashed, grid for " << smCount
              << " multiprocessors: the result differs";
      }
  }
}

TEST_F(StreamGemvTest, SettledWeightsStillWaitForTheInput) {
  // A copy kernel (launched with the same overlap) writes x just before a
  // settled product on one stream, with new values each round.
  for (DType dt : {DType::BF16, DType::F16}) {
    Product product(dt, 1, 2048, 2048, Activation::None, true, false, rng);
    product.p.settledB = true;
    const HostTensor first = product.host[0];
    Device source(first);
    cudaStream_t stream = nullptr;
    cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate");
    const Op copy = ops::Copy{};
    CudaCall call;
    call.op = &copy;
    call.operands = {ConstTensor(source.data, dt, first.shape)};
    call.results = {Tensor{product.dev[0]->data, dt, first.shape}};
    call.stream = stream;
    call.context = testContext();
    for (int round = 0; round < 4; ++round) {
      product.host[0] = randomTensor(dt, first.shape, rng, -1, 1);
      source.upload(product.host[0]);
      cudaOk(cudaMemset(product.dev[0]->data, 0, source.bytes), "cudaMemset");
      findKernel(copy).run(call);
      // (Odd rounds stash two steps in shared memory before the wait too,
      // on a grid for one multiprocessor so that every block has them:
      // four blocks of 128 items.)
      streamGemv(product.p, round % 2 ? 1 : 132, stream, "linear",
                 round % 2 ? 2 : 0);
      cudaOk(cudaStreamSynchronize(stream), "copy and product");
      expectClose(product.out->download(product.result), product.cpu(),
                  sumTolerance(dt),
                  describe(product.p) + " round " + std::to_string(round));
    }
    cudaStreamDestroy(stream);
  }
}

TEST_F(StreamGemvTest, CapturedGraphReplaysNewOperands) {
  Product product(DType::BF16, 2, 3000, 700, Activation::GeluTanh, true, true,
                  rng);
  cudaStream_t stream = nullptr;
  cudaOk(cudaStreamCreate(&stream), "cudaStreamCreate");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaOk(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
         "cudaStreamBeginCapture");
  streamGemv(product.p, 132, stream, "linear");
  cudaOk(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaOk(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < product.host.size(); ++i) {
      HostTensor &t = product.host[i];
      t = randomTensor(t.dtype, t.shape, rng, -1, 1);
      product.dev[i]->upload(t);
    }
    cudaOk(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    cudaOk(cudaStreamSynchronize(stream), "graph execution");
    expectClose(product.out->download(product.result), product.cpu(),
                sumTolerance(DType::BF16),
                describe(product.p) + " replay " + std::to_string(round));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_F(StreamGemvTest, NormPrologueMatchesTheCpuLinear) {
  // The norm prologue (layer_norm with and without weight and bias,
  // rms_norm with and without weight): x's rows normalised by each block
  // before its products, as the CPU's linear does; the same bits settled or
  // not, on grids for 1 and 132 multiprocessors, and with steps stashed.
  struct Case {
    int64_t M, K, N;
  };
  const std::vector<Case> cases = {{1, 2048, 2048}, {1, 2048, 8192},
                                   {1, 8192, 300},  {3, 768, 257},
                                   {8, 1024, 40},   {2, 3000, 70}};
  int index = 0;
  for (DType dt : {DType::BF16, DType::F16})
    for (const Case &c : cases)
      for (NormKind norm : {NormKind::LayerNorm, NormKind::RmsNorm}) {
        // (index / 2: the case, the same for both norms)
        const bool weight = index % 3 != 2;
        const bool bias = norm == NormKind::LayerNorm && index / 2 % 2 == 0;
        const bool residual = index / 2 % 3 != 0;
        const Activation act = static_cast<Activation>(index % kActivations);
        ++index;
        Product product(dt, c.M, c.K, c.N, act, true, residual, rng);
        product.host[0] = randomTensor(dt, {c.M, c.K}, rng, -2, 3);
        product.dev[0]->upload(product.host[0]);
        const HostTensor normWeight =
            weight ? randomTensor(dt, {c.K}, rng, 0.5, 1.5)
                   : HostTensor::absent();
        const HostTensor normBias =
            bias ? randomTensor(dt, {c.K}, rng, -1, 1) : HostTensor::absent();
        Device dw(weight ? normWeight : HostTensor(dt, {1}));
        Device db(bias ? normBias : HostTensor(dt, {1}));
        GemmProblem &p = product.p;
        p.norm = norm;
        p.normWeight = weight ? dw.data : nullptr;
        p.normBias = bias ? db.data : nullptr;
        p.normEpsilon = 1e-5;
        const std::string what =
            describe(p) + " " +
            (norm == NormKind::LayerNorm ? "layer_norm" : "rms_norm") +
            (weight ? " weight" : "") + (bias ? " bias" : "");
        SCOPED_TRACE(what);
        ASSERT_TRUE(streamGemvSupports(p));
        std::vector<HostTensor> operands = product.host;
        operands.push_back(normWeight);
        operands.push_back(normBias);
        const HostTensor cpu = runCpu(ops::Linear{true, act, norm, 1e-5},
                                      operands, {product.result})[0];
        const HostTensor gpu = product.run(132, false);
        expectClose(gpu, cpu, sumTolerance(dt), what);
        EXPECT_EQ(product.run(132, true).bytes, gpu.bytes)
            << what << ": with the weight settled the result differs";
        EXPECT_EQ(product.run(1, false).bytes, gpu.bytes)
            << what << ": on another grid the result differs";
        // One x row: steps stashed beside the normalised rows (33-50 KB of
        // shared memory a block, so the 2-step stash opts in past 48 KB),
        // the same bits, settled or not.
        for (int stash : {1, 2}) {
          EXPECT_EQ(streamGemvStashed(p, stash), c.M == 1 ? stash : 0) << what;
          if (c.M != 1)
            continue;
          for (int grid : {1, 132})
            for (bool settled : {true, false})
              EXPECT_EQ(product.run(grid, settled, stash).bytes, gpu.bytes)
                  << what << ": with " << stash << " steps stashed, grid "
                  << grid << (settled ? ", settled" : "");
        }
      }
}

TEST_F(StreamGemvTest, DeclinesWhatItCannotTake) {
  GemmProblem p;
  p.dtype = DType::BF16;
  p.transB = true;
  p.M = 1;
  p.N = 64;
  p.K = 64;
  p.lda = p.ldb = 64;
  p.ldc = 64;
  alignas(16) static uint16_t data[16];
  p.A = p.B = data;
  EXPECT_TRUE(streamGemvSupports(p));
  GemmProblem q = p;
  q.M = 9; // more x rows than the kernel keeps sums for
  EXPECT_FALSE(streamGemvSupports(q));
  q = p;
  q.transB = false; // a [K, N] weight
  EXPECT_FALSE(streamGemvSupports(q));
  q = p;
  q.K = q.lda = q.ldb = 60; // not whole 16-byte pieces
  EXPECT_FALSE(streamGemvSupports(q));
  q = p;
  q.dtype = DType::F32;
  EXPECT_FALSE(streamGemvSupports(q));
  q = p;
  q.B = reinterpret_cast<const char *>(data) + 2; // unaligned
  EXPECT_FALSE(streamGemvSupports(q));
  q = p;
  q.norm = NormKind::LayerNorm;
  EXPECT_TRUE(streamGemvSupports(q));
  q.normWeight = reinterpret_cast<const char *>(data) + 2; // unaligned
  EXPECT_FALSE(streamGemvSupports(q));
  q.normWeight = data;
  q.norm = NormKind::RmsNorm;
  q.normBias = data; // rms_norm has no bias
  EXPECT_FALSE(streamGemvSupports(q));
  q.norm = NormKind::LayerNorm;
  q.K = q.lda = q.ldb = 8200; // more than a block normalises at once
  EXPECT_FALSE(streamGemvSupports(q));
  q.M = 2;
  q.K = q.lda = q.ldb = 8192;
  EXPECT_FALSE(streamGemvSupports(q));
  q.M = 9;
  EXPECT_THROW(streamGemv(q, 132, nullptr, "linear"), Error);
}

} // namespace
} // namespace hybrid::cuda::test
