// Test support for the CUDA kernels (see CudaTestSupport.h).
#include "CudaTestSupport.h"

#include "cuda/Context.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace hybrid::cuda::test {

double HostTensor::at(int64_t k) const {
  const uint8_t *p = bytes.data();
  switch (dtype) {
  case DType::F32: {
    float f;
    std::memcpy(&f, p + 4 * k, 4);
    return f;
  }
  case DType::BF16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * k, 2);
    return bf16ToFloat(h);
  }
  case DType::F16: {
    uint16_t h;
    std::memcpy(&h, p + 2 * k, 2);
    return f16ToFloat(h);
  }
  case DType::I64: {
    int64_t i;
    std::memcpy(&i, p + 8 * k, 8);
    return static_cast<double>(i);
  }
  case DType::I32: {
    int32_t i;
    std::memcpy(&i, p + 4 * k, 4);
    return i;
  }
  case DType::Bool:
    return p[k] ? 1 : 0;
  }
  return 0;
}

void HostTensor::set(int64_t k, double v) {
  uint8_t *p = bytes.data();
  switch (dtype) {
  case DType::F32: {
    const float f = static_cast<float>(v);
    std::memcpy(p + 4 * k, &f, 4);
    break;
  }
  case DType::BF16: {
    const uint16_t h = floatToBf16(static_cast<float>(v));
    std::memcpy(p + 2 * k, &h, 2);
    break;
  }
  case DType::F16: {
    const uint16_t h = floatToF16(static_cast<float>(v));
    std::memcpy(p + 2 * k, &h, 2);
    break;
  }
  case DType::I64: {
    const int64_t i = static_cast<int64_t>(v);
    std::memcpy(p + 8 * k, &i, 8);
    break;
  }
  case DType::I32: {
    const int32_t i = static_cast<int32_t>(v);
    std::memcpy(p + 4 * k, &i, 4);
    break;
  }
  case DType::Bool:
    p[k] = v != 0;
    break;
  }
}

HostTensor randomTensor(DType dt, Shape shape, std::mt19937 &rng, double lo,
                        double hi) {
  HostTensor t(dt, std::move(shape));
  if (dt == DType::Bool) {
    std::bernoulli_distribution coin(0.5);
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, coin(rng));
  } else if (isIntegerDType(dt)) {
    std::uniform_int_distribution<int64_t> pick(static_cast<int64_t>(lo),
                                                static_cast<int64_t>(hi));
    for (int64_t k = 0; k < t.numel(); ++k)
      t.set(k, static_cast<double>(pick(rng)));
  } else {
    std::uniform_real_distribution<double> pick(lo, hi);
    for (int64_t k = 0; k < t.numel(); ++k) {
      double v = pick(rng);
      if (std::fabs(v) < 1e-3) // never zeros: they hide missing writes
        v = v < 0 ? -1e-3 : 1e-3;
      t.set(k, v);
    }
  }
  return t;
}

