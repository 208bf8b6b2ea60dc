// State buffers: named device tensors an engine owns across calls and
// executables (KV cache, gradient accumulators, optimizer moments, RNG
// counter, step count, loss scale), allocated on first use and releasable.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/Device.h"

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace hybrid {

/// The bundle's state table with each state's memory.
///
/// A state has no memory until it is allocated: explicitly (allocate), or
/// when an executable that uses it binds a bucket, with the concrete shape
/// that executable's plan gives. Memory is zero-filled, 256-byte aligned and
/// comes from the device's allocator. Once allocated, every use must agree
/// on the shape; release() gives the memory back (the contents are lost)
/// and the next use takes it again, zero-filled. Every allocation or release
/// bumps epoch(), which is how executables that cached an address notice.
///
/// Ownership: owned by an Engine; owns the states' memory and shares the
/// device. Thread safety: none; used by one thread at a time (the engine's).
class StateStore {
public:
  StateStore(std::vector<StateDesc> states, std::shared_ptr<Device> device);
  ~StateStore();
  StateStore(const StateStore &) = delete;
  StateStore &operator=(const StateStore &) = delete;

  size_t size() const { return states_.size(); }
  const StateDesc &desc(size_t i) const { return states_.at(i).desc; }
  /// Adds a state the bundle does not declare (the engine's own: the EMA
  /// weights), after the bundle's, so their indices stay the executables';
  /// no executable uses it. Unallocated; returns its index. Throws
  /// hybrid::Error when a state of that name exists.
  size_t add(StateDesc desc);
  /// Index of the state named `name`.
  std::optional<size_t> find(const std::string &name) const;

  /// Allocates state `name` with `shape`, zero-filled. Nothing happens when
  /// it is already allocated with that shape; another shape is a
  /// hybrid::Error naming the state and both shapes.
  void allocate(const std::string &name, const Shape &shape);
  /// Returns the state's memory to the device allocator after waiting for
  /// all device work (an enqueued command may still use it). No-op when it
  /// is not allocated.
  void release(const std::string &name);
  /// Releases every state.
  void releaseAll();

  bool allocated(const std::string &name) const;
  /// The state's memory and shape. Throws hybrid::Error when it is not
  /// allocated.
  DeviceTensor tensor(const std::string &name);
  /// Bytes held by allocated states.
  size_t bytesInUse() const;
  /// Changes whenever a state is allocated or released.
  uint64_t epoch() const { return epoch_; }

  /// For executables: state `i` with `shape`, allocated now if it has no
  /// memory; `user` (an executable's name) appears in errors and is
  /// remembered as the allocator. Only an executable that declares the
  /// state read-write asks for the mutable address.
  const void *bindForRead(size_t i, const Shape &shape,
                          const std::string &user);
  void *bindForWrite(size_t i, const Shape &shape, const std::string &user);

private:
  struct Slot {
    StateDesc desc;
    Shape shape;
    std::string allocatedBy;
    DeviceAllocation memory;
    bool allocated = false;
  };
  size_t index(const std::string &name) const;
  void *bind(size_t i, const Shape &shape, const std::string &user);

  std::shared_ptr<Device> device_;
  std::unique_ptr<Stream> stream_;
  std::vector<Slot> states_;
  std::unordered_map<std::string, size_t> byName_;
  uint64_t epoch_ = 0;
};

} // namespace hybrid
