// cast: element type conversion between all six dtypes. Floats go through
// f32 (bf16/f16 round to nearest even); float -> integer truncates toward
// zero like C++ and ONNX, with NaN -> 0 and saturation where C++ leaves the
// conversion undefined; anything -> bool is x != 0.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

/// float -> integer T, truncating toward zero; values the C++ conversion
/// leaves undefined are pinned: NaN -> 0, out-of-range values saturate.
template <typename T> T floatToInt(float x) {
  if (x != x)
    return 0;
  // 2^63 and 2^31 are exact floats; max() is not.
  constexpr float limit = -static_cast<float>(std::numeric_limits<T>::min());
  if (x >= limit)
    return std::numeric_limits<T>::max();
  if (x < -limit)
    return std::numeric_limits<T>::min();
  return static_cast<T>(x);
}

/// The value of an element of storage type From, as To.
template <typename From, typename To> To convertElement(From x) {
  if constexpr (std::is_same_v<To, uint8_t>) { // bool
    if constexpr (kIsFloatStorage<From>)
      return toFloat(x) != 0;
    else
      return x != 0;
  } else if constexpr (kIsFloatStorage<To>) {
    if constexpr (kIsFloatStorage<From>)
      return fromFloat<To>(toFloat(x));
    else if constexpr (std::is_same_v<From, uint8_t>)
      return fromFloat<To>(x ? 1.0f : 0.0f);
    else
      return fromFloat<To>(static_cast<float>(x)); // i64 -> f32 rounds
  } else {                                         // integer
    if constexpr (kIsFloatStorage<From>)
      return floatToInt<To>(toFloat(x));
    else if constexpr (std::is_same_v<From, uint8_t>)
      return x ? 1 : 0;
    else
      return static_cast<To>(x); // narrowing keeps the low bits (wraps)
  }
}

template <typename From, typename To>
void convert(const ConstTensor &input, const Tensor &result) {
  const From *in = input.as<From>();
  To *out = result.as<To>();
  parallelChunks(input.numel(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = convertElement<From, To>(in[i]);
  });
}

/// Calls fn(T{}) with the storage type of any dtype (bool as uint8_t).
template <typename Fn> void visitAny(DType dt, Fn &&fn) {
  switch (dt) {
  case DType::F32:
    return fn(float{});
  case DType::BF16:
    return fn(Bf16{});
  case DType::F16:
    return fn(F16{});
  case DType::I64:
    return fn(int64_t{});
  case DType::I32:
    return fn(int32_t{});
  case DType::Bool:
    return fn(uint8_t{});
  }
  failUnsupported("cast", dt, "operand", "a valid dtype");
}

} // namespace

void cast(const KernelCall &call) {
  expectArity(call, "cast", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "cast", "result");
  const DType from = input.dtype, to = result.dtype;
  if (!isValidDType(static_cast<uint8_t>(from)) ||
      !isValidDType(static_cast<uint8_t>(to)))
    fail("cast", "invalid element type");
  if (from == to) {
    if (input.numel() > 0)
      std::memcpy(result.data, input.data, input.numel() * dtypeSize(from));
    return;
  }
  visitAny(from, [&](auto fromZero) {
    visitAny(to, [&](auto toZero) {
      convert<decltype(fromZero), decltype(toZero)>(input, result);
    });
  });
}

} // namespace hybrid::cpu::kernels