HostTensor tensorOf(DType dt, Shape shape, const std::vector<double> &values) {
  HostTensor t(dt, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  for (size_t k = 0; k < values.size() && static_cast<int64_t>(k) < t.numel();
       ++k)
    t.set(static_cast<int64_t>(k), values[k]);
  return t;
}

Tolerance defaultTolerance(DType dt) {
  switch (dt) {
  case DType::F32:
    return {1e-5, 1e-6, false};
  case DType::BF16:
    return {1e-2, 1e-2, false};
  case DType::F16:
    return {2e-3, 2e-3, false};
  default:
    return {0, 0, false};
  }
}

Tolerance sumTolerance(DType dt) {
  switch (dt) {
  case DType::F32:
    return {1e-4, 1e-4, true};
  case DType::BF16:
    return {1e-2, 1e-2, true};
  default:
    return {3e-3, 3e-3, true};
  }
}

namespace {

/// 64-byte aligned host scratch for the CPU oracle.
struct HostScratch {
  std::vector<uint64_t> words;
  void *data = nullptr;
  explicit HostScratch(size_t bytes) : words(bytes / 8 + 16) {
    auto p = reinterpret_cast<uintptr_t>(words.data());
    data = reinterpret_cast<void *>((p + 63) / 64 * 64);
  }
};

void check(cudaError_t e, const char *what) {
  ASSERT_EQ(e, cudaSuccess) << what << ": " << cudaGetErrorString(e);
}

/// Device memory freed when it goes out of scope.
struct DeviceBuffer {
  void *data = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    check(cudaMalloc(&data, std::max<size_t>(bytes, 1)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(data); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA5;

} // namespace

std::vector<HostTensor> runCpu(const Op &op,
                               const std::vector<HostTensor> &operands,
                               const std::vector<HostTensor> &results,
                               bool inPlace, const std::vector<int> &aliases) {
  std::vector<HostTensor> out;
  for (size_t i = 0; i < results.size(); ++i)
    out.push_back(i < aliases.size() && aliases[i] >= 0
                      ? operands.at(aliases[i])
                  : inPlace ? results[i]
                            : HostTensor(results[i].dtype, results[i].shape));
  cpu::KernelCall call;
  call.op = &op;
  for (const HostTensor &t : operands)
    call.operands.push_back(
        t.present ? cpu::ConstTensor(t.bytes.data(), t.dtype, t.shape)
                  : cpu::ConstTensor::absent());
  for (size_t i = 0; i < aliases.size(); ++i)
    if (aliases[i] >= 0)
      call.operands.at(aliases[i]).data = out[i].bytes.data();
  for (HostTensor &r : out) {
    cpu::Tensor t;
    t.data = r.bytes.data();
    t.dtype = r.dtype;
    t.shape = r.shape;
    call.results.push_back(t);
  }
  const cpu::KernelEntry entry = cpu::findKernel(op);
  EXPECT_NE(entry.run, nullptr);
  if (!entry.run)
    return out;
  HostScratch scratch(cpu::scratchBytes(entry, call, cpu::numThreads()));
  call.scratch = scratch.data;
  call.scratchBytes = scratch.words.size() * 8 - 64;
  entry.run(call);
  return out;
}

Context *testContext() {
  static std::unique_ptr<Context, void (*)(Context *)> context(createContext(),
                                                               destroyContext);
  return context.get();
}

std::vector<HostTensor>
runCuda(const Op &op, const std::vector<HostTensor> &operands,
        const std::vector<HostTensor> &results, bool inPlace, bool withContext,
        const std::vector<int> &aliases, uint32_t settledOperands) {
  std::vector<HostTensor> out;
  for (const HostTensor &r : results)
    out.push_back(inPlace ? r : HostTensor(r.dtype, r.shape));
  CudaCall call;
  call.op = &op;
  call.context = withContext ? testContext() : nullptr;
  call.settledOperands = settledOperands;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<void *> operandData; // (what aliasing results write)
  for (const HostTensor &t : operands) {
    operandData.push_back(nullptr);
    if (!t.present) {
      call.operands.push_back(ConstTensor::absent());
      continue;
    }
    buffers.push_back(std::make_unique<DeviceBuffer>(t.bytes.size()));
    operandData.back() = buffers.back()->data;
    if (!t.bytes.empty())
      check(cudaMemcpy(buffers.back()->data, t.bytes.data(), t.bytes.size(),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy to device");
    call.operands.emplace_back(buffers.back()->data, t.dtype, t.shape);
  }
  std::vector<void *> resultData;
  for (size_t i = 0; i < out.size(); ++i) {
    const HostTensor &r = out[i];
    if (i < aliases.size() && aliases[i] >= 0) {
      const ConstTensor &shared = call.operands.at(aliases[i]);
      EXPECT_EQ(shared.dtype, r.dtype) << "result " << i << " aliases operand "
                                       << aliases[i] << " of another dtype";
      Tensor t;
      t.data = operandData[aliases[i]];
      t.dtype = r.dtype;
      t.shape = r.shape;
      call.results.push_back(t);
      resultData.push_back(t.data);
      continue;
    }
    buffers.push_back(std::make_unique<DeviceBuffer>(r.bytes.size()));
    if (inPlace && !r.bytes.empty())
      check(cudaMemcpy(buffers.back()->data, r.bytes.data(), r.bytes.size(),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy to device");
    else // poison: every element a kernel forgets shows up as a mismatch
      check(cudaMemset(buffers.back()->data, 0xFF, r.bytes.size()),
            "cudaMemset");
    Tensor t;
    t.data = buffers.back()->data;
    t.dtype = r.dtype;
    t.shape = r.shape;
    call.results.push_back(t);
    resultData.push_back(t.data);
  }
  const KernelEntry entry = findKernel(op);
  EXPECT_NE(entry.run, nullptr) << opName(op) << " has no CUDA kernel";
  if (!entry.run)
    return out;
  // Scratch exactly as declared, then a guard region. The declaration must
  // not depend on the data pointers.
  CudaCall shapesOnly = call;
  for (ConstTensor &t : shapesOnly.operands)
    t.data = nullptr;
  for (Tensor &t : shapesOnly.results)
    t.data = nullptr;
  const size_t declared = scratchBytes(entry, shapesOnly);
  EXPECT_EQ(declared, scratchBytes(entry, call))
      << "scratch declaration depends on data pointers";
  DeviceBuffer scratch(declared + kGuardBytes);
  check(cudaMemset(scratch.data, 0xFF, declared), "cudaMemset");
  check(cudaMemset(static_cast<char *>(scratch.data) + declared, kGuardByte,
                   kGuardBytes),
        "cudaMemset");
  call.scratch = declared ? scratch.data : nullptr;
  call.scratchBytes = declared;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  call.stream = reinterpret_cast<Stream>(stream);
  entry.run(call);
  check(cudaStreamSynchronize(stream), "kernel execution");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  std::vector<uint8_t> guard(kGuardBytes);
  check(cudaMemcpy(guard.data(), static_cast<char *>(scratch.data) + declared,
                   kGuardBytes, cudaMemcpyDeviceToHost),
        "cudaMemcpy guard");
  EXPECT_TRUE(std::all_of(guard.begin(), guard.end(),
                          [](uint8_t b) { return b == kGuardByte; }))
      << opName(op) << " wrote past its " << declared << " bytes of scratch";
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].bytes.empty())
      check(cudaMemcpy(out[i].bytes.data(), resultData[i], out[i].bytes.size(),
                       cudaMemcpyDeviceToHost),
            "cudaMemcpy to host");
  return out;
}

struct CapturedCall::State {
  Op op;
  std::vector<std::unique_ptr<DeviceBuffer>> operands, results;
  std::vector<HostTensor> out; ///< the results' dtypes and shapes
  std::unique_ptr<DeviceBuffer> scratch;
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
};

CapturedCall::CapturedCall(const Op &op,
                           const std::vector<HostTensor> &operands,
                           const std::vector<HostTensor> &results,
                           bool withCounters)
    : state_(new State) {
  State &s = *state_;
  s.op = op;
  CudaCall call;
  call.op = &s.op;
  call.context = testContext();
  for (size_t i = 0; i < operands.size(); ++i) {
    const HostTensor &t = operands[i];
    if (!t.present) {
      s.operands.push_back(nullptr);
      call.operands.push_back(ConstTensor::absent());
      continue;
    }
    s.operands.push_back(std::make_unique<DeviceBuffer>(t.bytes.size()));
    setOperand(i, t);
    call.operands.emplace_back(s.operands.back()->data, t.dtype, t.shape);
  }
  for (const HostTensor &r : results) {
    s.results.push_back(std::make_unique<DeviceBuffer>(r.bytes.size()));
    if (!r.bytes.empty())
      check(cudaMemcpy(s.results.back()->data, r.bytes.data(), r.bytes.size(),
                       cudaMemcpyHostToDevice),
            "cudaMemcpy to device");
    s.out.emplace_back(r.dtype, r.shape);
    Tensor t;
    t.data = s.results.back()->data;
    t.dtype = r.dtype;
    t.shape = r.shape;
    call.results.push_back(t);
  }
  const KernelEntry entry = findKernel(op);
  EXPECT_NE(entry.run, nullptr) << opName(op) << " has no CUDA kernel";
  if (!entry.run)
    return;
  call.scratchBytes = scratchBytes(entry, call);
  s.scratch = std::make_unique<DeviceBuffer>(call.scratchBytes);
  call.scratch = call.scratchBytes ? s.scratch->data : nullptr;
  check(cudaStreamCreate(&s.stream), "cudaStreamCreate");
  call.stream = reinterpret_cast<Stream>(s.stream);
  if (withCounters) {
    tileCounters(*call.context, call.stream, "test");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
  }
  check(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeGlobal),
        "cudaStreamBeginCapture");
  std::string error;
  try {
    entry.run(call);
  } catch (const Error &e) {
    error = e.what();
  }
  const cudaError_t ended = cudaStreamEndCapture(s.stream, &s.graph);
  EXPECT_EQ(error, "") << opName(op) << " failed while captured";
  check(ended, "cudaStreamEndCapture (did the kernel sync or allocate?)");
  if (ended == cudaSuccess && error.empty())
    check(cudaGraphInstantiate(&s.exec, s.graph, 0), "cudaGraphInstantiate");
}

CapturedCall::~CapturedCall() {
  if (state_->exec)
    cudaGraphExecDestroy(state_->exec);
  if (state_->graph)
    cudaGraphDestroy(state_->graph);
  if (state_->stream)
    cudaStreamDestroy(state_->stream);
  delete state_;
}

void CapturedCall::setOperand(size_t i, const HostTensor &t) {
  ASSERT_LT(i, state_->operands.size());
  ASSERT_NE(state_->operands[i], nullptr) << "operand " << i << " is absent";
  if (!t.bytes.empty())
    check(cudaMemcpy(state_->operands[i]->data, t.bytes.data(), t.bytes.size(),
                     cudaMemcpyHostToDevice),
          "cudaMemcpy to device");
}

std::vector<HostTensor> CapturedCall::replay() {
  State &s = *state_;
  std::vector<HostTensor> out = s.out;
  EXPECT_NE(s.exec, nullptr) << "nothing was captured";
  if (!s.exec)
    return out;
  check(cudaGraphLaunch(s.exec, s.stream), "cudaGraphLaunch");
  check(cudaStreamSynchronize(s.stream), "graph execution");
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].bytes.empty())
      check(cudaMemcpy(out[i].bytes.data(), s.results[i]->data,
                       out[i].bytes.size(), cudaMemcpyDeviceToHost),
            "cudaMemcpy to host");
  return out;
}

double CapturedCall::replayMicroseconds(int times) {
  State &s = *state_;
  EXPECT_NE(s.exec, nullptr) << "nothing was captured";
  if (!s.exec || times <= 0)
    return 0;
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaGraphLaunch(s.exec, s.stream), "cudaGraphLaunch"); // warm-up
  check(cudaEventRecord(start, s.stream), "cudaEventRecord");
  for (int i = 0; i < times; ++i)
    check(cudaGraphLaunch(s.exec, s.stream), "cudaGraphLaunch");
  check(cudaEventRecord(stop, s.stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "graph execution");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return 1e3 * ms / times;
}

void expectClose(const HostTensor &gpu, const HostTensor &cpu, Tolerance tol,
                 const std::string &what) {
  ASSERT_EQ(gpu.dtype, cpu.dtype) << what;
  ASSERT_EQ(gpu.shape, cpu.shape) << what;
  const int64_t n = cpu.numel();
  double scale = 1;
  if (tol.scaleByMax) {
    scale = 0;
    for (int64_t k = 0; k < n; ++k)
      if (std::isfinite(cpu.at(k)))
        scale = std::max(scale, std::fabs(cpu.at(k)));
  }
  int reported = 0, bad = 0;
  for (int64_t k = 0; k < n; ++k) {
    const double a = gpu.at(k), b = cpu.at(k);
    bool ok;
    if (std::isnan(b))
      ok = std::isnan(a);
    else if (std::isinf(b))
      ok = a == b;
    else
      ok = std::fabs(a - b) <= tol.rtol * std::fabs(b) + tol.atol * scale;
    if (!ok) {
      ++bad;
      if (reported++ < 8)
        ADD_FAILURE() << what << ": element " << k << " of "
                      << shapeToString(cpu.shape) << " ("
                      << dtypeName(cpu.dtype) << "): gpu " << a << ", cpu "
                      << b;
    }
  }
  if (bad > 8)
    ADD_FAILURE() << what << ": " << bad << " of " << n << " elements differ";
}

void expectMatchesCpu(const Op &op, const std::vector<HostTensor> &operands,
                      const std::vector<HostTensor> &results,
                      const std::string &what, const Tolerance *tol,
                      uint32_t settledOperands) {
  SCOPED_TRACE(what);
  const std::vector<HostTensor> cpu = runCpu(op, operands, results);
  const std::vector<HostTensor> gpu =
      runCuda(op, operands, results, false, true, {}, settledOperands);
  ASSERT_EQ(cpu.size(), gpu.size());
  for (size_t i = 0; i < cpu.size(); ++i)
    expectClose(gpu[i], cpu[i], tol ? *tol : defaultTolerance(cpu[i].dtype),
                what + " (" + opName(op) + ")");
}

} // namespace hybrid::cuda::test
