// The CUDA backend: device selection, streams and events, host copies
// through pinned staging, and commands bound to the kernels of
// kernels/cuda (collectives through a communicator, one rank by default).
#include "hybrid/CudaDevice.h"

#include "CudaCheck.h"
#include "DeviceAllocator.h"
#include "HostStaging.h"
#include "KernelProfile.h"
#include "KernelTimeline.h"
#include "StepTuner.h"

#include "cuda/Context.h"
#include "cuda/CudaKernels.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace hybrid {

using cudabackend::checkCuda;
using cudabackend::CurrentDevice;
using cudabackend::DeviceAllocator;
using cudabackend::HostStaging;
using cudabackend::KernelProfile;
using cudabackend::KernelTimeline;
using cudabackend::onDevice;

namespace {

/// A non-blocking stream of one device (it never waits for the legacy NULL
/// stream, which other libraries may use).
class CudaStream : public Stream {
public:
  CudaStream(int ordinal, const std::string &device) : ordinal_(ordinal) {
    CurrentDevice guard(ordinal, device);
    checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
              device, "cudaStreamCreateWithFlags");
  }
  ~CudaStream() override {
    onDevice(ordinal_, [&] { cudaStreamDestroy(stream_); });
  }
  cudaStream_t get() const { return stream_; }
  int ordinal() const { return ordinal_; }

private:
  int ordinal_;
  cudaStream_t stream_ = nullptr;
};

/// An event without timing (cheaper to record and wait on).
class CudaEvent : public Event {
public:
  CudaEvent(int ordinal, const std::string &device) : ordinal_(ordinal) {
    CurrentDevice guard(ordinal, device);
    checkCuda(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), device,
              "cudaEventCreateWithFlags");
  }
  ~CudaEvent() override {
    onDevice(ordinal_, [&] { cudaEventDestroy(event_); });
  }
  cudaEvent_t get() const { return event_; }
  int ordinal() const { return ordinal_; }

private:
  int ordinal_;
  cudaEvent_t event_ = nullptr;
};

CudaStream &cudaStreamOf(Stream &stream, int ordinal,
                         const std::string &device) {
  auto *s = dynamic_cast<CudaStream *>(&stream);
  if (!s)
    throw Error(device + ": the stream is not a CUDA stream");
  if (s->ordinal() != ordinal)
    throw Error(device +
                ": the stream belongs to cuda:" + std::to_string(s->ordinal()));
  return *s;
}

CudaEvent &cudaEventOf(Event &event, int ordinal, const std::string &device) {
  auto *e = dynamic_cast<CudaEvent *>(&event);
  if (!e)
    throw Error(device + ": the event is not a CUDA event");
  if (e->ordinal() != ordinal)
    throw Error(device +
                ": the event belongs to cuda:" + std::to_string(e->ordinal()));
  return *e;
}

size_t viewBytes(const BufferView &v) {
  return static_cast<size_t>(numElements(v.shape)) * dtypeSize(v.dtype);
}

/// A collective with one rank: the result is the operand.
class SingleRankCommunicator : public CudaCommunicator {
public:
  explicit SingleRankCommunicator(std::string device)
      : device_(std::move(device)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void run(CollectiveKind, const void *in, size_t inBytes, void *out,
           size_t outBytes, DType, CUstream_st *stream) override {
    if (inBytes != outBytes)
      throw Error("with one rank the result must be the operand: got " +
                  std::to_string(inBytes) + " bytes -> " +
                  std::to_string(outBytes));
    if (in == out || !inBytes)
      return;
    checkCuda(
        cudaMemcpyAsync(out, in, inBytes, cudaMemcpyDeviceToDevice, stream),
        device_, "cudaMemcpyAsync (collective, one rank)");
  }

private:
  std::string device_;
};

} // namespace

struct CudaDevice::Impl {
  Impl(int ordinal, std::string deviceName)
      : ordinal(ordinal), name(std::move(deviceName)),
        memory(cudabackend::makeDeviceAllocator(ordinal, name)),
        staging(ordinal, name),
        singleRank(std::make_shared<SingleRankCommunicator>(name)) {}

