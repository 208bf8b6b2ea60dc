// Device backends: where an executable's memory lives and how its commands
// run. Every backend implements this one interface: the CPU backend
// (hybrid_backend_cpu, the numerical oracle) and the CUDA backend.
//
// Execution model: work is enqueued on streams and the host does not wait
// for it unless it asks (Device::synchronize). On the CPU backend streams
// run their work at once, in order, so every call is complete when it
// returns; code written against this interface must not rely on that.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Types.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hybrid {

/// An in-order queue of device work. Created by Device::createStream or
/// Device::defaultStream; owned by whoever created it; used by one host
/// thread at a time.
class Stream {
public:
  virtual ~Stream() = default;
};

/// A point in a stream's work that other streams (or the host) can wait for.
/// Created by Device::createEvent; reusable (record again to move it).
class Event {
public:
  virtual ~Event() = default;
};

/// Device work recorded once and replayed with one launch (a CUDA graph):
/// the same kernels with the same arguments and addresses on every launch.
/// Created by Device::capture; owned by whoever captured it; launched on
/// the device that captured it.
class Graph {
public:
  virtual ~Graph() = default;
  /// How many device operations (kernels, copies, fills) one launch runs.
  virtual size_t operations() const = 0;
};

/// What tuning a captured step (Device::captureTuned) needs from its
/// caller: the timed replays run the real step, so `save` enqueues a copy
/// of the state the step mutates, and `restore` enqueues putting it back
/// (both on the stream given, outside any capture).
struct StepState {
  std::function<void(Stream &)> save, restore;
};

/// A buffer as a command sees it during one call: a device address and a
/// concrete shape. `writable` is the same address when the executable may
/// write the buffer (workspace, outputs, read-write state and parameters),
/// null when it may only read it (inputs, constants, read-only state and
/// parameters): read-only memory is never reachable as a mutable pointer.
struct BufferView {
  const void *data = nullptr;
  void *writable = nullptr;
  DType dtype = DType::F32;
  Shape shape;
};

/// One command of an executable, bound to a backend kernel. Built once at
/// load time by Device::prepare (attributes resolved, kernel chosen); run
/// many times.
///
/// Ownership: owned by the executable that prepared it. Thread safety: used
/// by one thread at a time.
class PreparedCommand {
public:
  virtual ~PreparedCommand() = default;
  /// Scratch bytes the command needs when its buffers have the shapes in
  /// `buffers` (data pointers may be null). Called whenever the shapes
  /// change, before run(); the executable's plan includes the maximum over
  /// its commands. Throws hybrid::Error when the shapes are unsupported.
  virtual size_t scratchBytes(const std::vector<BufferView> &buffers) {
    (void)buffers;
    return 0;
  }
  /// Enqueues the command on `stream`. `buffers` is indexed by buffer number
  /// (the command's operands and results index it). `shapesChanged` is false
  /// when every shape equals the previous call's, so the command may keep
  /// what it derived from them. `scratch` holds at least scratchBytes()
  /// bytes (256-byte aligned; null when zero). Throws hybrid::Error
  /// (without command context; the executable adds it).
  virtual void run(const std::vector<BufferView> &buffers, bool shapesChanged,
                   Stream &stream, void *scratch) = 0;
};

/// One weight's exponential moving average as Device::emaUpdate takes it:
/// `ema` f32 [numel] in device memory, updated in place from `param` (f32,
/// bf16 or f16 [numel], device memory).
struct EmaWeight {
  float *ema = nullptr;
  const void *param = nullptr;
  DType paramDType = DType::F32;
  int64_t numel = 0;
};

