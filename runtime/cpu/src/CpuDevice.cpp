// The CPU backend: aligned host memory with allocation statistics, streams
// that run work at once, and commands bound to hybrid_kernels_cpu.
#include "hybrid/CpuDevice.h"

#include "cpu/CpuKernels.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace hybrid {

namespace {

/// CPU streams run everything when it is enqueued; the type only marks
/// which objects came from this device.
class CpuStream : public Stream {};
class CpuEvent : public Event {};

/// A command bound to a CPU kernel. The KernelCall is built once; each run
/// refreshes addresses (and shapes when they changed). Operands are read
/// through BufferView::data and results written through
/// BufferView::writable, so read-only memory is never written.
class CpuKernelCommand : public PreparedCommand {
public:
  CpuKernelCommand(cpu::KernelEntry entry, const CommandDesc &command)
      : entry_(entry), op_(command.op), operands_(command.operands),
        results_(command.results) {
    call_.op = &op_;
    call_.operands.resize(operands_.size());
    call_.results.resize(results_.size());
  }

  size_t scratchBytes(const std::vector<BufferView> &buffers) override {
    bindShapes(buffers);
    scratch_ = cpu::scratchBytes(entry_, call_, cpu::numThreads());
    return scratch_;
  }

  void run(const std::vector<BufferView> &buffers, bool shapesChanged, Stream &,
           void *scratch) override {
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
    entry_.run(call_);
  }

private:
  void bindShapes(const std::vector<BufferView> &buffers) {
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (operands_[i] < 0) {
        call_.operands[i] = cpu::ConstTensor::absent();
        continue;
      }
      const BufferView &b = buffers[operands_[i]];
      cpu::ConstTensor &t = call_.operands[i];
      t.present = true;
      t.dtype = b.dtype;
      t.shape = b.shape;
    }
    for (size_t i = 0; i < results_.size(); ++i) {
      const BufferView &b = buffers[results_[i]];
      call_.results[i].dtype = b.dtype;
      call_.results[i].shape = b.shape;
    }
  }

  cpu::KernelEntry entry_;
  Op op_;
  std::vector<int32_t> operands_, results_;
  cpu::KernelCall call_;
  size_t scratch_ = 0;
};

/// A collective through the communicator its executable names, or over
/// one rank (the result is the operand).
class CpuCollectiveCommand : public PreparedCommand {
public:
  CpuCollectiveCommand(CollectiveKind kind, int32_t operand, int32_t result,
                       std::shared_ptr<CpuCommunicator> comm)
      : kind_(kind), operand_(operand), result_(result),
        comm_(std::move(comm)) {}

  void run(const std::vector<BufferView> &buffers, bool, Stream &,
           void *) override {
    const BufferView &in = buffers[operand_], &out = buffers[result_];
    size_t inBytes =
        static_cast<size_t>(numElements(in.shape)) * dtypeSize(in.dtype);
    size_t outBytes =
        static_cast<size_t>(numElements(out.shape)) * dtypeSize(out.dtype);
    if (comm_) {
      if (in.dtype != out.dtype)
        throw Error(std::string("collective from ") + dtypeName(in.dtype) +
                    " to " + dtypeName(out.dtype));
      if (!out.writable)
        throw Error("the result is read-only memory");
      comm_->run(kind_, in.data, inBytes, out.writable, outBytes, in.dtype);
      return;
    }
    if (inBytes != outBytes || in.dtype != out.dtype)
      throw Error(std::string("with one rank the result must be the operand: "
                              "got ") +
                  dtypeName(in.dtype) + " " + shapeToString(in.shape) + " -> " +
                  dtypeName(out.dtype) + " " + shapeToString(out.shape));
    if (!out.writable)
      throw Error("the result is read-only memory");
    if (inBytes)
      std::memmove(out.writable, in.data, inBytes);
  }

private:
  CollectiveKind kind_;
  int32_t operand_, result_;
  std::shared_ptr<CpuCommunicator> comm_;
};

/// Events are recorded and waited for through Device::record/wait by the
/// executable; on the CPU both are no-ops, and so is the command.
class CpuNoOpCommand : public PreparedCommand {
public:
  void run(const std::vector<BufferView> &, bool, Stream &, void *) override {}
};

} // namespace

CpuDevice::CpuDevice(int threads) : default_(std::make_unique<CpuStream>()) {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    physicalBytes_ = static_cast<size_t>(pages) * static_cast<size_t>(page);
  if (threads < 0)
    throw Error("cpu device: thread count must be >= 0, got " +
                std::to_string(threads));
  if (threads > 0)
    cpu::setNumThreads(threads);
}

CpuDevice::~CpuDevice() = default;