  int ordinal;
  std::string name;
  std::unique_ptr<DeviceAllocator> memory;
  HostStaging staging;
  std::unique_ptr<CudaStream> defaultStream;
  cuda::Context *context = nullptr;
  /// The kernels share the context (cuBLASLt handle, plan cache); launches
  /// and scratch queries from several threads take turns.
  std::mutex launch;
  std::shared_ptr<CudaCommunicator> singleRank;
  std::mutex communicatorsMutex; // guards communicators
  std::map<std::string, std::shared_ptr<CudaCommunicator>> communicators;
  /// Set when HYBRID_CUDA_PROFILE asks for per-kernel times.
  std::unique_ptr<KernelProfile> profile;
  /// Set when HYBRID_CUDA_TIMELINE names a file for kernel start times.
  std::unique_ptr<KernelTimeline> timeline;
  /// MemoryStats::bytesCopied: bytes of the copies and fills enqueued.
  std::atomic<uint64_t> bytesCopied{0};
  /// stepTuningTrials.
  std::atomic<size_t> stepTuningTrials{0};
  /// Set by HYBRID_CUDA_ALLOCATOR_REPORT=1: the allocator's peaks printed
  /// when the device is destroyed (hybrid-run prints the callers' peak
  /// only; bench/allocator_ab.sh compares what each allocator held).
  bool reportMemory = false;

  cudaStream_t native(Stream &s) {
    return cudaStreamOf(s, ordinal, name).get();
  }
};

namespace {

/// The ops named in HYBRID_CUDA_OMIT (comma-separated, e.g.
/// "attention,layer_norm"), whose kernels are not launched: a measurement
/// aid, timing a step without them (what they cost where they run, launch
/// gaps included). Results are then wrong. Read once.
const std::set<std::string> &omittedOps() {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    if (const char *v = std::getenv("HYBRID_CUDA_OMIT")) {
      std::stringstream list(v);
      for (std::string name; std::getline(list, name, ',');)
        if (!name.empty())
          out.insert(name);
      if (!out.empty())
        std::fprintf(stderr,
                     "hybrid: HYBRID_CUDA_OMIT: not launching %s "
                     "(timing only: results are wrong)\n",
                     v);
    }
    return out;
  }();
  return names;
}

/// A command bound to a CUDA kernel. The CudaCall is built once; each run
/// refreshes addresses (and shapes when they changed). Operands are read
/// through BufferView::data and results written through
/// BufferView::writable, so read-only memory is never written.
class CudaKernelCommand : public PreparedCommand {
public:
  CudaKernelCommand(cuda::KernelEntry entry, const CommandDesc &command,
                    uint32_t settledOperands, cuda::Context *context,
                    int ordinal, std::string device, std::mutex &launch,
                    KernelProfile *profile)
      : entry_(entry), op_(command.op), operands_(command.operands),
        results_(command.results), ordinal_(ordinal),
        device_(std::move(device)), launch_(launch), profile_(profile) {
    call_.op = &op_;
    call_.context = context;
    call_.settledOperands = settledOperands;
    call_.operands.resize(operands_.size());
    call_.results.resize(results_.size());
    omitted_ = omittedOps().count(opName(op_)) != 0;
  }

  size_t scratchBytes(const std::vector<BufferView> &buffers) override {
    bindShapes(buffers);
    // Scratch functions may consult the shared context (GEMM plans).
    std::lock_guard<std::mutex> lock(launch_);
    CurrentDevice guard(ordinal_, device_);
    scratch_ = cuda::scratchBytes(entry_, call_);
    return scratch_;
  }

