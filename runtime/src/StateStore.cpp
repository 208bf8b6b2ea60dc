// State buffers: allocation on first use, shape agreement, release.
#include "hybrid/StateStore.h"

#include "hybrid/SizeMath.h"

namespace hybrid {

StateStore::StateStore(std::vector<StateDesc> states,
                       std::shared_ptr<Device> device)
    : device_(std::move(device)) {
  if (!device_)
    throw Error("StateStore: no device");
  stream_ = device_->createStream();
  for (StateDesc &d : states) {
    if (!byName_.emplace(d.name, states_.size()).second)
      throw Error("StateStore: duplicate state '" + d.name + "'");
    Slot s;
    s.desc = std::move(d);
    states_.push_back(std::move(s));
  }
}

size_t StateStore::add(StateDesc desc) {
  if (!byName_.emplace(desc.name, states_.size()).second)
    throw Error("StateStore: duplicate state '" + desc.name + "'");
  Slot s;
  s.desc = std::move(desc);
  states_.push_back(std::move(s));
  return states_.size() - 1;
}

StateStore::~StateStore() {
  // Work still enqueued may use a state; memory goes back only after it.
  for (const Slot &s : states_)
    if (s.allocated) {
      device_->synchronize();
      break;
    }
}

std::optional<size_t> StateStore::find(const std::string &name) const {
  auto it = byName_.find(name);
  if (it == byName_.end())
    return std::nullopt;
  return it->second;
}

size_t StateStore::index(const std::string &name) const {
  if (std::optional<size_t> i = find(name))
    return *i;
  std::string names;
  for (const Slot &s : states_)
    names += (names.empty() ? "" : ", ") + s.desc.name;
  throw Error("no state '" + name + "' (the bundle's states: " +
              (names.empty() ? "none" : names) + ")");
}

void *StateStore::bind(size_t i, const Shape &shape, const std::string &user) {
  Slot &s = states_.at(i);
  if (s.allocated) {
    if (s.shape != shape)
      throw Error("state '" + s.desc.name + "': " + user + " uses it as " +
                  dtypeName(s.desc.dtype) + " " + shapeToString(shape) +
                  " but it holds " + dtypeName(s.desc.dtype) + " " +
                  shapeToString(s.shape) + " (allocated by " + s.allocatedBy +
                  "); release it to change its shape");
    return s.memory.get();
  }
  size_t bytes =
      detail::tensorBytes(s.desc.dtype, shape, "state '" + s.desc.name + "'");
  s.memory = DeviceAllocation(device_, bytes, kWorkspaceAlignment);
  device_->fillZero(s.memory.get(), bytes, *stream_);
  // Whoever uses the state next may do so on another stream.
  device_->synchronize(*stream_);
  s.shape = shape;
  s.allocatedBy = user;
  s.allocated = true;
  ++epoch_;
  return s.memory.get();
}

void StateStore::allocate(const std::string &name, const Shape &shape) {
  bind(index(name), shape, "an explicit allocate");
}

const void *StateStore::bindForRead(size_t i, const Shape &shape,
                                    const std::string &user) {
  return bind(i, shape, user);
}

void *StateStore::bindForWrite(size_t i, const Shape &shape,
                               const std::string &user) {
  return bind(i, shape, user);
}

void StateStore::release(const std::string &name) {
  Slot &s = states_[index(name)];
  if (!s.allocated)
    return;
  device_->synchronize();
  s.memory.reset();
  s.shape.clear();
  s.allocatedBy.clear();
  s.allocated = false;
  ++epoch_;
}

void StateStore::releaseAll() {
  for (Slot &s : states_)
    if (s.allocated)
      release(s.desc.name);
}

bool StateStore::allocated(const std::string &name) const {
  return states_[index(name)].allocated;
}

DeviceTensor StateStore::tensor(const std::string &name) {
  Slot &s = states_[index(name)];
  if (!s.allocated)
    throw Error("state '" + s.desc.name +
                "' is not allocated (no executable has used it since it was "
                "created or released)");
  return DeviceTensor{s.memory.get(), s.desc.dtype, s.shape};
}

size_t StateStore::bytesInUse() const {
  size_t n = 0;
  for (const Slot &s : states_)
    n += s.allocated ? s.memory.size() : 0;
  return n;
}

} // namespace hybrid
