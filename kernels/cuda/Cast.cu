// cast: element type conversion between all six dtypes, as the CPU kernel
// converts: floats through f32 (bf16/f16 round to nearest even); float ->
// integer truncates toward zero with NaN -> 0 and saturation; integer
// narrowing keeps the low bits; anything -> bool is x != 0.
#include "Elementwise.cuh"
#include "Kernels.h"

#include <limits>
#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

template <typename T> __device__ __forceinline__ T floatToInt(float x) {
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

template <typename From, typename To> struct Convert {
  __device__ To operator()(From x) const {
    if constexpr (std::is_same_v<To, uint8_t>) { // bool
      if constexpr (kIsFloat<From>)
        return toFloat(x) != 0;
      else
        return x != 0;
    } else if constexpr (kIsFloat<To>) {
      if constexpr (kIsFloat<From>)
        return fromFloat<To>(toFloat(x));
      else if constexpr (std::is_same_v<From, uint8_t>)
        return fromFloat<To>(x ? 1.0f : 0.0f);
      else
        return fromFloat<To>(static_cast<float>(x)); // i64 -> f32 rounds
    } else {                                         // integer
      if constexpr (kIsFloat<From>)
        return floatToInt<To>(toFloat(x));
      else if constexpr (std::is_same_v<From, uint8_t>)
        return x ? 1 : 0;
      else
        return static_cast<To>(x);
    }
  }
};

} // namespace

void cast(const CudaCall &call) {
  expectArity(call, "cast", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "cast", "result");
  const DType from = input.dtype, to = result.dtype;
  if (input.numel() == 0)
    return;
  if (from == to) {
    checkCuda(cudaMemcpyAsync(result.data, input.data,
                              input.numel() * dtypeSize(from),
                              cudaMemcpyDeviceToDevice, streamOf(call)),
              "cast", "cudaMemcpyAsync");
    return;
  }
  const StridedPlan<1> plan =
      broadcastPlan<1>(input.shape, {&input.shape}, "cast");
  visitAny(from, "cast", "input", [&](auto fromZero) {
    visitAny(to, "cast", "result", [&](auto toZero) {
      using From = decltype(fromZero);
      using To = decltype(toZero);
      launchMap(plan, static_cast<To *>(result.data),
                static_cast<const From *>(input.data), Convert<From, To>{},
                streamOf(call), "cast");
    });
  });
}

} // namespace hybrid::cuda::kernels