  void run(const std::vector<BufferView> &buffers, bool shapesChanged,
           Stream &stream, void *scratch) override {
    if (shapesChanged)
      bindShapes(buffers);
    for (size_t i = 0; i < operands_.size(); ++i)
      if (operands_[i] >= 0)
        call_.operands[i].data = buffers[operands_[i]].data;
    for (size_t i = 0; i < results_.size(); ++i) {
      void *w = buffers[results_[i]].writable;
      if (!w) // validation rules this out; never write through `data`
        throw Error("result " + std::to_string(i) + " is read-only memory");
      call_.results[i].data = w;
    }
    call_.scratch = scratch;
    call_.scratchBytes = scratch ? scratch_ : 0;
    call_.stream = cudaStreamOf(stream, ordinal_, device_).get();
    if (omitted_)
      return;
    std::lock_guard<std::mutex> lock(launch_);
    CurrentDevice guard(ordinal_, device_);
    if (profile_)
      profile_->measure(call_.stream, profileKey_, [&] { entry_.run(call_); });
    else
      entry_.run(call_);
  }

private:
  void bindShapes(const std::vector<BufferView> &buffers) {
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (operands_[i] < 0) {
        call_.operands[i] = cuda::ConstTensor::absent();
        continue;
      }
      const BufferView &b = buffers[operands_[i]];
      cuda::ConstTensor &t = call_.operands[i];
      t.present = true;
      t.dtype = b.dtype;
      t.shape = b.shape;
    }
    for (size_t i = 0; i < results_.size(); ++i) {
      const BufferView &b = buffers[results_[i]];
      call_.results[i].dtype = b.dtype;
      call_.results[i].shape = b.shape;
    }
    if (profile_) {
      // "linear bf16 [1,2048] [2048,2048] -> [1,2048]"
      profileKey_ = opName(op_);
      if (!call_.results.empty())
        profileKey_ += std::string(" ") + dtypeName(call_.results[0].dtype);
      for (const cuda::ConstTensor &t : call_.operands)
        if (t.present)
          profileKey_ += " " + shapeToString(t.shape);
      profileKey_ += " ->";
      for (const cuda::Tensor &t : call_.results)
        profileKey_ += " " + shapeToString(t.shape);
    }
  }

  cuda::KernelEntry entry_;
  Op op_;
  std::vector<int32_t> operands_, results_;
  int ordinal_;
  std::string device_;
  std::mutex &launch_;
  KernelProfile *profile_;
  std::string profileKey_;
  cuda::CudaCall call_;
  size_t scratch_ = 0;
  bool omitted_ = false; ///< HYBRID_CUDA_OMIT names the op
};

/// Whether `op` runs as a kernel launch (not an event or a collective).
bool launchesKernel(const Op &op) {
  return !isEvent(op) && !std::holds_alternative<ops::Collective>(op);
}

/// A collective, run by the communicator the executable names (one rank
/// unless the device was given another).
class CudaCollectiveCommand : public PreparedCommand {
public:
  CudaCollectiveCommand(ops::Collective op, int32_t operand, int32_t result,
                        std::shared_ptr<CudaCommunicator> comm, int ordinal,
                        std::string device)
      : op_(op), operand_(operand), result_(result), comm_(std::move(comm)),
        ordinal_(ordinal), device_(std::move(device)) {}

  void run(const std::vector<BufferView> &buffers, bool, Stream &stream,
           void *) override {
    const BufferView &in = buffers[operand_], &out = buffers[result_];
    size_t inBytes = viewBytes(in), outBytes = viewBytes(out);
    if (in.dtype != out.dtype || (comm_->size() == 1 && inBytes != outBytes))
      throw Error(std::string("with one rank the result must be the operand: "
                              "got ") +
                  dtypeName(in.dtype) + " " + shapeToString(in.shape) + " -> " +
                  dtypeName(out.dtype) + " " + shapeToString(out.shape));
    if (!out.writable)
      throw Error("the result is read-only memory");
    cudaStream_t s = cudaStreamOf(stream, ordinal_, device_).get();
    CurrentDevice guard(ordinal_, device_);
    comm_->run(op_.kind, in.data, inBytes, out.writable, outBytes, in.dtype, s);
  }

private:
  ops::Collective op_;
  int32_t operand_, result_;
  std::shared_ptr<CudaCommunicator> comm_;
  int ordinal_;
  std::string device_;
};