/// What the device's allocator has handed out. Every engine and executable
/// on a device shares that device's allocator.
struct MemoryStats {
  size_t bytesInUse = 0;    ///< allocated and not yet returned
  size_t peakBytes = 0;     ///< maximum of bytesInUse so far
  uint64_t allocations = 0; ///< calls to allocate() so far
  uint64_t frees = 0;       ///< calls to deallocate() so far
  /// What the device has moved so far, for measuring a phase by the
  /// difference (e.g. that Engine::eval()/train() move nothing): bytes
  /// handed out by allocate(), and bytes written by copyHostToDevice,
  /// copyDeviceToHost, copyDeviceToDevice and fillZero (a zero fill is the
  /// cost of a state taken again). Kernels' own writes are not counted.
  uint64_t bytesAllocated = 0;
  uint64_t bytesCopied = 0;
};

/// A device backend.
///
/// Ownership: shared (std::shared_ptr) by the weight store, executables and
/// engines that use it; memory it hands out must be returned with
/// deallocate() to the same device. Thread safety: allocate, deallocate and
/// memoryStats may be called from several threads; a stream is used by one
/// thread at a time.
class Device {
public:
  virtual ~Device() = default;

  /// "cpu", "cuda:0", ...
  virtual std::string name() const = 0;
  /// True when device memory is ordinary host memory (the CPU backend).
  virtual bool hostAddressable() const = 0;

  /// `bytes` of device memory aligned to `alignment` (a power of two; at
  /// least 256 is used). Throws hybrid::Error when out of memory, naming the
  /// size. Zero bytes still returns a distinct, valid address.
  virtual void *allocate(size_t bytes, size_t alignment = 256) = 0;
  virtual void deallocate(void *ptr) = 0;
  virtual MemoryStats memoryStats() const = 0;

  /// The stream work goes to when no other is named.
  virtual Stream &defaultStream() = 0;
  virtual std::unique_ptr<Stream> createStream() = 0;
  virtual std::unique_ptr<Event> createEvent() = 0;
  virtual void record(Event &event, Stream &stream) = 0;
  /// Work enqueued on `stream` after this waits for `event`.
  virtual void wait(Stream &stream, Event &event) = 0;
  /// Waits on the host until `stream` has finished everything enqueued.
  virtual void synchronize(Stream &stream) = 0;
  /// Waits on the host until every stream has finished.
  virtual void synchronize() = 0;

  /// Copies enqueued on `stream`; they need not wait for the device. The
  /// portable rule for the host buffer: it stays valid (and, for a copy to
  /// the device, unchanged) until the stream has passed the copy
  /// (synchronize). A backend may promise more, never less: the CPU device
  /// copies at once; the CUDA device has read `src` of copyHostToDevice
  /// when the call returns, while copyDeviceToHost writes `dst` only when
  /// the stream reaches the copy.
  virtual void copyHostToDevice(void *dst, const void *src, size_t bytes,
                                Stream &stream) = 0;
  virtual void copyDeviceToHost(void *dst, const void *src, size_t bytes,
                                Stream &stream) = 0;
  virtual void copyDeviceToDevice(void *dst, const void *src, size_t bytes,
                                  Stream &stream) = 0;
  virtual void fillZero(void *dst, size_t bytes, Stream &stream) = 0;
  /// The weights' moving average (Engine::updateEma, DeepSpeed-Chat's
  /// moving_average): ema = torch.lerp(param, ema, beta) per element of
  /// every weight, in f32, as one kernel (kernels/common/Ema.h's rule, the
  /// same bits on every backend), enqueued on `stream`. Not an op of any
  /// graph: an engine state updated after the optimizer step. Throws
  /// hybrid::Error for beta outside [0, 1] or a param that is not f32, bf16
  /// or f16.
  virtual void emaUpdate(const std::vector<EmaWeight> &weights, float beta,
                         Stream &stream) = 0;

