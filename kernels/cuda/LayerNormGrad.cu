// layer_norm_grad: layer_norm's backward in two launches. The row kernel
// runs a fixed number of blocks (at most kGradBlocks), each over every
// gridDim-th row: it normalises the row as layer_norm does (statistics in
// double; rows held in registers take the mean and mean square in one
// pass), writes dx = rstd (dx^ - mean(dx^) - x^ mean(dx^ x^)),
// dx^ = g w (one f32 rounding, never contracted into the subtraction, as
// the CPU rounds it: a row of one element gets exactly 0), and adds g x^ and g
// into the block's column sums, which each thread keeps for the columns it owns
// (the same ones in every row); the block writes them to scratch as its
// partials [blocks][n]. The second kernel sums the partials over blocks in
// block order and rounds once, so grad_weight and grad_bias are the same on
// every run. Rows up to kRegisterRow elements are held in registers (x and g
// read once, dx written once); longer rows are read from global memory per pass
// and their column sums kept in the partials themselves.
#include "Kernels.h"
#include "Norm.cuh"

#include <algorithm>

namespace hybrid::cuda::kernels {
namespace {

/// The most row blocks: two per SM of an H200 (each with its next row's
/// loads in flight), few enough that the partials stay a fraction of the
/// traffic.
constexpr int64_t kGradBlocks = 264;

/// Warps of the partial-sum kernel; each block sums 32 columns.
constexpr int kSumWarps = 8;

/// Both sums of every thread's (a, b), block-wide (every thread gets them):
/// one reduction round for two values. `shared` holds 32 double2.
__device__ __forceinline__ double2 blockSum2(double a, double b,
                                             double2 *shared) {
  a = warpSum(a);
  b = warpSum(b);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // `shared` may still be read from the previous sums
  if (lane == 0)
    shared[warp] = make_double2(a, b);
  __syncthreads();
  double2 total = make_double2(0, 0);
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
    total.x += shared[w].x;
    total.y += shared[w].y;
  }
  return total;
}

/// Rows in registers: C chunks of 4 per thread (ownedIndex), the column
/// sums of the same elements in registers across rows. Two reduction
/// rounds a row (the mean and mean square in double together, then the
/// two row means of the gradient), and the block's next row is loaded
/// before this one's reductions, so its loads are in flight meanwhile.
template <typename S, int C, bool Vec>
__global__ void __launch_bounds__(kRowThreads)
    layerNormGradRowsKernel(const S *x, const S *g, NormWeight<S> weight, S *dx,
                            int64_t rows, int64_t n, double eps,
                            float *partialWeight, float *partialBias) {
  awaitInputs();
  __shared__ double2 reduction[32];
  const int count = static_cast<int>(n); // <= kRegisterRow
  float w[4 * C], sumGradXhat[4 * C] = {}, sumGrad[4 * C] = {};
  weight.template owned<C, Vec>(count, w, 1.0f);
  float v[4 * C], gr[4 * C];
  int64_t r = blockIdx.x;
  if (r < rows) {
    loadOwned<C, Vec>(x + r * n, count, v, 0.0f);
    loadOwned<C, Vec>(g + r * n, count, gr, 0.0f); // 0 past the end
  }
  for (; r < rows; r += gridDim.x) {
    const int64_t next = r + gridDim.x;
    float vNext[4 * C], gNext[4 * C];
    if (next < rows) {
      loadOwned<C, Vec>(x + next * n, count, vNext, 0.0f);
      loadOwned<C, Vec>(g + next * n, count, gNext, 0.0f);
    }
    double sum = 0, sq = 0;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j) {
      sum += v[j];
      sq += static_cast<double>(v[j]) * v[j];
    }
    const double2 moments = blockSum2(sum, sq, reduction);
    const double mean = moments.x / static_cast<double>(n);
    const double var =
        std::max(moments.y / static_cast<double>(n) - mean * mean, 0.0);
    const float rstd = static_cast<float>(1.0 / ::sqrt(var + eps));
    const float meanF = static_cast<float>(mean);
    // v becomes x^; past the end g = 0, so nothing is added there.
    double sumDxhat = 0, dot = 0;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j) {
      v[j] = (v[j] - meanF) * rstd;
      const float d = __fmul_rn(gr[j], w[j]); // as below: never contracted
      sumDxhat += d;
      dot += static_cast<double>(d) * v[j];
      sumGradXhat[j] += gr[j] * v[j];
      sumGrad[j] += gr[j];
    }
    const double2 means = blockSum2(sumDxhat, dot, reduction);
    const float meanDxhat =
        static_cast<float>(means.x / static_cast<double>(n));
    const float meanDot = static_cast<float>(means.y / static_cast<double>(n));
    S *dxr = dx + r * n;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j) {
      const int i = ownedIndex<Vec>(j);
      if (i < count)
        dxr[i] = fromFloat<S>(
            rstd * (__fmul_rn(gr[j], w[j]) - meanDxhat - v[j] * meanDot));
    }
    if (next < rows) {
#pragma unroll
      for (int j = 0; j < 4 * C; ++j) {
        v[j] = vNext[j];
        gr[j] = gNext[j];
      }
    }
  }
