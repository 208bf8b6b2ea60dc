// fill's value in the result's dtype (see Fill.h).
#include "common/Fill.h"

#include "common/Check.h"
#include "hybrid/Float16.h"

#include <cstring>
#include <limits>

namespace hybrid::kernels {
namespace {

/// A double as an integer of type T: truncated toward zero, NaN -> 0,
/// saturated at the limits (cast's float -> int rules).
template <typename T> T toInteger(double v) {
  if (v != v)
    return 0;
  if (v >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  if (v <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  return static_cast<T>(v);
}

template <typename T> uint64_t bitsOf(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

} // namespace

FillProblem describeFill(const FillArgs &a) {
  const double v = a.attrs.value;
  FillProblem p;
  switch (a.out.dtype) {
  case DType::F32:
    p.bits = bitsOf(static_cast<float>(v));
    break;
  case DType::BF16:
    p.bits = bitsOf(floatToBf16(static_cast<float>(v)));
    break;
  case DType::F16:
    p.bits = bitsOf(floatToF16(static_cast<float>(v)));
    break;
  case DType::I64:
    p.bits = bitsOf(toInteger<int64_t>(v));
    break;
  case DType::I32:
    p.bits = bitsOf(toInteger<int32_t>(v));
    break;
  case DType::Bool:
    p.bits = v != 0;
    break;
  default:
    fail("fill",
         std::string("unsupported element type ") + dtypeName(a.out.dtype));
  }
  p.n = a.out.numel();
  p.elementSize = dtypeSize(a.out.dtype);
  return p;
}

} // namespace hybrid::kernels