/// Events are the executable's own (Device::createEvent): it records and
/// waits on them itself, so the command does nothing (as on the CPU).
class CudaNoOpCommand : public PreparedCommand {
public:
  void run(const std::vector<BufferView> &, bool, Stream &, void *) override {}
};

} // namespace

int CudaDevice::deviceCount(std::string *why) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    if (why)
      *why = cudaGetErrorString(status);
    return 0;
  }
  if (count == 0 && why)
    *why = "the driver reports no CUDA device";
  return count;
}

CudaDevice::CudaDevice(int ordinal) : ordinal_(ordinal) {
  std::string name = "cuda:" + std::to_string(ordinal);
  std::string why;
  int count = deviceCount(&why);
  if (count == 0)
    throw Error(name + ": no CUDA device (" + why + ")");
  if (ordinal < 0 || ordinal >= count)
    throw Error(name + ": no such device (this process sees " +
                std::to_string(count) + " CUDA device" +
                (count == 1 ? "" : "s") + ")");
  impl_ = std::make_unique<Impl>(ordinal, name);
  CurrentDevice guard(ordinal, name);
  impl_->defaultStream = std::make_unique<CudaStream>(ordinal, name);
  impl_->context = cuda::createContext();
  if (KernelProfile::requested())
    impl_->profile = std::make_unique<KernelProfile>(ordinal, name);
  if (std::string file = KernelTimeline::requestedFile(); !file.empty())
    impl_->timeline = std::make_unique<KernelTimeline>(name, file);
  const char *report = std::getenv("HYBRID_CUDA_ALLOCATOR_REPORT");
  impl_->reportMemory = report && std::string(report) == "1";
}

CudaDevice::~CudaDevice() {
  if (!impl_)
    return;
  onDevice(ordinal_, [&] {
    // Work still enqueued may use the context, the staging or the memory.
    cudaDeviceSynchronize();
    impl_->timeline.reset(); // writes its file
    cuda::destroyContext(impl_->context);
  });
  if (impl_->profile) {
    const std::string table = impl_->profile->report();
    std::fputs(table.c_str(), stderr);
  }
  if (impl_->reportMemory) {
    try {
      // One line, parsed by bench/allocator_ab.sh.
      const MemoryStats m = impl_->memory->stats();
      const CudaCacheStats c = impl_->memory->cacheStats();
      const double gib = 1024.0 * 1024.0 * 1024.0;
      std::fprintf(stderr,
                   "hybrid: %s allocator %s: peak %.3f GiB held from CUDA, "
                   "peak %.3f GiB in use; %llu allocations, %llu from CUDA\n",
                   impl_->name.c_str(), impl_->memory->kind(),
                   static_cast<double>(c.peakReservedBytes) / gib,
                   static_cast<double>(m.peakBytes) / gib,
                   static_cast<unsigned long long>(m.allocations),
                   static_cast<unsigned long long>(c.driverAllocations));
    } catch (const Error &) {
      // A failed query of the pool: no report, and no throw from here.
    }
  }
  impl_->defaultStream.reset();
}

std::string CudaDevice::name() const { return impl_->name; }

void *CudaDevice::allocate(size_t bytes, size_t alignment) {
  return impl_->memory->allocate(bytes, alignment);
}

void CudaDevice::deallocate(void *ptr) { impl_->memory->deallocate(ptr); }

MemoryStats CudaDevice::memoryStats() const {
  MemoryStats stats = impl_->memory->stats();
  stats.bytesCopied = impl_->bytesCopied.load(std::memory_order_relaxed);
  return stats;
}

CudaCacheStats CudaDevice::cacheStats() const {
  return impl_->memory->cacheStats();
}

size_t CudaDevice::trim() { return impl_->memory->trim(); }

