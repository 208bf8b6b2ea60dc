// A loaded executable: a bundle's typed command list bound to a device, its
// kernels prepared once, and its memory plan evaluated per shape bucket into
// one device allocation whose addresses do not move between calls.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"
#include "hybrid/HostTensor.h"
#include "hybrid/StateStore.h"
#include "hybrid/WeightStore.h"

#include <memory>
#include <string>
#include <vector>

namespace hybrid {

/// Loading prepares every command on the device (a backend without a kernel
/// for an op fails here, naming the op and its loc), uploads the constants
/// the executable uses and flattens the symbolic memory plan.
///
/// A **bucket** is one set of concrete symbol values. Binding a bucket
/// checks the values against the bundle's limits (before anything else),
/// evaluates every buffer's shape and offset, sizes the scratch each command
/// needs for those shapes, and makes sure the executable's one device
/// allocation (workspace, then 256-aligned scratch; grow-only) is big
/// enough; it binds the state buffers the executable declares, allocating a
/// state on its first use. Binding the bucket that is already bound does
/// nothing. For a given bucket, calls allocate no device memory, and every
/// buffer address is the same on every call as long as the allocation did
/// not have to grow for another bucket (reserve() the largest bucket first
/// to rule that out) and no state was released.
///
/// Device-resident use: bind (or bindShapes), write input(i), enqueue on a
/// stream, read output(i) once the stream has passed it. Host use: run(),
/// which does all of that with copies at the edge and waits.
///
/// Access: inputs, constants, parameters (unless the executable's param
/// access is read-write) and states it declares read reach the kernels only
/// as read-only views (BufferView::writable is null); validation has already
/// rejected commands that would write them.
///
/// Ownership: shares the bundle and the device; uses the WeightStore and
/// StateStore of its engine, which must outlive it; owns its allocation,
/// constants, streams, events and prepared commands. Thread safety: the
/// executables of one engine share its weight and state stores, so they are
/// used by one thread at a time (the engine's); executables of different
/// engines may run on different threads.
class Executable {
public:
  Executable(std::shared_ptr<const BundleDesc> bundle, size_t index,
             std::shared_ptr<Device> device, WeightStore &weights,
             StateStore &states);
  ~Executable();
  Executable(const Executable &) = delete;
  Executable &operator=(const Executable &) = delete;

  const std::string &name() const;
  const ExecutableDesc &desc() const;
  const std::vector<std::string> &inputNames() const;
  const std::vector<std::string> &outputNames() const;
  /// "input_ids: i64 [batch,seq]" style description of input or output i.
  std::string describeInput(size_t i) const;
  std::string describeOutput(size_t i) const;

  /// Binds the bucket with these symbol values (in desc().symbols order).
  /// Throws hybrid::Error naming the executable and the symbol for a value
  /// below 1 or above its limit, and for a plan the values make invalid.
  void bind(const std::vector<int64_t> &symbolValues);
  /// Binds the bucket the input shapes (in port order) imply: a dimension
  /// that is exactly one symbol binds it, every other dimension must match.
  /// Errors name the executable, the input, the dim and the symbol.
  void bindShapes(const std::vector<Shape> &inputShapes);
  /// Grows the allocation to what the bucket `symbolValues` needs without
  /// binding it, so that binding any bucket up to that size allocates
  /// nothing. Same errors as bind().
  void reserve(const std::vector<int64_t> &symbolValues);
  /// The symbol values of the bound bucket (empty before the first bind).
  const std::vector<int64_t> &symbolValues() const;

  /// Input / output port i of the bound bucket: its slot in the
  /// executable's memory, with its concrete shape. Valid until the next
  /// bind of another bucket. Throws hybrid::Error when no bucket is bound.
  DeviceTensor input(size_t i) const;
  DeviceTensor output(size_t i) const;
  /// The port named `name` (hybrid::Error listing the ports when absent).
  size_t inputIndex(const std::string &name) const;
  size_t outputIndex(const std::string &name) const;

  /// Enqueues the commands of the bound bucket: command stream 0 is
  /// `stream`, the others are the executable's own, forked from and joined
  /// back into `stream`. Returns without waiting. Throws hybrid::Error when
  /// no bucket is bound, the weights are not loaded, or a command fails to
  /// enqueue (naming the command and its loc).
  void enqueue(Stream &stream);
  /// enqueue() through a graph on a device that has them (Device::
  /// supportsGraphs; elsewhere it is enqueue()): the first call for a
  /// bucket runs the commands, the second captures them once and launches
  /// the capture, every later call launches it again. Binding another
  /// bucket, a state that moved or weights bound elsewhere make the next
  /// calls capture anew. For an executable whose calls differ only in the
  /// contents of its buffers (a decode step: positions and tokens live on
  /// the device), so that the replay is the same work.
  void enqueueGraph(Stream &stream);
  /// Makes the graph enqueueGraph launches for the bound bucket now,
  /// without launching it: the commands run once outside the capture
  /// (kernels load, plans are made), between `state`'s save and restore so
  /// that the state is as before, then are captured through Device::
  /// captureTuned, which may replay them to time their kernels' options
  /// (GEMM step tuning). So every later call, the first included, runs the
  /// plans tuning settled on. No-op where the graph is current or the
  /// device has no graphs.
  void captureGraph(Stream &stream, const StepState &state);
  /// Graphs captured so far (enqueueGraph, captureGraph): how often the
  /// addresses moved under them (tests, logs).
  size_t graphCaptures() const;
  /// Device operations in the graph enqueueGraph replays (0 before one was
  /// captured, or on a device without graphs).
  size_t graphOperations() const;

  /// Host edge: binds the bucket of the inputs' shapes (by name; exactly the
  /// executable's inputs), copies them in, enqueues, copies the outputs out
  /// and waits. Throws hybrid::Error for a missing, unexpected or mis-shaped
  /// input, a wrong dtype, an unbound symbol, a symbol over its limit, or a
  /// failing command.
  NamedTensors run(const NamedTensors &inputs);
  /// The same with inputs and outputs in port order.
  std::vector<HostTensor> run(const std::vector<HostTensor> &inputs);
  /// `inputs` with each omitted input that has a default (PortDesc::
  /// defaultValue) filled in, shaped by the symbols the given inputs bind;
  /// fails naming a missing input that has none.
  NamedTensors withDefaults(const NamedTensors &inputs) const;

  /// Returns the executable's device allocation (workspace, scratch, its
  /// inputs and outputs) to the device once the work enqueued so far is
  /// done; the next bind (or run) takes it again and a graph is captured
  /// anew. For memory another phase needs (release_inference_cache).
  void release();
  /// Bytes of the one device allocation (0 before the first bind/reserve).
  size_t allocationBytes() const;
  /// Workspace and scratch bytes of the bound bucket.
  size_t workspaceBytes() const;
  size_t scratchBytes() const;
  /// Device address of buffer i in the bound bucket (for tests and
  /// debugging; null for a state not bound yet).
  const void *bufferAddress(size_t i) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A symbolic shape with the executable's symbol names, as messages and
/// reports show it: "[batch,seq]".
std::string symShapeString(const SymShape &shape,
                           const std::vector<std::string> &symbols);

} // namespace hybrid
