// clip: clamp f32 or i64 elements to the optional [min, max] attributes.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

/// Lower bound first, then upper, so min > max gives max everywhere (ONNX,
/// numpy.clip); NaN elements stay NaN.
template <typename T>
void clamp(const ConstTensor &input, const Tensor &result, T lo, T hi) {
  const T *in = input.as<T>();
  T *out = result.as<T>();
  parallelChunks(input.numel(), 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T v = in[i] < lo ? lo : in[i];
      out[i] = v > hi ? hi : v;
    }
  });
}

/// A float bound as the tightest i64 bound: ceil for a lower bound, floor for
/// an upper one, saturated to the i64 range.
int64_t integerBound(double bound, bool lower) {
  double b = lower ? std::ceil(bound) : std::floor(bound);
  if (b >= 9223372036854775807.0)
    return std::numeric_limits<int64_t>::max();
  if (b <= -9223372036854775808.0)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(b);
}

} // namespace

void clip(const KernelCall &call) {
  expectArity(call, "clip", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "clip", "result");
  expectDType(result, input.dtype, "clip", "result");
  const ops::Clip &attrs = call.attrs<ops::Clip>();
  const bool hasMin = attrs.min.has_value(), hasMax = attrs.max.has_value();
  const double lo = attrs.min.value_or(0), hi = attrs.max.value_or(0);
  if ((hasMin && std::isnan(lo)) || (hasMax && std::isnan(hi)))
    fail("clip", "NaN bound");
  switch (input.dtype) {
  case DType::F32:
    return clamp<float>(input, result,
                        hasMin ? static_cast<float>(lo)
                               : -std::numeric_limits<float>::infinity(),
                        hasMax ? static_cast<float>(hi)
                               : std::numeric_limits<float>::infinity());
  case DType::I64:
    return clamp<int64_t>(
        input, result,
        hasMin ? integerBound(lo, true) : std::numeric_limits<int64_t>::min(),
        hasMax ? integerBound(hi, false) : std::numeric_limits<int64_t>::max());
  default:
    break;
  }
  fail("clip", std::string("unsupported element type ") +
                   dtypeName(input.dtype) + " (expected f32 or i64)");
}

} // namespace hybrid::cpu::kernels
