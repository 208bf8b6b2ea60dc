// What layer_norm, rms_norm and layer_norm_grad share on the device (the
// call's problem is kernels/common/Norm.h's): norm weights that do
// not have the row's own shape expanded to f32 in scratch, a block-wide
// double sum, staging a row into shared memory as f32 with 16-byte loads
// where aligned (the statistics and the output then read it from there,
// not from global memory again), and for few rows (a decode step's)
// holding each row, its weight and bias in registers, every load issued
// before the first sum.
#pragma once

#include "Elementwise.cuh"

#include "common/Norm.h"

#include <algorithm>
#include <type_traits>

namespace hybrid::cuda {

/// Scratch bytes for one expanded weight (256-byte aligned slots).
inline size_t expandedWeightBytes(int64_t n) {
  return (static_cast<size_t>(n) * sizeof(float) + 255) / 256 * 256;
}

template <typename S>
__global__ void expandWeightKernel(StridedPlan<1> plan, const S *w,
                                   float *out) {
  awaitInputs();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < plan.numel; i += stride)
    out[i] = toFloat(w[plan.offset(0, i)]);
}

/// Writes weight `w` broadcast to the normalised shape into `out` (n f32).
template <typename S>
void expandWeight(const ConstTensor &w, const NormProblem &s, float *out,
                  cudaStream_t stream, const char *kernel) {
  const Shape own = trimmedShape(w.shape, s.norm.size());
  const StridedPlan<1> plan = broadcastPlan<1>(s.norm, {&own}, kernel);
  launch(expandWeightKernel<S>, gridFor(plan.numel), kThreads, 0, stream, plan,
         static_cast<const S *>(w.data), out);
  checkLaunch(kernel);
}

/// Block-wide sum of a double (every thread gets the total). `shared` holds
/// 32 doubles.
__device__ __forceinline__ double blockSum(double v, double *shared) {
  v = warpSum(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // `shared` may still be read from the previous sum
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w)
    total += shared[w];
  return total;
}

/// Four consecutive stored elements as f32 (one 16- or 8-byte load).
__device__ __forceinline__ void load4(const float *p, float (&v)[4]) {
  const float4 q = *reinterpret_cast<const float4 *>(p);
  v[0] = q.x;
  v[1] = q.y;
  v[2] = q.z;
  v[3] = q.w;
}
template <typename S>
__device__ __forceinline__ void load4(const S *p, float (&v)[4]) {
  const uint2 q = *reinterpret_cast<const uint2 *>(p);
  S h[4];
  memcpy(h, &q, sizeof(q));
#pragma unroll
  for (int k = 0; k < 4; ++k)
    v[k] = toFloat(h[k]);
}

/// Copies row x[0, n) into `row` (when not null) as f32 and returns this
/// thread's sum of the values (`square`: of their squares), in double.
template <typename S>
__device__ double stageRow(const S *x, int64_t n, float *row, bool square) {
  double acc = 0;
  const bool vector =
      n % 4 == 0 && reinterpret_cast<uintptr_t>(x) % (4 * sizeof(S)) == 0;
  if (vector) {
    for (int64_t i = 4 * threadIdx.x; i < n; i += 4 * blockDim.x) {
      float v[4];
      load4(x + i, v);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if (row)
          row[i + k] = v[k];
        acc += square ? static_cast<double>(v[k]) * v[k] : v[k];
      }
    }
  } else {
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = toFloat(x[i]);
      if (row)
        row[i] = v;
      acc += square ? static_cast<double>(v) * v : v;
    }
  }
  return acc;
}

// ---------------------------------------------------------------------------
// Few rows: a block per row, the row in registers.

/// Row counts up to which the register kernels run (a decode batch): with
/// one block per row the staged kernels wait on memory once per loop
/// iteration, which a handful of blocks cannot hide.
constexpr int64_t kFewRows = 256;
/// The longest row held in registers: 32 elements (8 chunks of 4) per
/// thread, 256 threads (row, weight and bias take ~100 of a thread's 255
/// registers).
constexpr int kRowThreads = 256;
constexpr int64_t kRegisterRow = 32 * kRowThreads;

/// Index in the row of element j (< 4 C) of this thread: chunks of 4
/// consecutive elements interleaved over the threads (one 16- or 8-byte
/// load each) when `Vec`, else single elements; consecutive threads read
/// consecutive addresses either way.
template <bool Vec> __device__ __forceinline__ int ownedIndex(int j) {
  const int t = threadIdx.x, threads = blockDim.x;
  return Vec ? 4 * (t + j / 4 * threads) + j % 4 : t + j * threads;
}