std::string CudaDevice::allocatorKind() const { return impl_->memory->kind(); }

Stream &CudaDevice::defaultStream() { return *impl_->defaultStream; }

std::unique_ptr<Stream> CudaDevice::createStream() {
  return std::make_unique<CudaStream>(ordinal_, impl_->name);
}

std::unique_ptr<Event> CudaDevice::createEvent() {
  return std::make_unique<CudaEvent>(ordinal_, impl_->name);
}

void CudaDevice::record(Event &event, Stream &stream) {
  cudaEvent_t e = cudaEventOf(event, ordinal_, impl_->name).get();
  cudaStream_t s = impl_->native(stream);
  CurrentDevice guard(ordinal_, impl_->name);
  checkCuda(cudaEventRecord(e, s), impl_->name, "cudaEventRecord");
}

void CudaDevice::wait(Stream &stream, Event &event) {
  cudaEvent_t e = cudaEventOf(event, ordinal_, impl_->name).get();
  cudaStream_t s = impl_->native(stream);
  CurrentDevice guard(ordinal_, impl_->name);
  checkCuda(cudaStreamWaitEvent(s, e, 0), impl_->name, "cudaStreamWaitEvent");
}

void CudaDevice::synchronize(Stream &stream) {
  cudaStream_t s = impl_->native(stream);
  CurrentDevice guard(ordinal_, impl_->name);
  checkCuda(cudaStreamSynchronize(s), impl_->name, "cudaStreamSynchronize");
}

void CudaDevice::synchronize() {
  uint64_t ticket = impl_->memory->syncTicket();
  {
    CurrentDevice guard(ordinal_, impl_->name);
    checkCuda(cudaDeviceSynchronize(), impl_->name, "cudaDeviceSynchronize");
  }
  // Blocks freed before the synchronisation are no longer in use.
  impl_->memory->deviceSynchronized(ticket);
}

void CudaDevice::copyHostToDevice(void *dst, const void *src, size_t bytes,
                                  Stream &stream) {
  impl_->bytesCopied.fetch_add(bytes, std::memory_order_relaxed);
  impl_->staging.toDevice(dst, src, bytes, impl_->native(stream));
}

void CudaDevice::copyDeviceToHost(void *dst, const void *src, size_t bytes,
                                  Stream &stream) {
  impl_->bytesCopied.fetch_add(bytes, std::memory_order_relaxed);
  impl_->staging.toHost(dst, src, bytes, impl_->native(stream));
}

void CudaDevice::copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                                    Stream &stream) {
  if (!bytes || dst == src)
    return;
  impl_->bytesCopied.fetch_add(bytes, std::memory_order_relaxed);
  cudaStream_t s = impl_->native(stream);
  uintptr_t d = reinterpret_cast<uintptr_t>(dst),
            r = reinterpret_cast<uintptr_t>(src);
  bool overlap = d < r + bytes && r < d + bytes;
  if (!overlap) {
    CurrentDevice guard(ordinal_, impl_->name);
    checkCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s),
              impl_->name, "cudaMemcpyAsync (device to device)");
    return;
  }
  // cudaMemcpy is undefined on overlap; go through a temporary, which the
  // allocator reuses only once the device has passed these copies.
  void *t = allocate(bytes);
  CurrentDevice guard(ordinal_, impl_->name);
  cudaError_t status =
      cudaMemcpyAsync(t, src, bytes, cudaMemcpyDeviceToDevice, s);
  if (status == cudaSuccess)
    status = cudaMemcpyAsync(dst, t, bytes, cudaMemcpyDeviceToDevice, s);
  deallocate(t);
  checkCuda(status, impl_->name, "cudaMemcpyAsync (device to device)");
}

void CudaDevice::fillZero(void *dst, size_t bytes, Stream &stream) {
  if (!bytes)
    return;
  impl_->bytesCopied.fetch_add(bytes, std::memory_order_relaxed);
  cudaStream_t s = impl_->native(stream);
  CurrentDevice guard(ordinal_, impl_->name);
  checkCuda(cudaMemsetAsync(dst, 0, bytes, s), impl_->name, "cudaMemsetAsync");
}

