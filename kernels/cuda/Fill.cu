// fill: every element of the result set to one value, converted to the
// result's dtype once on the host (as cast would convert it), any dtype.
#include "Device.cuh"
#include "Kernels.h"

#include "hybrid/Float16.h"

#include <cstring>
#include <limits>

namespace hybrid::cuda::kernels {
namespace {

template <typename W> __global__ void fillKernel(W *out, int64_t n, W value) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride)
    out[i] = value;
}

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

template <typename W> W bitsOf(const void *value) {
  W w;
  std::memcpy(&w, value, sizeof(W));
  return w;
}

} // namespace

void fill(const CudaCall &call) {
  expectArity(call, "fill", 0, 1);
  const Tensor &result = call.results[0];
  const double v = call.attrs<ops::Fill>().value;
  // The value's bytes in the result's dtype.
  uint64_t bits = 0;
  switch (result.dtype) {
  case DType::F32: {
    const float f = static_cast<float>(v);
    std::memcpy(&bits, &f, 4);
    break;
  }
  case DType::BF16: {
    const uint16_t h = floatToBf16(static_cast<float>(v));
    std::memcpy(&bits, &h, 2);
    break;
  }
  case DType::F16: {
    const uint16_t h = floatToF16(static_cast<float>(v));
    std::memcpy(&bits, &h, 2);
    break;
  }
  case DType::I64: {
    const int64_t i = toInteger<int64_t>(v);
    std::memcpy(&bits, &i, 8);
    break;
  }
  case DType::I32: {
    const int32_t i = toInteger<int32_t>(v);
    std::memcpy(&bits, &i, 4);
    break;
  }
  case DType::Bool:
    bits = v != 0;
    break;
  default:
    fail("fill",
         std::string("unsupported element type ") + dtypeName(result.dtype));
  }
  const int64_t n = result.numel();
  if (n == 0)
    return;
  if (bits == 0) { // zeros of every dtype are zero bytes
    checkCuda(cudaMemsetAsync(result.data, 0, n * dtypeSize(result.dtype),
                              streamOf(call)),
              "fill", "cudaMemsetAsync");
    return;
  }
  visitWord(dtypeSize(result.dtype), [&](auto zero) {
    using W = decltype(zero);
    launch(fillKernel<W>, gridFor(n), kThreads, 0, streamOf(call),
           static_cast<W *>(result.data), n, bitsOf<W>(&bits));
  });
  checkLaunch("fill");
}

} // namespace hybrid::cuda::kernels