void *CpuDevice::allocate(size_t bytes, size_t alignment) {
  if (alignment < 256)
    alignment = 256;
  if (alignment & (alignment - 1))
    throw Error("cpu device: alignment " + std::to_string(alignment) +
                " is not a power of two");
  // More than the machine has is an error here, not a lazily overcommitted
  // mapping that fails when touched.
  if (bytes > SIZE_MAX - alignment || bytes > physicalBytes_)
    throw Error("cpu device: out of memory: cannot allocate " +
                std::to_string(bytes) + " bytes (the machine has " +
                std::to_string(physicalBytes_) + ")");
  size_t rounded =
      bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void *p = std::aligned_alloc(alignment, rounded);
  if (!p)
    throw Error("cpu device: out of memory allocating " +
                std::to_string(bytes) + " bytes");
  std::lock_guard<std::mutex> lock(mutex_);
  sizes_[p] = bytes;
  stats_.bytesInUse += bytes;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.bytesInUse);
  ++stats_.allocations;
  stats_.bytesAllocated += bytes;
  return p;
}

void CpuDevice::deallocate(void *ptr) {
  if (!ptr)
    return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sizes_.find(ptr);
    // Memory from elsewhere is a programming error, not a user's; leak it
    // rather than free what this device does not own.
    assert(it != sizes_.end() && "deallocate of memory not from this device");
    if (it == sizes_.end())
      return;
    stats_.bytesInUse -= it->second;
    ++stats_.frees;
    sizes_.erase(it);
  }
  std::free(ptr);
}

MemoryStats CpuDevice::memoryStats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats stats = stats_;
  stats.bytesCopied = bytesCopied_.load(std::memory_order_relaxed);
  return stats;
}

Stream &CpuDevice::defaultStream() { return *default_; }

std::unique_ptr<Stream> CpuDevice::createStream() {
  return std::make_unique<CpuStream>();
}

std::unique_ptr<Event> CpuDevice::createEvent() {
  return std::make_unique<CpuEvent>();
}

// Work is complete when it is enqueued, so every event is always reached.
void CpuDevice::record(Event &, Stream &) {}
void CpuDevice::wait(Stream &, Event &) {}
void CpuDevice::synchronize(Stream &) {}
void CpuDevice::synchronize() {}

void CpuDevice::copyHostToDevice(void *dst, const void *src, size_t bytes,
                                 Stream &) {
  if (!bytes)
    return;
  std::memcpy(dst, src, bytes);
  bytesCopied_.fetch_add(bytes, std::memory_order_relaxed);
}

void CpuDevice::copyDeviceToHost(void *dst, const void *src, size_t bytes,
                                 Stream &) {
  if (!bytes)
    return;
  std::memcpy(dst, src, bytes);
  bytesCopied_.fetch_add(bytes, std::memory_order_relaxed);
}

void CpuDevice::copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                                   Stream &) {
  if (!bytes)
    return;
  std::memmove(dst, src, bytes);
  bytesCopied_.fetch_add(bytes, std::memory_order_relaxed);
}

void CpuDevice::fillZero(void *dst, size_t bytes, Stream &) {
  if (!bytes)
    return;
  std::memset(dst, 0, bytes);
  bytesCopied_.fetch_add(bytes, std::memory_order_relaxed);
}

void CpuDevice::emaUpdate(const std::vector<EmaWeight> &weights, float beta,
                          Stream &) {
  std::vector<kernels::EmaSpan> spans;
  for (const EmaWeight &w : weights)
    spans.push_back({w.ema, w.param, w.paramDType, w.numel});
  cpu::emaUpdate(spans, beta);
}

std::unique_ptr<PreparedCommand> CpuDevice::prepare(const CommandDesc &command,
                                                    const ExecutableDesc &exe) {
  if (isEvent(command.op))
    return std::make_unique<CpuNoOpCommand>();
  if (auto *c = std::get_if<ops::Collective>(&command.op)) {
    if (command.operands.size() != 1 || command.results.size() != 1)
      throw Error("executable '" + exe.name + "': " + opName(command.op) +
                  " takes one operand and one result");
    std::shared_ptr<CpuCommunicator> comm;
    if (c->communicator >= 0 &&
        static_cast<size_t>(c->communicator) < exe.communicators.size()) {
      std::lock_guard<std::mutex> lock(communicatorsMutex_);
      auto it = communicators_.find(exe.communicators[c->communicator]);
      if (it != communicators_.end())
        comm = it->second;
    }
    return std::make_unique<CpuCollectiveCommand>(
        c->kind, command.operands[0], command.results[0], std::move(comm));
  }
  cpu::KernelEntry entry = cpu::findKernel(command.op);
  if (!entry.run)
    throw Error("executable '" + exe.name +
                "': the cpu backend has no kernel for '" + opName(command.op) +
                "'" +
                (command.loc.empty() ? "" : " (used at " + command.loc + ")"));
  return std::make_unique<CpuKernelCommand>(entry, command);
}

void CpuDevice::setCommunicator(const std::string &name,
                                std::shared_ptr<CpuCommunicator> comm) {
  std::lock_guard<std::mutex> lock(communicatorsMutex_);
  if (comm)
    communicators_[name] = std::move(comm);
  else
    communicators_.erase(name);
}

} // namespace hybrid
