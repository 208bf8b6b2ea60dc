// The elementwise engine: result[i] = fn(operands at their strided offsets)
// over a StridedPlan (broadcasting, transposed or sliced operands), in a
// grid-stride loop. Binary, unary, clip, select and cast are functors
// handed to it; so are the data-movement copies (transpose, slice,
// broadcast_to), with an identity functor on words.
#pragma once

#include "Device.cuh"
#include "Strided.h"

namespace hybrid::cuda {

/// Operand values as kernels compute with them: floats widen to f32,
/// integers and bool stay.
template <typename S> struct ComputeOf { using type = S; };
template <> struct ComputeOf<Bf16> { using type = float; };
template <> struct ComputeOf<F16> { using type = float; };
template <typename S> using Compute = typename ComputeOf<S>::type;

template <typename S> __device__ __forceinline__ Compute<S> load(S x) {
  if constexpr (kIsFloat<S>)
    return toFloat(x);
  else
    return x;
}
/// A computed value stored as R (floats round once).
template <typename R, typename V> __device__ __forceinline__ R store(V v) {
  if constexpr (kIsFloat<R>)
    return fromFloat<R>(static_cast<float>(v));
  else
    return static_cast<R>(v);
}

template <typename R, typename A, typename Fn>
__global__ void map1Kernel(StridedPlan<1> plan, R *out, const A *a, Fn fn) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < plan.numel; i += stride)
    out[i] = fn(a[plan.offset(0, i)]);
}

template <typename R, typename A, typename B, typename Fn>
__global__ void map2Kernel(StridedPlan<2> plan, R *out, const A *a, const B *b,
                           Fn fn) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < plan.numel; i += stride) {
    int64_t off[2];
    plan.offsets(i, off);
    out[i] = fn(a[off[0]], b[off[1]]);
  }
}

template <typename R, typename A, typename B, typename C, typename Fn>
__global__ void map3Kernel(StridedPlan<3> plan, R *out, const A *a, const B *b,
                           const C *c, Fn fn) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < plan.numel; i += stride) {
    int64_t off[3];
    plan.offsets(i, off);
    out[i] = fn(a[off[0]], b[off[1]], c[off[2]]);
  }
}

/// out[i] = fn(a[...]) over the plan, enqueued on `stream`.
template <typename R, typename A, typename Fn>
void launchMap(const StridedPlan<1> &plan, R *out, const A *a, Fn fn,
               cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  launch(map1Kernel<R, A, Fn>, gridFor(plan.numel), kThreads, 0, stream, plan,
         out, a, fn);
  checkLaunch(kernel);
}

template <typename R, typename A, typename B, typename Fn>
void launchMap(const StridedPlan<2> &plan, R *out, const A *a, const B *b,
               Fn fn, cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  launch(map2Kernel<R, A, B, Fn>, gridFor(plan.numel), kThreads, 0, stream,
         plan, out, a, b, fn);
  checkLaunch(kernel);
}

template <typename R, typename A, typename B, typename C, typename Fn>
void launchMap(const StridedPlan<3> &plan, R *out, const A *a, const B *b,
               const C *c, Fn fn, cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  launch(map3Kernel<R, A, B, C, Fn>, gridFor(plan.numel), kThreads, 0, stream,
         plan, out, a, b, c, fn);
  checkLaunch(kernel);
}

/// The identity on words, for the data-movement kernels.
struct MoveWord {
  template <typename W> __device__ __forceinline__ W operator()(W w) const {
    return w;
  }
};

} // namespace hybrid::cuda
