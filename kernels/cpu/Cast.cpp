// cast: element type conversion between f32, i64 and bool.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

/// float -> i64 truncates toward zero (numpy astype, ONNX Cast). Values the
/// C++ conversion leaves undefined are pinned: NaN -> 0 and out-of-range
/// values saturate to the i64 limits.
inline int64_t floatToInt(float x) {
  if (x != x)
    return 0;
  if (x >= 9223372036854775807.0f)
    return std::numeric_limits<int64_t>::max();
  if (x < -9223372036854775808.0f)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

template <typename From, typename To, typename Op>
void convert(const ConstTensor &input, const Tensor &result, Op op) {
  const From *in = input.as<From>();
  To *out = result.as<To>();
  parallelChunks(input.numel(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = op(in[i]);
  });
}

} // namespace

void cast(const KernelCall &call) {
  expectArity(call, "cast", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "cast", "result");
  DType from = input.dtype, to = result.dtype;
  if (from == to) {
    if (input.numel() > 0)
      std::memcpy(result.data, input.data, input.numel() * dtypeSize(from));
    return;
  }
  // Bool reads any non-zero byte as true; float -> bool is x != 0, so NaN is
  // true (numpy).
  if (from == DType::F32 && to == DType::I64)
    return convert<float, int64_t>(input, result, floatToInt);
  if (from == DType::F32 && to == DType::Bool)
    return convert<float, uint8_t>(input, result,
                                   [](float x) -> uint8_t { return x != 0; });
  if (from == DType::I64 && to == DType::F32)
    return convert<int64_t, float>(
        input, result, [](int64_t x) { return static_cast<float>(x); });
  if (from == DType::I64 && to == DType::Bool)
    return convert<int64_t, uint8_t>(
        input, result, [](int64_t x) -> uint8_t { return x != 0; });
  if (from == DType::Bool && to == DType::F32)
    return convert<uint8_t, float>(input, result,
                                   [](uint8_t x) { return x ? 1.0f : 0.0f; });
  if (from == DType::Bool && to == DType::I64)
    return convert<uint8_t, int64_t>(
        input, result, [](uint8_t x) -> int64_t { return x ? 1 : 0; });
  fail("cast", std::string("unsupported conversion ") + dtypeName(from) +
                   " -> " + dtypeName(to));
}

} // namespace hybrid::cpu::kernels
