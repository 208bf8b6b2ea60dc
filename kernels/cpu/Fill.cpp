// fill: every element of the result set to one value, converted to the
// result's dtype once (as cast would convert it), for any dtype.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include "hybrid/Float16.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace hybrid::cpu::kernels {
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

template <typename T> void fillWith(const Tensor &result, T value) {
  T *out = result.as<T>();
  parallelChunks(result.numel(), 1, [&](int64_t begin, int64_t end) {
    std::fill(out + begin, out + end, value);
  });
}

} // namespace

void fill(const KernelCall &call) {
  expectArity(call, "fill", 0, 1);
  const Tensor &result = call.results[0];
  const double v = call.attrs<ops::Fill>().value;
  switch (result.dtype) {
  case DType::F32:
    return fillWith(result, static_cast<float>(v));
  case DType::BF16:
    return fillWith(result, floatToBf16(static_cast<float>(v)));
  case DType::F16:
    return fillWith(result, floatToF16(static_cast<float>(v)));
  case DType::I64:
    return fillWith(result, toInteger<int64_t>(v));
  case DType::I32:
    return fillWith(result, toInteger<int32_t>(v));
  case DType::Bool:
    return fillWith(result, static_cast<uint8_t>(v != 0));
  }
  fail("fill",
       std::string("unsupported element type ") + dtypeName(result.dtype));
}

} // namespace hybrid::cpu::kernels
