// A linear's norm prologue on the GPU: the rows of x normalised (layer_norm
// or rms_norm, as the CPU's NormRows.h) into shared memory by one block,
// for our product kernels that take a GemmProblem's prologue (SkinnyGemm.cu,
// StreamGemv.cu).
#pragma once

#include "Device.cuh"
#include "hybrid/Ops.h"

#include <cstdint>

namespace hybrid::cuda {

/// 16-byte chunks of x each thread holds while the prologue normalises it:
/// M * K <= 8 * kNormChunks * threads.
constexpr int kNormChunks = 4;

/// (a, b) in f32 without contraction into an fma, as the CPU computes them.
__device__ __forceinline__ float mulRn(float a, float b) {
  return __fmul_rn(a, b);
}

/// The prologue: rows [0, M) of x (K % 8 == 0, 16-byte aligned rows)
/// normalised into `rows` (M x K, the storage type S, 2 bytes), as
/// NormRows.h does on the CPU: statistics summed in double (each thread's
/// chunks, then its warp, then the warps in order), the row in f32
/// (subtract, scale, weight, bias, each rounded), one rounding to S. Every
/// thread of the block calls it; it ends with a barrier. `p` is a kernel's
/// parameters with x, ldx, M, K, norm, normWeight, normBias, normEpsilon.
/// Each thread's chunks of x wait in `rows` (its own words: no barrier
/// needed) rather than in registers, so a kernel holding weight loads in
/// flight through the prologue keeps its occupancy.
template <typename S, int kThreads, typename P>
__device__ void normaliseRows(const P &p, uint4 *rows) {
  constexpr int kWarps = kThreads / 32, kMaxRows = 8;
  __shared__ double partial[kWarps][kMaxRows];
  __shared__ float mean[kMaxRows], inv[kMaxRows];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t perRow = p.K / 8, chunks = p.M * perRow;
  int row[kNormChunks];
#pragma unroll
  for (int c = 0; c < kNormChunks; ++c) {
    const int64_t e = int64_t(c) * kThreads + threadIdx.x;
    row[c] = e < chunks ? static_cast<int>(e / perRow) : -1;
    if (row[c] >= 0)
      rows[e] = __ldg(reinterpret_cast<const uint4 *>(
                          reinterpret_cast<const S *>(p.x) + row[c] * p.ldx) +
                      (e - row[c] * perRow));
  }
  // Row m's sum of f(element) into stat[m] (every thread sees it after).
  auto rowSums = [&](auto f, float *stat, auto finish) {
    for (int m = 0; m < p.M; ++m) {
      double s = 0;
#pragma unroll
      for (int c = 0; c < kNormChunks; ++c)
        if (row[c] == m) {
          const uint4 chunk = rows[int64_t(c) * kThreads + threadIdx.x];
          const S *e = reinterpret_cast<const S *>(&chunk);
#pragma unroll
          for (int i = 0; i < 8; ++i)
            s += f(m, toFloat(e[i]));
        }
      s = warpSum(s);
      if (lane == 0)
        partial[warp][m] = s;
    }
    __syncthreads();
    if (threadIdx.x < p.M) {
      double s = 0;
      for (int w = 0; w < kWarps; ++w)
        s += partial[w][threadIdx.x];
      stat[threadIdx.x] = finish(s);
    }
    __syncthreads();
  };
  const double n = static_cast<double>(p.K), eps = p.normEpsilon;
  const bool layer = p.norm == NormKind::LayerNorm;
  if (layer) {
    // The variance about the double mean, as the CPU takes it.
    __shared__ double meanD[kMaxRows];
    rowSums([](int, float x) { return double(x); }, mean,
            [&](double s) {
              meanD[threadIdx.x] = s / n;
              return static_cast<float>(s / n);
            });
    rowSums(
        [&](int m, float x) {
          const double d = double(x) - meanD[m];
          return d * d;
        },
        inv,
        [&](double s) { return static_cast<float>(1.0 / sqrt(s / n + eps)); });
  } else {
    rowSums(
        [](int, float x) {
          const double d = x;
          return d * d;
        },
        inv,
        [&](double s) { return static_cast<float>(1.0 / sqrt(s / n + eps)); });
  }
  const S *weight = static_cast<const S *>(p.normWeight);
  const S *bias = static_cast<const S *>(p.normBias);
#pragma unroll
  for (int c = 0; c < kNormChunks; ++c) {
    if (row[c] < 0)
      continue;
    const int m = row[c];
    const int64_t e = int64_t(c) * kThreads + threadIdx.x;
    const int64_t k = (e - m * perRow) * 8;
    uint4 w4 = {}, b4 = {};
    if (weight)
      w4 = __ldg(reinterpret_cast<const uint4 *>(weight + k));
    if (bias)
      b4 = __ldg(reinterpret_cast<const uint4 *>(bias + k));
    const uint4 chunk = rows[e];
    const S *x8 = reinterpret_cast<const S *>(&chunk);
    const S *w8 = reinterpret_cast<const S *>(&w4);
    const S *b8 = reinterpret_cast<const S *>(&b4);
    uint4 out;
    S *o8 = reinterpret_cast<S *>(&out);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      float y;
      if (layer) {
        y = mulRn(__fsub_rn(toFloat(x8[i]), mean[m]), inv[m]);
        if (weight)
          y = mulRn(y, toFloat(w8[i]));
        if (bias)
          y = __fadd_rn(y, toFloat(b8[i]));
      } else {
        y = mulRn(toFloat(x8[i]), inv[m]);
        if (weight)
          y = mulRn(y, toFloat(w8[i]));
      }
      o8[i] = fromFloat<S>(y);
    }
    rows[e] = out;
  }
  __syncthreads();
}

} // namespace hybrid::cuda