/// This thread's elements of p[0, n) as f32, `absent` past n.
template <int C, bool Vec, typename T>
__device__ __forceinline__ void loadOwned(const T *p, int n, float (&v)[4 * C],
                                          float absent) {
#pragma unroll
  for (int k = 0; k < C; ++k) {
    if constexpr (Vec) {
      const int e = ownedIndex<true>(4 * k);
      float chunk[4] = {absent, absent, absent, absent};
      if (e < n) // n % 4 == 0: the whole chunk is in the row
        load4(p + e, chunk);
#pragma unroll
      for (int q = 0; q < 4; ++q)
        v[4 * k + q] = chunk[q];
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int e = ownedIndex<false>(4 * k + q);
        v[4 * k + q] = e < n ? toFloat(p[e]) : absent;
      }
    }
  }
}

/// A norm weight as the row kernels read it: in place (storage type S) or
/// expanded (f32), or absent (1 / 0).
template <typename S> struct NormWeight {
  const S *direct = nullptr;
  const float *expanded = nullptr;
  __device__ __forceinline__ float at(int64_t i, float absent) const {
    return expanded ? expanded[i] : direct ? toFloat(direct[i]) : absent;
  }
  __device__ __forceinline__ bool present() const { return expanded || direct; }
  /// This thread's elements (loadOwned).
  template <int C, bool Vec>
  __device__ __forceinline__ void owned(int n, float (&v)[4 * C],
                                        float absent) const {
    if (expanded) {
      loadOwned<C, Vec>(expanded, n, v, absent);
    } else if (direct) {
      loadOwned<C, Vec>(direct, n, v, absent);
    } else {
#pragma unroll
      for (int j = 0; j < 4 * C; ++j)
        v[j] = absent;
    }
  }
};

/// How the register kernels run rows of n elements: `chunks` of 4 per
/// thread (1, 2, 4 or 8; 0: the row is too long or the rows too many, the
/// staged kernels run them) over `threads` (a multiple of 32, at most
/// kRowThreads).
struct RowsInRegisters {
  int chunks = 0, threads = 0;
};

/// The register layout of one row of n elements, whatever the row count
/// (layer_norm_grad holds every row in registers).
inline RowsInRegisters rowInRegisters(int64_t n) {
  RowsInRegisters r;
  if (n > kRegisterRow || n < 1)
    return r;
  for (int chunks = 1; chunks <= 8; chunks *= 2) {
    const int64_t threads =
        ((n + 4 * chunks - 1) / (4 * chunks) + 31) / 32 * 32;
    if (threads <= kRowThreads) {
      r.chunks = chunks;
      r.threads = static_cast<int>(threads);
      break;
    }
  }
  return r;
}

inline RowsInRegisters rowsInRegisters(int64_t rows, int64_t n) {
  return rows > kFewRows ? RowsInRegisters{} : rowInRegisters(n);
}

/// Whether the register kernels may load chunks of 4 (one word each): whole
/// chunks per row and aligned tensors (expanded weights always are).
template <typename S>
bool rowChunksAligned(const void *x, int64_t n, const NormWeight<S> &weight,
                      const NormWeight<S> &bias) {
  auto aligned = [](const void *p) {
    return reinterpret_cast<uintptr_t>(p) % (4 * sizeof(S)) == 0;
  };
  return n % 4 == 0 && aligned(x) && aligned(weight.direct) &&
         aligned(bias.direct);
}

/// Calls fn(std::integral_constant<int, C>, std::bool_constant<Vec>) with
/// the register kernels' template arguments.
template <typename Fn>
void visitRowsInRegisters(int chunks, bool vec, Fn &&fn) {
  auto withVec = [&](auto c) {
    if (vec)
      fn(c, std::true_type{});
    else
      fn(c, std::false_type{});
  };
  switch (chunks) {
  case 1:
    return withVec(std::integral_constant<int, 1>{});
  case 2:
    return withVec(std::integral_constant<int, 2>{});
  case 4:
    return withVec(std::integral_constant<int, 4>{});
  default:
    return withVec(std::integral_constant<int, 8>{});
  }
}

// ---------------------------------------------------------------------------

/// Rows up to this many elements are staged in shared memory (44 KB of f32:
/// with the reduction slots it stays under the 48 KB a block gets without
/// opting in); longer rows are read from global memory again.
constexpr int64_t kStagedRow = 11 * 1024;

/// Threads per row: enough to keep several loads in flight per thread.
inline int normThreads(int64_t n) {
  return n <= 1024 ? 128 : n <= 4096 ? 256 : 512;
}

} // namespace hybrid::cuda
