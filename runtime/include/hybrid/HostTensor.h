// Host-memory tensors: what callers pass to executables and get back at the
// API edge (Executable::run), and what checkpoints are read into.
#pragma once

#include "hybrid/Types.h"

#include <cassert>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace hybrid {

/// The DType of a C++ element type (float, int64_t, int32_t, bool). bf16
/// and f16 have no C++ type of their own: they are stored as uint16_t bits
/// (see storesAs, fromFloats, toFloats).
template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::I32; }
template <> constexpr DType dtypeOf<bool>() { return DType::Bool; }

/// True when elements of `dtype` are stored as T (uint16_t for bf16/f16).
template <typename T> constexpr bool storesAs(DType dtype) {
  if constexpr (std::is_same_v<T, uint16_t>)
    return dtype == DType::BF16 || dtype == DType::F16;
  else
    return dtypeOf<T>() == dtype;
}

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
  /// `values` rounded to `dtype` (f32, bf16 or f16; round to nearest even).
  static HostTensor fromFloats(DType dtype, Shape shape,
                               const std::vector<float> &values);

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
    assert(storesAs<T>(dtype_) && "HostTensor::as with the wrong type");
    return static_cast<T *>(data_);
  }
  template <typename T> const T *as() const {
    assert(storesAs<T>(dtype_) && "HostTensor::as with the wrong type");
    return static_cast<const T *>(data_);
  }
  /// The elements as a vector (T must match dtype()).
  template <typename T> std::vector<T> toVector() const {
    const T *p = as<T>();
    return std::vector<T>(p, p + numel());
  }
  /// The elements of a float tensor (f32, bf16, f16) widened to float;
  /// throws hybrid::Error for other dtypes.
  std::vector<float> toFloats() const;

private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::shared_ptr<void> owner_;
  void *data_ = nullptr;
};

/// Tensors by name: the inputs and outputs of an executable call.
using NamedTensors = std::map<std::string, HostTensor>;

/// `left` [rows, n] and `right` [rows, m] side by side: [rows, n + m] (a
/// prompt batch and the tokens generated after it, the sequences PPO trains
/// on). Throws hybrid::Error when they are not rank 2 of one dtype and row
/// count.
HostTensor concatColumns(const HostTensor &left, const HostTensor &right);

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
