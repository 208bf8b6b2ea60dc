// layer_norm: (x - mean) / sqrt(var + eps) over dims [axis, rank) with the
// population variance (two passes, statistics in double as the CPU kernel
// keeps them), then * weight + bias; floats (f32, bf16, f16) computed in f32
// and rounded once. One block per row; the row is staged in shared memory
// as f32 when it fits, or for few rows (a decode step's) held in registers
// with its weight and bias, all loaded at once. Weights without the row's
// shape are expanded into scratch first.
#include "Kernels.h"
#include "Norm.cuh"

namespace hybrid::cuda::kernels {
namespace {

template <typename S>
__global__ void layerNormKernel(const S *x, S *y, int64_t rows, int64_t n,
                                double eps, NormWeight<S> weight,
                                NormWeight<S> bias, bool staged) {
  awaitInputs();
  extern __shared__ float row[];
  __shared__ double reduction[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const S *xr = x + r * n;
    S *yr = y + r * n;
    auto value = [&](int64_t i) { return staged ? row[i] : toFloat(xr[i]); };
    const double mean =
        blockSum(stageRow(xr, n, staged ? row : nullptr, false), reduction) /
        static_cast<double>(n);
    double sq = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const double d = value(i) - mean;
      sq += d * d;
    }
    sq = blockSum(sq, reduction);
    const float inv =
        static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(n) + eps));
    const float meanF = static_cast<float>(mean);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      float v = (value(i) - meanF) * inv;
      if (weight.present())
        v *= weight.at(i, 1.0f);
      if (bias.present())
        v += bias.at(i, 0.0f);
      yr[i] = fromFloat<S>(v);
    }
    __syncthreads(); // the next row overwrites `row`
  }
}

/// Few rows: the row, weight and bias in registers (C chunks of 4 per
/// thread), the mean and the sum of squared deviations from them. With
/// `early` (weight and bias settled: CudaCall::settledOperands) their loads
/// are issued before the wait, so they land while the kernel before drains.
template <typename S, int C, bool Vec>
__global__ void __launch_bounds__(kRowThreads)
    layerNormRowsKernel(const S *x, S *y, int64_t rows, int64_t n, double eps,
                        NormWeight<S> weight, NormWeight<S> bias, bool early) {
  const int count = static_cast<int>(n); // <= kRegisterRow
  float w[4 * C], b[4 * C];              // every row's
  if (early) {
    weight.template owned<C, Vec>(count, w, 1.0f);
    bias.template owned<C, Vec>(count, b, 0.0f);
  }
  awaitInputs();
  if (!early) {
    weight.template owned<C, Vec>(count, w, 1.0f);
    bias.template owned<C, Vec>(count, b, 0.0f);
  }
  __shared__ double reduction[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float v[4 * C];
    loadOwned<C, Vec>(x + r * n, count, v, 0.0f);
    double sum = 0;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j)
      sum += v[j]; // zeros past the end
    const double mean = blockSum(sum, reduction) / static_cast<double>(n);
    double sq = 0;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j)
      if (ownedIndex<Vec>(j) < count) {
        const double d = v[j] - mean;
        sq += d * d;
      }
    sq = blockSum(sq, reduction);
    const float inv =
        static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(n) + eps));
    const float meanF = static_cast<float>(mean);
    S *yr = y + r * n;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j) {
      const int i = ownedIndex<Vec>(j);
      if (i >= count)
        continue;
      float o = (v[j] - meanF) * inv;
      if (weight.present())
        o *= w[j];
      if (bias.present())
        o += b[j];
      yr[i] = fromFloat<S>(o);
    }
  }
}

/// Scratch bytes of the weight and bias that broadcast to the row.
size_t layerNormScratch(const NormProblem &s) {
  return (s.weightBroadcasts + s.biasBroadcasts) * expandedWeightBytes(s.n);
}

} // namespace

void layerNorm(const CudaCall &call) {
  const auto a = LayerNormArgs::bind(call, "layer_norm");
  const NormProblem s = describeLayerNorm(a);
  expectScratch(call, layerNormScratch(s), "layer_norm");
  visitFloat(s.dtype, "layer_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    if (a.input.numel() == 0)
      return;
    const cudaStream_t stream = streamOf(call);
    char *scratch = static_cast<char *>(call.scratch);
    NormWeight<S> weight, bias;
    if (a.weight && s.weightBroadcasts) {
      weight.expanded = reinterpret_cast<float *>(scratch);
      expandWeight<S>(*a.weight, s, reinterpret_cast<float *>(scratch), stream,
                      "layer_norm");
      scratch += expandedWeightBytes(s.n);
    } else if (a.weight) {
      weight.direct = static_cast<const S *>(a.weight->data);
    }
    if (a.bias && s.biasBroadcasts) {
      bias.expanded = reinterpret_cast<float *>(scratch);
      expandWeight<S>(*a.bias, s, reinterpret_cast<float *>(scratch), stream,
                      "layer_norm");
    } else if (a.bias) {
      bias.direct = static_cast<const S *>(a.bias->data);
    }
    const auto *x = static_cast<const S *>(a.input.data);
    auto *y = static_cast<S *>(a.out.data);
    if (const RowsInRegisters few = rowsInRegisters(s.rows, s.n);
        few.chunks > 0) {
      // (An expanded weight is written by the kernel right before.)
      using In = ops::LayerNorm::In;
      const bool early = !weight.expanded && !bias.expanded &&
                         (!a.weight || call.settled(In::weight)) &&
                         (!a.bias || call.settled(In::bias));
      visitRowsInRegisters(
          few.chunks, rowChunksAligned(x, s.n, weight, bias),
          [&](auto chunks, auto vec) {
            launch(layerNormRowsKernel<S, chunks.value, vec.value>,
                   gridFor(s.rows, 1), few.threads, 0, stream, x, y, s.rows,
                   s.n, s.epsilon, weight, bias, early);
          });
    } else {
      const bool staged = s.n <= kStagedRow;
      launch(layerNormKernel<S>, gridFor(s.rows, 1), normThreads(s.n),
             staged ? s.n * sizeof(float) : 0, stream, x, y, s.rows, s.n,
             s.epsilon, weight, bias, staged);
    }
    checkLaunch("layer_norm");
  });
}

size_t layerNormScratchBytes(const CudaCall &call) {
  try {
    using In = ops::LayerNorm::In;
    NormProblem s = normShape(call.operands.at(In::input).shape,
                              call.attrs<ops::LayerNorm>().axis, "layer_norm");
    addNormWeights(s, optional(call, In::weight), optional(call, In::bias),
                   "layer_norm");
    return layerNormScratch(s);
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