void CudaDevice::emaUpdate(const std::vector<EmaWeight> &weights, float beta,
                           Stream &stream) {
  std::vector<kernels::EmaSpan> spans;
  for (const EmaWeight &w : weights)
    spans.push_back({w.ema, w.param, w.paramDType, w.numel});
  cudaStream_t s = impl_->native(stream);
  CurrentDevice guard(ordinal_, impl_->name);
  cuda::emaUpdate(spans, beta, reinterpret_cast<cuda::Stream>(s));
}

namespace {

/// An instantiated CUDA graph.
class CudaGraph : public Graph {
public:
  CudaGraph(cudaGraphExec_t exec, int ordinal, size_t operations)
      : exec_(exec), ordinal_(ordinal), operations_(operations) {}
  ~CudaGraph() override {
    onDevice(ordinal_, [&] { cudaGraphExecDestroy(exec_); });
  }
  cudaGraphExec_t get() const { return exec_; }
  size_t operations() const override { return operations_; }

private:
  cudaGraphExec_t exec_;
  int ordinal_;
  size_t operations_;
};

} // namespace

void CudaDevice::resetProfile() {
  if (impl_->profile)
    impl_->profile->reset();
}

bool CudaDevice::supportsGraphs() const { return !impl_->profile; }

std::unique_ptr<Graph>
CudaDevice::capture(Stream &stream, const std::function<void()> &enqueue) {
  cudaStream_t s = impl_->native(stream);
  const std::string &dev = impl_->name;
  {
    CurrentDevice guard(ordinal_, dev);
    // The stream's tile counters exist before the capture, so that split
    // kernels inside it finish in their last block (a stream that meets
    // its first split kernel inside a capture has none, and each such
    // kernel adds a combine kernel to the graph: GPT-2's decode step at
    // batch 1, 12 of them).
    if (impl_->context) {
      std::lock_guard<std::mutex> turn(impl_->launch);
      cuda::tileCounters(*impl_->context, s, "capture");
    }
    // Thread-local: another thread's unrelated CUDA calls (an allocation by
    // another engine) neither break this capture nor are broken by it.
    checkCuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), dev,
              "cudaStreamBeginCapture");
  }
  // Capture must end whatever happens, or the stream stays unusable.
  cudaGraph_t graph = nullptr;
  try {
    enqueue();
  } catch (...) {
    CurrentDevice guard(ordinal_, dev);
    cudaStreamEndCapture(s, &graph);
    if (graph)
      cudaGraphDestroy(graph);
    cudaGetLastError(); // the capture's error is the exception's
    throw;
  }
  CurrentDevice guard(ordinal_, dev);
  cudaError_t ended = cudaStreamEndCapture(s, &graph);
  if (ended != cudaSuccess) {
    if (graph)
      cudaGraphDestroy(graph);
    cudaGetLastError();
    checkCuda(ended, dev,
              "cudaStreamEndCapture (something in the captured work was not "
              "stream work, e.g. a synchronisation or an allocation)");
  }
  size_t nodes = 0;
  cudaError_t counted = cudaGraphGetNodes(graph, nullptr, &nodes);
  cudaGraphExec_t exec = nullptr;
  cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  checkCuda(counted, dev, "cudaGraphGetNodes");
  checkCuda(made, dev, "cudaGraphInstantiate");
  return std::make_unique<CudaGraph>(exec, ordinal_, nodes);
}

std::unique_ptr<Graph>
CudaDevice::captureTuned(Stream &stream, const std::function<void()> &enqueue,
                         const StepState &state) {
  if (!impl_->context || !stepTuningEnabled() || !state.save || !state.restore)
    return capture(stream, enqueue);
  CurrentDevice guard(ordinal_, impl_->name);
  return tuneCapturedStep(
      *impl_->context, impl_->native(stream), impl_->launch,
      [&](const std::function<void()> &began) {
        return capture(stream, [&] {
          began();
          enqueue();
        });
      },
      [&](Graph &graph) { launch(graph, stream); }, [&] { state.save(stream); },
      [&] { state.restore(stream); }, impl_->stepTuningTrials, impl_->name);
}

