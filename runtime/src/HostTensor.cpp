// Host tensor storage.
#include "hybrid/HostTensor.h"

#include "hybrid/Float16.h"
#include "hybrid/SizeMath.h"

#include <cstdlib>
#include <cstring>

namespace hybrid {

HostTensor HostTensor::allocate(DType dtype, Shape shape) {
  size_t bytes = detail::tensorBytes(dtype, shape, "tensor");
  // aligned_alloc wants a multiple of the alignment; never ask for 0 bytes so
  // that even empty tensors have a distinct, valid address.
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw Error("out of host memory allocating a " +
                std::string(dtypeName(dtype)) + " tensor of shape " +
                shapeToString(shape) + " (" + std::to_string(bytes) +
                " bytes)");
  std::memset(p, 0, rounded);
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.owner_ = std::shared_ptr<void>(p, [](void *q) { std::free(q); });
  t.data_ = p;
  return t;
}

HostTensor HostTensor::borrow(DType dtype, Shape shape, void *data) {
  detail::tensorBytes(dtype, shape, "tensor"); // validates the shape
  HostTensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

HostTensor HostTensor::fromFloats(DType dtype, Shape shape,
                                  const std::vector<float> &values) {
  if (!isFloatDType(dtype))
    throw Error(std::string("HostTensor::fromFloats: ") + dtypeName(dtype) +
                " is not a float dtype");
  if (numElements(shape) != static_cast<int64_t>(values.size()))
    throw Error("HostTensor::fromFloats: shape " + shapeToString(shape) +
                " holds " + std::to_string(numElements(shape)) +
                " elements, got " + std::to_string(values.size()));
  HostTensor t = allocate(dtype, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32)
      t.as<float>()[i] = values[i];
    else if (dtype == DType::BF16)
      t.as<uint16_t>()[i] = floatToBf16(values[i]);
    else
      t.as<uint16_t>()[i] = floatToF16(values[i]);
  }
  return t;
}

std::vector<float> HostTensor::toFloats() const {
  size_t n = static_cast<size_t>(numel());
  std::vector<float> out(n);
  switch (dtype_) {
  case DType::F32:
    for (size_t i = 0; i < n; ++i)
      out[i] = as<float>()[i];
    return out;
  case DType::BF16:
    for (size_t i = 0; i < n; ++i)
      out[i] = bf16ToFloat(as<uint16_t>()[i]);
    return out;
  case DType::F16:
    for (size_t i = 0; i < n; ++i)
      out[i] = f16ToFloat(as<uint16_t>()[i]);
    return out;
  default:
    throw Error(std::string("HostTensor::toFloats: a ") + dtypeName(dtype_) +
                " tensor is not a float tensor");
  }
}

HostTensor concatColumns(const HostTensor &left, const HostTensor &right) {
  const Shape &a = left.shape(), &b = right.shape();
  if (a.size() != 2 || b.size() != 2 || a[0] != b[0] ||
      left.dtype() != right.dtype())
    throw Error("concatColumns: want two [rows, n] tensors of one dtype and "
                "row count, got " +
                std::string(dtypeName(left.dtype())) + " " + shapeToString(a) +
                " and " + dtypeName(right.dtype()) + " " + shapeToString(b));
  HostTensor out = HostTensor::allocate(left.dtype(), {a[0], a[1] + b[1]});
  const size_t element = dtypeSize(left.dtype());
  const size_t leftRow = static_cast<size_t>(a[1]) * element,
               rightRow = static_cast<size_t>(b[1]) * element;
  auto *dst = static_cast<uint8_t *>(out.data());
  const auto *l = static_cast<const uint8_t *>(left.data());
  const auto *r = static_cast<const uint8_t *>(right.data());
  for (int64_t row = 0; row < a[0]; ++row) {
    if (leftRow)
      std::memcpy(dst, l + row * leftRow, leftRow);
    if (rightRow)
      std::memcpy(dst + leftRow, r + row * rightRow, rightRow);
    dst += leftRow + rightRow;
  }
  return out;
}

} // namespace hybrid
