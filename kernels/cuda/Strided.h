// Strided views for the elementwise engine and the data-movement kernels: a
// result walked in row-major order, and for each operand the offset of the
// element that lands at result index i (NumPy broadcasting, transposes,
// slices), with neighbouring dimensions merged so that the common cases
// (equal shapes, a scalar, a bias row) cost little index arithmetic.
#pragma once

#include "hybrid/Types.h"

#include <cstdint>
#include <initializer_list>

#ifdef __CUDACC__
#define HYBRID_HD __host__ __device__ __forceinline__
#define HYBRID_UNROLL _Pragma("unroll")
#else
#define HYBRID_HD inline
#define HYBRID_UNROLL
#endif

namespace hybrid::cuda {

/// Merged dimensions a plan holds; more is an error (after merging, real
/// tensors have two or three).
constexpr int kMaxDims = 10;
/// Results an elementwise thread computes from one offset computation (see
/// StridedPlan::grouped).
constexpr int kGroup = 4;

/// Operand `k`'s element for result index i is at offset(k, i). Plain old
/// data: passed to kernels by value.
template <int N> struct StridedPlan {
  int rank = 0; ///< merged dimensions, outermost first
  int64_t numel = 0;
  int64_t dims[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
  /// True when no index arithmetic is needed: each operand is contiguous
  /// like the result (unit 1) or a single element (unit 0).
  bool direct = true;
  int64_t unit[N] = {};
  /// kGroup consecutive results can share one offset computation: the
  /// innermost merged dimension is a multiple of kGroup and every operand
  /// steps 0 or 1 along it (inner[k]).
  bool grouped = false;
  int64_t inner[N] = {};
  /// Operand k's groups start at multiples of kGroup elements (it steps 1
  /// along the innermost dimension and by multiples of kGroup along the
  /// others), so with an aligned base they load as one vector.
  bool groupAligned[N] = {};
  /// numel fits 32 bits: offsets divide in 32 bits.
  bool small = false;

  HYBRID_HD int64_t offset(int k, int64_t i) const {
    if (direct)
      return i * unit[k];
    if (small) {
      int64_t off = 0;
      uint32_t j = static_cast<uint32_t>(i);
      HYBRID_UNROLL
      for (int d = kMaxDims - 1; d >= 0; --d) {
        if (d < rank) {
          const uint32_t q = j / static_cast<uint32_t>(dims[d]);
          off += static_cast<int64_t>(j - q * static_cast<uint32_t>(dims[d])) *
                 strides[k][d];
          j = q;
        }
      }
      return off;
    }
    int64_t off = 0;
    HYBRID_UNROLL
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < rank) {
        const int64_t q = i / dims[d];
        off += (i - q * dims[d]) * strides[k][d];
        i = q;
      }
    }
    return off;
  }
  /// All N offsets at once (one division per dimension).
  HYBRID_HD void offsets(int64_t i, int64_t (&out)[N]) const {
    if (direct) {
      HYBRID_UNROLL
      for (int k = 0; k < N; ++k)
        out[k] = i * unit[k];
      return;
    }
    HYBRID_UNROLL
    for (int k = 0; k < N; ++k)
      out[k] = 0;
    if (small) {
      uint32_t j = static_cast<uint32_t>(i);
      HYBRID_UNROLL
      for (int d = kMaxDims - 1; d >= 0; --d) {
        if (d < rank) {
          const uint32_t q = j / static_cast<uint32_t>(dims[d]);
          const int64_t idx = j - q * static_cast<uint32_t>(dims[d]);
          HYBRID_UNROLL
          for (int k = 0; k < N; ++k)
            out[k] += idx * strides[k][d];
          j = q;
        }
      }
      return;
    }
    HYBRID_UNROLL
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d < rank) {
        const int64_t q = i / dims[d];
        const int64_t idx = i - q * dims[d];
        HYBRID_UNROLL
        for (int k = 0; k < N; ++k)
          out[k] += idx * strides[k][d];
        i = q;
      }
    }
  }
};

/// The plan for operands of `shapes` NumPy-broadcast to `out`; throws naming
/// `kernel` when one does not broadcast.
template <int N>
StridedPlan<N> broadcastPlan(const Shape &out,
                             std::initializer_list<const Shape *> shapes,
                             const char *kernel);

/// The plan for one operand whose element at result index i is at
/// sum_d i[d] * strides[d] (a transposed or sliced view; strides may be
/// negative or zero).
StridedPlan<1> stridedPlan(const Shape &out, const int64_t *strides,
                           const char *kernel);

extern template StridedPlan<1>
broadcastPlan<1>(const Shape &, std::initializer_list<const Shape *>,
                 const char *);
extern template StridedPlan<2>
broadcastPlan<2>(const Shape &, std::initializer_list<const Shape *>,
                 const char *);
extern template StridedPlan<3>
broadcastPlan<3>(const Shape &, std::initializer_list<const Shape *>,
                 const char *);

} // namespace hybrid::cuda
