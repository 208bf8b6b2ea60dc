// Host-memory tensors: what callers pass to executables and get back.
#pragma once

#include "hybrid/Types.h"

#include <cassert>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hybrid {

/// The DType of a C++ element type (float, int64_t, bool).
template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }
template <> constexpr DType dtypeOf<bool>() { return DType::Bool; }

/// A dense, row-major tensor in host memory.
///
/// Ownership: copies share the same bytes (like std::shared_ptr).
/// `allocate` owns zero-filled, 64-byte-aligned memory; `borrow` wraps memory
/// the caller keeps alive for as long as any copy is used. Thread safety: a
/// HostTensor may be read from several threads; writes need external
/// synchronisation.
class HostTensor {
public:
  HostTensor() = default;

  /// Zero-filled storage for `shape`. Throws hybrid::Error if the size
  /// overflows or memory runs out.
  static HostTensor allocate(DType dtype, Shape shape);
  /// A view of `data` (not owned; must hold numel * dtypeSize bytes).
  static HostTensor borrow(DType dtype, Shape shape, void *data);
  /// A copy of `values` with `shape` (numel must equal values.size()).
  template <typename T>
  static HostTensor fromVector(Shape shape, const std::vector<T> &values);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t numel() const { return numElements(shape_); }
  size_t bytes() const {
    return static_cast<size_t>(numel()) * dtypeSize(dtype_);
  }
  /// False for a default-constructed tensor.
  bool valid() const { return data_ != nullptr || owner_ != nullptr; }

  void *data() { return data_; }
  const void *data() const { return data_; }
  template <typename T> T *as() {
    assert(dtypeOf<T>() == dtype_ && "HostTensor::as with the wrong type");
    return static_cast<T *>(data_);
  }
  template <typename T> const T *as() const {
    assert(dtypeOf<T>() == dtype_ && "HostTensor::as with the wrong type");
    return static_cast<const T *>(data_);
  }
  /// The elements as a vector (T must match dtype()).
  template <typename T> std::vector<T> toVector() const {
    const T *p = as<T>();
    return std::vector<T>(p, p + numel());
  }

private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::shared_ptr<void> owner_;
  void *data_ = nullptr;
};

/// Tensors by name: the inputs and outputs of an executable call.
using NamedTensors = std::map<std::string, HostTensor>;

template <typename T>
HostTensor HostTensor::fromVector(Shape shape, const std::vector<T> &values) {
  if (numElements(shape) != static_cast<int64_t>(values.size()))
    throw Error("HostTensor::fromVector: shape " + shapeToString(shape) +
                " holds " + std::to_string(numElements(shape)) +
                " elements, got " + std::to_string(values.size()));
  HostTensor t = allocate(dtypeOf<T>(), std::move(shape));
  T *p = t.as<T>();
  for (size_t i = 0; i < values.size(); ++i)
    p[i] = values[i];
  return t;
}

} // namespace hybrid
