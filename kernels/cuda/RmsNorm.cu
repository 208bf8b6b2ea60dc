// rms_norm: x / sqrt(mean(x^2) + eps) over dims [axis, rank) (mean in
// double, as the CPU kernel), then * weight (Llama, T5); floats (f32, bf16,
// f16) computed in f32 and rounded once. One block per row, staged in
// shared memory as f32 when it fits, or for few rows (a decode step's) held
// in registers with its weight, all loaded at once; a weight without the
// row's shape is expanded into scratch first.
#include "Kernels.h"
#include "Norm.cuh"

namespace hybrid::cuda::kernels {
namespace {

template <typename S>
__global__ void rmsNormKernel(const S *x, S *y, int64_t rows, int64_t n,
                              double eps, NormWeight<S> weight, bool staged) {
  awaitInputs();
  extern __shared__ float row[];
  __shared__ double reduction[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const S *xr = x + r * n;
    S *yr = y + r * n;
    const double sq =
        blockSum(stageRow(xr, n, staged ? row : nullptr, true), reduction);
    const float inv =
        static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(n) + eps));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const float v = staged ? row[i] : toFloat(xr[i]);
      yr[i] = fromFloat<S>(weight.present() ? v * inv * weight.at(i, 1.0f)
                                            : v * inv);
    }
    __syncthreads(); // the next row overwrites `row`
  }
}

/// Few rows: the row and weight in registers (C chunks of 4 per thread);
/// a settled weight (`early`) loaded before the wait, as layer_norm's.
template <typename S, int C, bool Vec>
__global__ void __launch_bounds__(kRowThreads)
    rmsNormRowsKernel(const S *x, S *y, int64_t rows, int64_t n, double eps,
                      NormWeight<S> weight, bool early) {
  const int count = static_cast<int>(n); // <= kRegisterRow
  float w[4 * C];                        // every row's
  if (early)
    weight.template owned<C, Vec>(count, w, 1.0f);
  awaitInputs();
  if (!early)
    weight.template owned<C, Vec>(count, w, 1.0f);
  __shared__ double reduction[32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    float v[4 * C];
    loadOwned<C, Vec>(x + r * n, count, v, 0.0f);
    double sq = 0;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j)
      sq += static_cast<double>(v[j]) * v[j]; // zeros past the end
    sq = blockSum(sq, reduction);
    const float inv =
        static_cast<float>(1.0 / ::sqrt(sq / static_cast<double>(n) + eps));
    S *yr = y + r * n;
#pragma unroll
    for (int j = 0; j < 4 * C; ++j) {
      const int i = ownedIndex<Vec>(j);
      if (i < count)
        yr[i] = fromFloat<S>(weight.present() ? v[j] * inv * w[j] : v[j] * inv);
    }
  }
}

size_t rmsNormScratch(const CudaCall &call, const NormShape &s) {
  const ConstTensor *w = optionalOperand(call, 1);
  return w && !weightInPlace(*w, s, "rms_norm", "weight")
             ? expandedWeightBytes(s.n)
             : 0;
}

} // namespace

void rmsNorm(const CudaCall &call) {
  expectOperands(call, "rms_norm", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "rms_norm", "result");
  expectShape(result, input.shape, "rms_norm", "result");
  const ops::RmsNorm &attrs = call.attrs<ops::RmsNorm>();
  const NormShape s = normShape(input, attrs.axis, "rms_norm");
  const ConstTensor *w = optionalOperand(call, 1);
  if (w)
    expectSameDType(*w, input, "rms_norm", "weight", "input");
  const size_t scratchBytes = rmsNormScratch(call, s);
  expectScratch(call, scratchBytes, "rms_norm");
  visitFloat(input.dtype, "rms_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    if (input.numel() == 0)
      return;
    const cudaStream_t stream = streamOf(call);
    NormWeight<S> weight;
    if (w && scratchBytes > 0) {
      weight.expanded = static_cast<float *>(call.scratch);
      expandWeight<S>(*w, s, static_cast<float *>(call.scratch), stream,
                      "rms_norm");
    } else if (w) {
      weight.direct = static_cast<const S *>(w->data);
    }
    const auto *x = static_cast<const S *>(input.data);
    auto *y = static_cast<S *>(result.data);
    if (const RowsInRegisters few = rowsInRegisters(s.rows, s.n);
        few.chunks > 0) {
      visitRowsInRegisters(
          few.chunks, rowChunksAligned(x, s.n, weight, NormWeight<S>{}),
          [&](auto chunks, auto vec) {
            launch(rmsNormRowsKernel<S, chunks.value, vec.value>,
                   gridFor(s.rows, 1), few.threads, 0, stream, x, y, s.rows,
                   s.n, attrs.epsilon, weight,
                   !weight.expanded && (!w || call.settled(1)));
          });
    } else {
      const bool staged = s.n <= kStagedRow;
      launch(rmsNormKernel<S>, gridFor(s.rows, 1), normThreads(s.n),
             staged ? s.n * sizeof(float) : 0, stream, x, y, s.rows, s.n,
             attrs.epsilon, weight, staged);
    }
    checkLaunch("rms_norm");
  });
}

size_t rmsNormScratchBytes(const CudaCall &call) {
  try {
    const NormShape s = normShape(call.operands.at(0),
                                  call.attrs<ops::RmsNorm>().axis, "rms_norm");
    return rmsNormScratch(call, s);
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
