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

/// Which of weight and bias are expanded into scratch, and the bytes.
struct LayerNormScratch {
  bool expandWeight = false, expandBias = false;
  size_t bytes = 0;
};

LayerNormScratch layerNormScratch(const CudaCall &call, const NormShape &s) {
  LayerNormScratch l;
  if (const ConstTensor *w = optionalOperand(call, 1))
    l.expandWeight = !weightInPlace(*w, s, "layer_norm", "weight");
  if (const ConstTensor *b = optionalOperand(call, 2))
    l.expandBias = !weightInPlace(*b, s, "layer_norm", "bias");
  l.bytes = (l.expandWeight + l.expandBias) * expandedWeightBytes(s.n);
  return l;
}

} // namespace

void layerNorm(const CudaCall &call) {
  expectOperands(call, "layer_norm", 1, 2);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "layer_norm", "result");
  expectShape(result, input.shape, "layer_norm", "result");
  const ops::LayerNorm &attrs = call.attrs<ops::LayerNorm>();
  const NormShape s = normShape(input, attrs.axis, "layer_norm");
  const ConstTensor *w = optionalOperand(call, 1);
  const ConstTensor *b = optionalOperand(call, 2);
  if (w)
    expectSameDType(*w, input, "layer_norm", "weight", "input");
  if (b)
    expectSameDType(*b, input, "layer_norm", "bias", "input");
  const LayerNormScratch layout = layerNormScratch(call, s);
  expectScratch(call, layout.bytes, "layer_norm");
  visitFloat(input.dtype, "layer_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    if (input.numel() == 0)
      return;
    const cudaStream_t stream = streamOf(call);
    char *scratch = static_cast<char *>(call.scratch);
    NormWeight<S> weight, bias;
    if (w && layout.expandWeight) {
      weight.expanded = reinterpret_cast<float *>(scratch);
      expandWeight<S>(*w, s, reinterpret_cast<float *>(scratch), stream,
                      "layer_norm");
      scratch += expandedWeightBytes(s.n);
    } else if (w) {
      weight.direct = static_cast<const S *>(w->data);
    }
    if (b && layout.expandBias) {
      bias.expanded = reinterpret_cast<float *>(scratch);
      expandWeight<S>(*b, s, reinterpret_cast<float *>(scratch), stream,
                      "layer_norm");
    } else if (b) {
      bias.direct = static_cast<const S *>(b->data);
    }
    const auto *x = static_cast<const S *>(input.data);
    auto *y = static_cast<S *>(result.data);
    if (const RowsInRegisters few = rowsInRegisters(s.rows, s.n);
        few.chunks > 0) {
      // (An expanded weight is written by the kernel right before.)
      const bool early = !weight.expanded && !bias.expanded &&
                         (!w || call.settled(1)) && (!b || call.settled(2));
      visitRowsInRegisters(
          few.chunks, rowChunksAligned(x, s.n, weight, bias),
          [&](auto chunks, auto vec) {
            launch(layerNormRowsKernel<S, chunks.value, vec.value>,
                   gridFor(s.rows, 1), few.threads, 0, stream, x, y, s.rows,
                   s.n, attrs.epsilon, weight, bias, early);
          });
    } else {
      const bool staged = s.n <= kStagedRow;
      launch(layerNormKernel<S>, gridFor(s.rows, 1), normThreads(s.n),
             staged ? s.n * sizeof(float) : 0, stream, x, y, s.rows, s.n,
             attrs.epsilon, weight, bias, staged);
    }
    checkLaunch("layer_norm");
  });
}

size_t layerNormScratchBytes(const CudaCall &call) {
  try {
    const NormShape s = normShape(
        call.operands.at(0), call.attrs<ops::LayerNorm>().axis, "layer_norm");
    return layerNormScratch(call, s).bytes;
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