  /// Whether capture() and launch() work here (CUDA: yes; CPU: no).
  virtual bool supportsGraphs() const { return false; }
  /// Forgets what a per-kernel profile (HYBRID_CUDA_PROFILE) has counted,
  /// so its table covers the work after this call only (a timing loop calls
  /// it after its warm-up: GEMM tuning and first calls stay out). No-op
  /// where nothing is profiled.
  virtual void resetProfile() {}
  /// Records the work `enqueue` puts on `stream` (and on streams that
  /// wait for it and are joined back into it before it returns) into a
  /// graph, without running it. Inside `enqueue` only stream work is
  /// allowed: no allocation, no host copy, no synchronisation. Throws
  /// hybrid::Error (naming what broke the capture) where that fails or the
  /// device has no graphs; the stream is usable again either way.
  virtual std::unique_ptr<Graph> capture(Stream &stream,
                                         const std::function<void()> &enqueue);
  /// capture(), then, on a device whose kernels chose among close options
  /// by timing each alone (CUDA: the GEMM plans, kernels/cuda/
  /// StepTuning.h), each such choice the captured work uses timed again
  /// inside it: the work recaptured with each close option and replayed
  /// against the best so far, the faster kept. The replays run the real
  /// work, so `state` saves what it mutates once before the first and
  /// restores it before each replay and after the last. A plan tuned so
  /// keeps its choice for every later capture. Default: capture().
  virtual std::unique_ptr<Graph>
  captureTuned(Stream &stream, const std::function<void()> &enqueue,
               const StepState &state) {
    (void)state;
    return capture(stream, enqueue);
  }
  /// Enqueues the captured work on `stream`; returns without waiting.
  virtual void launch(Graph &graph, Stream &stream);

  /// Resolves the kernel of `command` (of executable `exe`) once. Throws
  /// hybrid::Error naming the op and the command's loc when this backend
  /// cannot run it.
  virtual std::unique_ptr<PreparedCommand>
  prepare(const CommandDesc &command, const ExecutableDesc &exe) = 0;
};

/// What one phase of device work cost: the wall time between device-wide
/// synchronisations at its edges, and what the device allocated and copied
/// in between (MemoryStats' counters). Sums over several phases with +=.
struct PhaseCost {
  double seconds = 0;
  uint64_t bytesAllocated = 0;
  uint64_t bytesCopied = 0;
  PhaseCost &operator+=(const PhaseCost &o) {
    seconds += o.seconds;
    bytesAllocated += o.bytesAllocated;
    bytesCopied += o.bytesCopied;
    return *this;
  }
};

/// Runs `work` (which enqueues on `device`) between two synchronisations
/// of every stream and returns its cost. Work other threads put on the
/// device meanwhile is counted too.
PhaseCost measurePhase(Device &device, const std::function<void()> &work);

/// Device memory released on destruction (move-only).
class DeviceAllocation {
public:
  DeviceAllocation() = default;
  DeviceAllocation(std::shared_ptr<Device> device, size_t bytes,
                   size_t alignment = 256)
      : device_(std::move(device)), bytes_(bytes),
        ptr_(device_->allocate(bytes, alignment)) {}
  DeviceAllocation(DeviceAllocation &&o) noexcept { *this = std::move(o); }
  DeviceAllocation &operator=(DeviceAllocation &&o) noexcept {
    if (this != &o) {
      reset();
      device_ = std::move(o.device_);
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }
  DeviceAllocation(const DeviceAllocation &) = delete;
  DeviceAllocation &operator=(const DeviceAllocation &) = delete;
  ~DeviceAllocation() { reset(); }

  void *get() const { return ptr_; }
  size_t size() const { return bytes_; }
  void reset() {
    if (ptr_)
      device_->deallocate(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }

private:
  std::shared_ptr<Device> device_;
  size_t bytes_ = 0;
  void *ptr_ = nullptr;
};

/// A tensor in device memory that the caller does not own (a view of an
/// executable's input or output slot, a state buffer, a parameter).
struct DeviceTensor {
  void *data = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  size_t bytes() const {
    return static_cast<size_t>(numElements(shape)) * dtypeSize(dtype);
  }
};

} // namespace hybrid
