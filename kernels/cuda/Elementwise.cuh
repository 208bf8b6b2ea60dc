// The elementwise engine: result[i] = fn(operands at their strided offsets)
// over a StridedPlan (broadcasting, transposed or sliced operands), in a
// grid-stride loop, kGroup results per thread where the innermost dimension
// allows (one offset computation, vector loads and stores where aligned).
// Binary, unary, clip, select and cast are functors
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

/// kGroup elements as one aligned word: a vector load or store.
template <typename S> struct alignas(sizeof(S) * kGroup) Group { S v[kGroup]; };

/// An operand's values for results [i, i + kGroup) of a grouped plan: from
/// `off` on, `inner` (0 or 1) apart; one vector load when `vector`.
template <typename S>
__device__ __forceinline__ void
loadGroup(const S *p, int64_t off, int64_t inner, bool vector, S (&v)[kGroup]) {
  if (vector) {
    const Group<S> g = *reinterpret_cast<const Group<S> *>(p + off);
#pragma unroll
    for (int e = 0; e < kGroup; ++e)
      v[e] = g.v[e];
    return;
  }
#pragma unroll
  for (int e = 0; e < kGroup; ++e)
    v[e] = p[off + e * inner];
}

template <typename R>
__device__ __forceinline__ void storeGroup(R *out, int64_t i, bool vector,
                                           const R (&v)[kGroup]) {
  if (vector) {
    Group<R> g;
#pragma unroll
    for (int e = 0; e < kGroup; ++e)
      g.v[e] = v[e];
    *reinterpret_cast<Group<R> *>(out + i) = g;
    return;
  }
#pragma unroll
  for (int e = 0; e < kGroup; ++e)
    out[i + e] = v[e];
}

/// Whether p may be read or written kGroup elements at a time.
template <typename S> inline bool groupAlignedPointer(const S *p) {
  return reinterpret_cast<uintptr_t>(p) % sizeof(Group<S>) == 0;
}

/// The mapping kernels: result i = fn(operands at their offsets), in a
/// grid-stride loop over single results, or over groups of kGroup results
/// (plan.grouped) that share one offset computation; operands and the
/// result move as vectors where plan.groupAligned (and outVector) allow.
template <typename R, typename A, typename Fn>
__global__ void map1Kernel(StridedPlan<1> plan, R *out, bool outVector,
                           const A *a, Fn fn) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (plan.grouped) {
    for (int64_t i = first * kGroup; i < plan.numel; i += stride * kGroup) {
      A va[kGroup];
      loadGroup(a, plan.offset(0, i), plan.inner[0], plan.groupAligned[0], va);
      R r[kGroup];
#pragma unroll
      for (int e = 0; e < kGroup; ++e)
        r[e] = fn(va[e]);
      storeGroup(out, i, outVector, r);
    }
    return;
  }
  for (int64_t i = first; i < plan.numel; i += stride)
    out[i] = fn(a[plan.offset(0, i)]);
}

template <typename R, typename A, typename B, typename Fn>
__global__ void map2Kernel(StridedPlan<2> plan, R *out, bool outVector,
                           const A *a, const B *b, Fn fn) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (plan.grouped) {
    for (int64_t i = first * kGroup; i < plan.numel; i += stride * kGroup) {
      int64_t off[2];
      plan.offsets(i, off);
      A va[kGroup];
      B vb[kGroup];
      loadGroup(a, off[0], plan.inner[0], plan.groupAligned[0], va);
      loadGroup(b, off[1], plan.inner[1], plan.groupAligned[1], vb);
      R r[kGroup];
#pragma unroll
      for (int e = 0; e < kGroup; ++e)
        r[e] = fn(va[e], vb[e]);
      storeGroup(out, i, outVector, r);
    }
    return;
  }
  for (int64_t i = first; i < plan.numel; i += stride) {
    int64_t off[2];
    plan.offsets(i, off);
    out[i] = fn(a[off[0]], b[off[1]]);
  }
}

template <typename R, typename A, typename B, typename C, typename Fn>
__global__ void map3Kernel(StridedPlan<3> plan, R *out, bool outVector,
                           const A *a, const B *b, const C *c, Fn fn) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (plan.grouped) {
    for (int64_t i = first * kGroup; i < plan.numel; i += stride * kGroup) {
      int64_t off[3];
      plan.offsets(i, off);
      A va[kGroup];
      B vb[kGroup];
      C vc[kGroup];
      loadGroup(a, off[0], plan.inner[0], plan.groupAligned[0], va);
      loadGroup(b, off[1], plan.inner[1], plan.groupAligned[1], vb);
      loadGroup(c, off[2], plan.inner[2], plan.groupAligned[2], vc);
      R r[kGroup];
#pragma unroll
      for (int e = 0; e < kGroup; ++e)
        r[e] = fn(va[e], vb[e], vc[e]);
      storeGroup(out, i, outVector, r);
    }
    return;
  }
  for (int64_t i = first; i < plan.numel; i += stride) {
    int64_t off[3];
    plan.offsets(i, off);
    out[i] = fn(a[off[0]], b[off[1]], c[off[2]]);
  }
}

/// Blocks for a plan's threads: one per result, or per group of kGroup.
template <int N> unsigned gridForPlan(const StridedPlan<N> &plan) {
  return gridFor(plan.grouped ? plan.numel / kGroup : plan.numel);
}

/// out[i] = fn(a[...]) over the plan, enqueued on `stream`.
template <typename R, typename A, typename Fn>
void launchMap(StridedPlan<1> plan, R *out, const A *a, Fn fn,
               cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  plan.groupAligned[0] = plan.groupAligned[0] && groupAlignedPointer(a);
  launch(map1Kernel<R, A, Fn>, gridForPlan(plan), kThreads, 0, stream, plan,
         out, groupAlignedPointer(out), a, fn);
  checkLaunch(kernel);
}

template <typename R, typename A, typename B, typename Fn>
void launchMap(StridedPlan<2> plan, R *out, const A *a, const B *b, Fn fn,
               cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  plan.groupAligned[0] = plan.groupAligned[0] && groupAlignedPointer(a);
  plan.groupAligned[1] = plan.groupAligned[1] && groupAlignedPointer(b);
  launch(map2Kernel<R, A, B, Fn>, gridForPlan(plan), kThreads, 0, stream, plan,
         out, groupAlignedPointer(out), a, b, fn);
  checkLaunch(kernel);
}

template <typename R, typename A, typename B, typename C, typename Fn>
void launchMap(StridedPlan<3> plan, R *out, const A *a, const B *b, const C *c,
               Fn fn, cudaStream_t stream, const char *kernel) {
  if (plan.numel == 0)
    return;
  plan.groupAligned[0] = plan.groupAligned[0] && groupAlignedPointer(a);
  plan.groupAligned[1] = plan.groupAligned[1] && groupAlignedPointer(b);
  plan.groupAligned[2] = plan.groupAligned[2] && groupAlignedPointer(c);
  launch(map3Kernel<R, A, B, C, Fn>, gridForPlan(plan), kThreads, 0, stream,
         plan, out, groupAlignedPointer(out), a, b, c, fn);
  checkLaunch(kernel);
}

/// The identity on words, for the data-movement kernels.
struct MoveWord {
  template <typename W> __device__ __forceinline__ W operator()(W w) const {
    return w;
  }
};

} // namespace hybrid::cuda