#pragma unroll
  for (int j = 0; j < 4 * C; ++j) {
    const int i = ownedIndex<Vec>(j);
    if (i < count) {
      partialWeight[blockIdx.x * n + i] = sumGradXhat[j];
      partialBias[blockIdx.x * n + i] = sumGrad[j];
    }
  }
}

/// Longer rows, read from global memory per pass; thread t owns columns
/// t, t + blockDim.x, ... of the block's partials.
template <typename S>
__global__ void layerNormGradKernel(const S *x, const S *g,
                                    NormWeight<S> weight, S *dx, int64_t rows,
                                    int64_t n, double eps, float *partialWeight,
                                    float *partialBias) {
  awaitInputs();
  __shared__ double reduction[32];
  float *sumGradXhat = partialWeight + blockIdx.x * n,
        *sumGrad = partialBias + blockIdx.x * n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sumGradXhat[i] = sumGrad[i] = 0;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const S *xr = x + r * n, *gr = g + r * n;
    const double mean = blockSum(stageRow(xr, n, nullptr, false), reduction) /
                        static_cast<double>(n);
    double sq = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double d = toFloat(xr[i]) - mean;
      sq += d * d;
    }
    sq = blockSum(sq, reduction);
    const float rstd =
        static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(n) + eps));
    const float meanF = static_cast<float>(mean);
    double sumDxhat = 0, dot = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float xhat = (toFloat(xr[i]) - meanF) * rstd;
      const float d = __fmul_rn(toFloat(gr[i]), weight.at(i, 1.0f));
      sumDxhat += d;
      dot += static_cast<double>(d) * xhat;
    }
    const float meanDxhat = static_cast<float>(blockSum(sumDxhat, reduction) /
                                               static_cast<double>(n));
    const float meanDot =
        static_cast<float>(blockSum(dot, reduction) / static_cast<double>(n));
    S *dxr = dx + r * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float xhat = (toFloat(xr[i]) - meanF) * rstd, gi = toFloat(gr[i]);
      dxr[i] = fromFloat<S>(rstd * (__fmul_rn(gi, weight.at(i, 1.0f)) -
                                    meanDxhat - xhat * meanDot));
      sumGradXhat[i] += gi * xhat;
      sumGrad[i] += gi;
    }
  }
}

