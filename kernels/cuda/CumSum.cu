// cumsum: running sum along `axis` (exclusive / reverse as ONNX CumSum) on
// floats (f32, bf16, f16; accumulated in double like the CPU kernel, each
// output rounded once) and integers (i32, i64; wrapping). Long rows of a
// last-axis scan go one block per row (a block-wide scan per chunk with a
// carried total); other shapes one thread per column, coalesced across
// columns.
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/CumSum.h"

namespace hybrid::cuda::kernels {
namespace {

template <typename S, typename Acc> __device__ __forceinline__ Acc widen(S x) {
  if constexpr (kIsFloat<S>)
    return static_cast<Acc>(toFloat(x));
  else
    return static_cast<Acc>(x);
}
template <typename S, typename Acc> __device__ __forceinline__ S narrow(Acc a) {
  if constexpr (kIsFloat<S>)
    return fromFloat<S>(static_cast<float>(a));
  else
    return static_cast<S>(a);
}

/// One thread per (outer, inner) column, scanning n elements.
template <typename S>
__global__ void columnScanKernel(const S *in, S *out, int64_t outer, int64_t n,
                                 int64_t inner, bool exclusive, bool reverse) {
  awaitInputs();
  using Acc = CumSumAccumulator<S>;
  const int64_t columns = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       c < columns; c += stride) {
    const int64_t o = c / inner, j = c - o * inner;
    const S *x = in + o * n * inner + j;
    S *y = out + o * n * inner + j;
    Acc acc = 0;
    for (int64_t step = 0; step < n; ++step) {
      const int64_t i = reverse ? n - 1 - step : step;
      const Acc v = widen<S, Acc>(x[i * inner]);
      if (exclusive) {
        y[i * inner] = narrow<S, Acc>(acc);
        acc += v;
      } else {
        acc += v;
        y[i * inner] = narrow<S, Acc>(acc);
      }
    }
  }
}

constexpr int kRowThreads = 512;

/// One block per contiguous row: chunks of blockDim elements scanned
/// together (warp shuffles, then the warps' totals), the running total
/// carried between chunks.
template <typename S>
__global__ void rowScanKernel(const S *in, S *out, int64_t n, bool exclusive,
                              bool reverse) {
  awaitInputs();
  using Acc = CumSumAccumulator<S>;
  __shared__ Acc warpTotals[kRowThreads / 32];
  __shared__ Acc carryShared;
  const S *x = in + static_cast<int64_t>(blockIdx.x) * n;
  S *y = out + static_cast<int64_t>(blockIdx.x) * n;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  if (threadIdx.x == 0)
    carryShared = 0;
  __syncthreads();
  for (int64_t base = 0; base < n; base += blockDim.x) {
    const int64_t step = base + threadIdx.x;
    const int64_t i = reverse ? n - 1 - step : step;
    const Acc v = step < n ? widen<S, Acc>(x[i]) : Acc(0);
    // Inclusive scan within the warp.
    Acc s = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const Acc t = __shfl_up_sync(0xffffffffu, s, o);
      if (lane >= o)
        s += t;
    }
    if (lane == 31)
      warpTotals[warp] = s;
    __syncthreads();
    Acc before = carryShared;
    for (int w = 0; w < warp; ++w)
      before += warpTotals[w];
    const Acc inclusive = before + s;
    if (step < n)
      y[i] = narrow<S, Acc>(exclusive ? inclusive - v : inclusive);
    __syncthreads();
    if (threadIdx.x == blockDim.x - 1) {
      Acc total = carryShared;
      for (int w = 0; w < warps; ++w)
        total += warpTotals[w];
      carryShared = total;
    }
    __syncthreads();
  }
}

} // namespace

// One pass per line needs no scratch (the CPU kernel's parallel scan does).
size_t cumsumScratchBytes(const CudaCall &) { return 0; }

void cumsum(const CudaCall &call) {
  const CumSumArgs a = CumSumArgs::bind(call, "cumsum");
  const CumSumProblem p = describeCumSum(a);
  const int64_t outer = p.outer, n = p.n, inner = p.inner;
  visitNumeric(a.input.dtype, "cumsum", "input", [&](auto zero) {
    using S = decltype(zero);
    if (a.input.numel() == 0)
      return;
    const S *in = static_cast<const S *>(a.input.data);
    S *out = static_cast<S *>(a.out.data);
    // A row scan pays when rows are long and too few columns exist to fill
    // the GPU with one thread each.
    if (inner == 1 && n >= 256 && outer <= 65535)
      launch(rowScanKernel<S>, static_cast<unsigned>(outer), kRowThreads, 0,
             streamOf(call), in, out, n, p.exclusive, p.reverse);
    else
      launch(columnScanKernel<S>, gridFor(outer * inner), kThreads, 0,
             streamOf(call), in, out, outer, n, inner, p.exclusive, p.reverse);
    checkLaunch("cumsum");
  });
}

} // namespace hybrid::cuda::kernels
