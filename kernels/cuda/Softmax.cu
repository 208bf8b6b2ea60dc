// softmax and log_softmax along an axis on floats (f32, bf16, f16):
// max-subtracted exponentials in f32, each output rounded once; a row of all
// -inf gives NaN, as in PyTorch, ONNX and the CPU kernel. A last-axis
// softmax runs a warp (short rows) or a block (long rows) per row; other
// axes one thread per column, coalesced across columns.
#include "Elementwise.cuh"
#include "Kernels.h"

#include "common/Softmax.h"

namespace hybrid::cuda::kernels {
namespace {

constexpr int kRowBlock = 1024;

/// blockDim.x threads per row (32: a warp; more: the whole block, one
/// row), blockDim.y rows per block. Sums are f32 across threads, each
/// thread's run in f32 too: the relative error stays near 1e-7 log2(n).
template <typename S>
__global__ void __launch_bounds__(kRowBlock)
    softmaxRowKernel(const S *x, S *y, int64_t rows, int64_t n,
                     bool logarithm) {
  awaitInputs();
  __shared__ float partial[kRowBlock / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  // Combines the warps of a block-wide row; warp-wide rows need nothing.
  auto blockCombine = [&](float v, bool isMax) {
    if (blockDim.x == 32)
      return v;
    __syncthreads();
    if (lane == 0)
      partial[warp] = v;
    __syncthreads();
    float r = partial[0];
    for (int w = 1; w < warps; ++w)
      r = isMax ? maxOf(r, partial[w]) : r + partial[w];
    return r;
  };
  for (int64_t row =
           static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
       row - threadIdx.y < rows;
       row += static_cast<int64_t>(gridDim.x) * blockDim.y) {
    const bool active = row < rows;
    const S *xr = x + (active ? row : 0) * n;
    S *yr = y + row * n;
    float m = -INFINITY;
    if (active)
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        m = maxOf(m, toFloat(xr[i]));
    m = blockCombine(warpMax(m), true);
    float sum = 0;
    if (active)
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        sum += expf(toFloat(xr[i]) - m);
    sum = blockCombine(warpSum(sum), false);
    if (!active)
      continue;
    if (logarithm) {
      const float logSum = logf(sum);
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        yr[i] = fromFloat<S>(toFloat(xr[i]) - m - logSum);
    } else {
      const float inv = 1.0f / sum;
#pragma unroll 4
      for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        yr[i] = fromFloat<S>(expf(toFloat(xr[i]) - m) * inv);
    }
  }
}

/// One thread per (outer, inner) column of an [outer, n, inner] view.
template <typename S>
__global__ void softmaxColumnKernel(const S *x, S *y, int64_t outer, int64_t n,
                                    int64_t inner, bool logarithm) {
  awaitInputs();
  const int64_t columns = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       c < columns; c += stride) {
    const int64_t o = c / inner, j = c - o * inner;
    const S *xc = x + o * n * inner + j;
    S *yc = y + o * n * inner + j;
    float m = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
      m = maxOf(m, toFloat(xc[i * inner]));
    double sum = 0;
    for (int64_t i = 0; i < n; ++i)
      sum += expf(toFloat(xc[i * inner]) - m);
    const float s = static_cast<float>(logarithm ? ::log(sum) : 1.0 / sum);
    for (int64_t i = 0; i < n; ++i) {
      const float v = toFloat(xc[i * inner]) - m;
      yc[i * inner] = fromFloat<S>(logarithm ? v - s : expf(v) * s);
    }
  }
}

} // namespace

// One block per row needs no scratch (the CPU kernel's split rows do).
size_t softmaxScratchBytes(const CudaCall &) { return 0; }

void softmax(const CudaCall &call) {
  const char *kernel = softmaxKernel(call.attrs<ops::Softmax>());
  const auto a = SoftmaxArgs::bind(call, kernel);
  const SoftmaxProblem s = describeSoftmax(a);
  const int64_t outer = s.outer, n = s.n, inner = s.inner;
  const bool logarithm = s.log;
  visitFloat(s.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    if (a.input.numel() == 0)
      return;
    const S *x = static_cast<const S *>(a.input.data);
    S *y = static_cast<S *>(a.out.data);
    const cudaStream_t stream = streamOf(call);
    if (inner == 1) {
      // A one-element softmax is 1 (log: 0), NaN stays NaN: the row kernel
      // computes exactly that.
      const bool wide = n >= 1024;
      const dim3 block(wide ? kRowBlock : 32, wide ? 1 : 8);
      const int64_t blocks = (outer + block.y - 1) / block.y;
      launch(softmaxRowKernel<S>, gridFor(blocks, 1), block, 0, stream, x, y,
             outer, n, logarithm);
    } else {
      launch(softmaxColumnKernel<S>, gridFor(outer * inner), kThreads, 0,
             stream, x, y, outer, n, inner, logarithm);
    }
    checkLaunch(kernel);
  });
}

} // namespace hybrid::cuda::kernels
