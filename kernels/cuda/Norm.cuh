// What layer_norm and rms_norm share: the normalised shape of a call, norm
// weights that do not have the row's own shape expanded to f32 in scratch,
// a block-wide double sum, and staging a row into shared memory as f32 with
// 16-byte loads where aligned (the statistics and the output then read it
// from there, not from global memory again).
#pragma once

#include "Elementwise.cuh"

#include <algorithm>

namespace hybrid::cuda {

struct NormShape {
  Shape norm;
  int64_t rows = 0, n = 0;
};

inline NormShape normShape(const ConstTensor &input, int64_t axisAttr,
                           const char *kernel) {
  const int64_t rank = input.rank();
  if (rank == 0)
    fail(kernel, "input must have rank >= 1");
  const int64_t axis = normalizeAxis(axisAttr, rank, kernel);
  NormShape s;
  s.norm.assign(input.shape.begin() + axis, input.shape.end());
  s.n = numElements(s.norm);
  s.rows = product(input.shape, 0, axis);
  return s;
}

/// t's shape without leading size-1 dimensions beyond `rank` (a weight
/// [1, D] for a norm over [D]).
inline Shape trimmedShape(const Shape &s, size_t rank) {
  size_t lead = 0;
  while (s.size() - lead > rank && s[lead] == 1)
    ++lead;
  return Shape(s.begin() + lead, s.end());
}

/// Whether a norm weight is read in place (it has the row's layout) rather
/// than expanded into scratch; throws when it does not broadcast.
inline bool weightInPlace(const ConstTensor &w, const NormShape &s,
                          const char *kernel, const char *what) {
  const Shape own = trimmedShape(w.shape, s.norm.size());
  bool ok = own.size() <= s.norm.size();
  for (size_t i = 0; ok && i < own.size(); ++i) {
    const int64_t d = own[i], o = s.norm[s.norm.size() - own.size() + i];
    ok = d == o || d == 1;
  }
  if (!ok)
    fail(kernel, std::string(what) + " of shape " + shapeToString(w.shape) +
                     " does not broadcast to " + shapeToString(s.norm));
  return w.numel() == s.n;
}

/// Scratch bytes for one expanded weight (256-byte aligned slots).
inline size_t expandedWeightBytes(int64_t n) {
  return (static_cast<size_t>(n) * sizeof(float) + 255) / 256 * 256;
}

template <typename S>
__global__ void expandWeightKernel(StridedPlan<1> plan, const S *w,
                                   float *out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < plan.numel; i += stride)
    out[i] = toFloat(w[plan.offset(0, i)]);
}

/// Writes weight `w` broadcast to the normalised shape into `out` (n f32).
template <typename S>
void expandWeight(const ConstTensor &w, const NormShape &s, float *out,
                  cudaStream_t stream, const char *kernel) {
  const Shape own = trimmedShape(w.shape, s.norm.size());
  const StridedPlan<1> plan = broadcastPlan<1>(s.norm, {&own}, kernel);
  expandWeightKernel<<<gridFor(plan.numel), kThreads, 0, stream>>>(
      plan, static_cast<const S *>(w.data), out);
  checkLaunch(kernel);
}

/// A norm weight as the row kernel reads it: in place (storage type S) or
/// expanded (f32), or absent (1 / 0).
template <typename S> struct NormWeight {
  const S *direct = nullptr;
  const float *expanded = nullptr;
  __device__ __forceinline__ float at(int64_t i, float absent) const {
    return expanded ? expanded[i] : direct ? toFloat(direct[i]) : absent;
  }
  __device__ __forceinline__ bool present() const { return expanded || direct; }
};

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

/// Rows up to this many elements are staged in shared memory (44 KB of f32:
/// with the reduction slots it stays under the 48 KB a block gets without
/// opting in); longer rows are read from global memory again.
constexpr int64_t kStagedRow = 11 * 1024;

/// Threads per row: enough to keep several loads in flight per thread.
inline int normThreads(int64_t n) {
  return n <= 1024 ? 128 : n <= 4096 ? 256 : 512;
}

} // namespace hybrid::cuda
