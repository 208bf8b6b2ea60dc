// GemmProblem's epilogue for one element, shared by our own product
// kernels (SkinnyGemm.cu, StreamGemv.cu): the f32 sum plus the bias, the
// activation, plus the residual, rounded once to the storage type.
#pragma once

#include "Activation.cuh"
#include "Device.cuh"

namespace hybrid::cuda {

/// out[m * ldc + n] = round(act(v + bias[n]) + residual[m * ldr + n]); a
/// null bias or residual is left out.
template <typename S>
__device__ __forceinline__ void
storeWithEpilogue(float v, int64_t m, int64_t n, const void *bias,
                  Activation activation, const void *residual, int64_t ldr,
                  void *out, int64_t ldc) {
  if (bias)
    v += toFloat(static_cast<const S *>(bias)[n]);
  v = activate(activation, v);
  if (residual)
    v += toFloat(static_cast<const S *>(residual)[m * ldr + n]);
  static_cast<S *>(out)[m * ldc + n] = fromFloat<S>(v);
}

} // namespace hybrid::cuda
