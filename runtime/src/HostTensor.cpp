// Host tensor storage.
#include "hybrid/HostTensor.h"

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

} // namespace hybrid