/// grad_weight and grad_bias: the partials of `blocks` row blocks summed
/// in block order. Block b sums columns [32 b, 32 b + 32); warp k adds the
/// partials of row blocks k, k + kSumWarps, ..., then warp 0 adds the warps'
/// sums in warp order.
template <typename S>
__global__ void __launch_bounds__(32 * kSumWarps)
    sumPartialsKernel(const float *partialWeight, const float *partialBias,
                      int64_t blocks, int64_t n, S *gradWeight, S *gradBias) {
  awaitInputs();
  __shared__ float sums[2][kSumWarps][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t column = static_cast<int64_t>(blockIdx.x) * 32 + lane;
  float w = 0, b = 0;
  if (column < n)
    for (int64_t k = warp; k < blocks; k += kSumWarps) {
      w += partialWeight[k * n + column];
      b += partialBias[k * n + column];
    }
  sums[0][warp][lane] = w;
  sums[1][warp][lane] = b;
  __syncthreads();
  if (warp != 0 || column >= n)
    return;
  w = b = 0;
  for (int k = 0; k < kSumWarps; ++k) {
    w += sums[0][k][lane];
    b += sums[1][k][lane];
  }
  gradWeight[column] = fromFloat<S>(w);
  gradBias[column] = fromFloat<S>(b);
}

/// The row blocks and the scratch of their partials (two f32 [blocks][n]).
struct GradPartials {
  int64_t blocks = 0;
  size_t bytes = 0;
};

GradPartials gradPartials(const NormProblem &s) {
  GradPartials p;
  p.blocks = std::min(s.rows, kGradBlocks);
  p.bytes = 2 * static_cast<size_t>(p.blocks) * s.n * sizeof(float);
  return p;
}

} // namespace

void layerNormGrad(const CudaCall &call) {
  constexpr const char *kKernel = "layer_norm_grad";
  const auto a = bindLayerNormGrad(call);
  const NormProblem s = describeLayerNormGrad(a);
  const GradPartials partials = gradPartials(s);
  expectScratch(call, partials.bytes, kKernel);
  visitFloat(s.dtype, kKernel, "input", [&](auto zero) {
    using S = decltype(zero);
    if (s.n == 0)
      return;
    const cudaStream_t stream = streamOf(call);
    const auto *x = static_cast<const S *>(a.input.data);
    const auto *g = static_cast<const S *>(a.gradOut.data);
    auto *dx = static_cast<S *>(a.gradInput.data);
    float *partialWeight = static_cast<float *>(call.scratch);
    float *partialBias = partialWeight + partials.blocks * s.n;
    NormWeight<S> weight;
    if (a.weight)
      weight.direct = static_cast<const S *>(a.weight->data);
    const unsigned blocks = static_cast<unsigned>(partials.blocks);
    const RowsInRegisters layout = rowInRegisters(s.n);
    // Without rows there are no partials: the sums write zeros.
    if (blocks > 0 && layout.chunks > 0) {
      const bool vec =
          rowChunksAligned(x, s.n, weight, NormWeight<S>{}) &&
          rowChunksAligned(g, s.n, NormWeight<S>{}, NormWeight<S>{});
      visitRowsInRegisters(layout.chunks, vec, [&](auto chunks, auto v) {
        launch(layerNormGradRowsKernel<S, chunks.value, v.value>, blocks,
               layout.threads, 0, stream, x, g, weight, dx, s.rows, s.n,
               s.epsilon, partialWeight, partialBias);
      });
    } else if (blocks > 0) {
      launch(layerNormGradKernel<S>, blocks, normThreads(s.n), 0, stream, x, g,
             weight, dx, s.rows, s.n, s.epsilon, partialWeight, partialBias);
    }
    launch(sumPartialsKernel<S>, static_cast<unsigned>((s.n + 31) / 32),
           32 * kSumWarps, 0, stream, partialWeight, partialBias,
           partials.blocks, s.n, static_cast<S *>(a.gradWeight.data),
           static_cast<S *>(a.gradBias.data));
    checkLaunch(kKernel);
  });
}

size_t layerNormGradScratchBytes(const CudaCall &call) {
  try {
    return gradPartials(
               normShape(call.operands.at(ops::LayerNormGrad::In::input).shape,
                         call.attrs<ops::LayerNormGrad>().axis,
                         "layer_norm_grad"))
        .bytes;
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