size_t CudaDevice::stepTuningTrials() const { return impl_->stepTuningTrials; }

void CudaDevice::launch(Graph &graph, Stream &stream) {
  auto *g = dynamic_cast<CudaGraph *>(&graph);
  if (!g)
    throw Error(impl_->name + ": not a graph captured by a CUDA device");
  cudaStream_t s = impl_->native(stream);
  CurrentDevice guard(ordinal_, impl_->name);
  checkCuda(cudaGraphLaunch(g->get(), s), impl_->name, "cudaGraphLaunch");
}

std::unique_ptr<PreparedCommand>
CudaDevice::prepare(const CommandDesc &command, const ExecutableDesc &exe) {
  if (isEvent(command.op))
    return std::make_unique<CudaNoOpCommand>();
  if (auto *c = std::get_if<ops::Collective>(&command.op)) {
    if (command.operands.size() != 1 || command.results.size() != 1)
      throw Error("executable '" + exe.name + "': " + opName(command.op) +
                  " takes one operand and one result");
    std::shared_ptr<CudaCommunicator> comm = impl_->singleRank;
    if (c->communicator >= 0 &&
        static_cast<size_t>(c->communicator) < exe.communicators.size()) {
      std::lock_guard<std::mutex> lock(impl_->communicatorsMutex);
      auto it = impl_->communicators.find(exe.communicators[c->communicator]);
      if (it != impl_->communicators.end())
        comm = it->second;
    }
    return std::make_unique<CudaCollectiveCommand>(
        *c, command.operands[0], command.results[0], std::move(comm), ordinal_,
        impl_->name);
  }
  cuda::KernelEntry entry = cuda::findKernel(command.op);
  if (!entry.run)
    throw Error("executable '" + exe.name +
                "': the cuda backend has no kernel for '" + opName(command.op) +
                "'" +
                (command.loc.empty() ? "" : " (used at " + command.loc + ")"));
  return std::make_unique<CudaKernelCommand>(
      entry, command, settledOperands(command, exe), impl_->context, ordinal_,
      impl_->name, impl_->launch, impl_->profile.get());
}

void CudaDevice::setCommunicator(const std::string &name,
                                 std::shared_ptr<CudaCommunicator> comm) {
  std::lock_guard<std::mutex> lock(impl_->communicatorsMutex);
  if (comm)
    impl_->communicators[name] = std::move(comm);
  else
    impl_->communicators.erase(name);
}

CUstream_st *CudaDevice::nativeStream(Stream &stream) {
  auto *s = dynamic_cast<CudaStream *>(&stream);
  if (!s)
    throw Error("the stream is not a CUDA stream");
  return s->get();
}

uint32_t settledOperands(const CommandDesc &command,
                         const ExecutableDesc &exe) {
  const CommandDesc *first = exe.commands.data();
  if (&command < first || &command >= first + exe.commands.size())
    return 0; // not one of exe's commands: where it runs is unknown
  for (const CommandDesc &c : exe.commands)
    if (c.stream == command.stream && launchesKernel(c.op)) {
      if (&c == &command)
        return 0;
      break;
    }
  uint32_t mask = 0;
  for (size_t i = 0; i < command.operands.size() && i < 32; ++i) {
    const int32_t b = command.operands[i];
    if (b < 0 || static_cast<size_t>(b) >= exe.buffers.size())
      continue; // absent
    const BufferKind kind = exe.buffers[aliasRoot(exe, b)].kind;
    if (kind == BufferKind::Constant ||
        (kind == BufferKind::Param && exe.paramAccess == Access::Read))
      mask |= 1u << i;
  }
  return mask;
}

} // namespace hybrid
