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

/// Scratch bytes of a weight that broadcasts to the row.
size_t rmsNormScratch(const NormProblem &s) {
  return s.weightBroadcasts ? expandedWeightBytes(s.n) : 0;
}

} // namespace

void rmsNorm(const CudaCall &call) {
  const auto a = RmsNormArgs::bind(call, "rms_norm");
  const NormProblem s = describeRmsNorm(a);
  const size_t scratchBytes = rmsNormScratch(s);
  expectScratch(call, scratchBytes, "rms_norm");
  visitFloat(s.dtype, "rms_norm", "input", [&](auto zero) {
    using S = decltype(zero);
    if (a.input.numel() == 0)
      return;
    const cudaStream_t stream = streamOf(call);
    NormWeight<S> weight;
    if (a.weight && scratchBytes > 0) {
      weight.expanded = static_cast<float *>(call.scratch);
      expandWeight<S>(*a.weight, s, static_cast<float *>(call.scratch), stream,
                      "rms_norm");
    } else if (a.weight) {
      weight.direct = static_cast<const S *>(a.weight->data);
    }
    const auto *x = static_cast<const S *>(a.input.data);
    auto *y = static_cast<S *>(a.out.data);
    if (const RowsInRegisters few = rowsInRegisters(s.rows, s.n);
        few.chunks > 0) {
      const bool early = !weight.expanded &&
                         (!a.weight || call.settled(ops::RmsNorm::In::weight));
      visitRowsInRegisters(
          few.chunks, rowChunksAligned(x, s.n, weight, NormWeight<S>{}),
          [&](auto chunks, auto vec) {
            launch(rmsNormRowsKernel<S, chunks.value, vec.value>,
                   gridFor(s.rows, 1), few.threads, 0, stream, x, y, s.rows,
                   s.n, s.epsilon, weight, early);
          });
    } else {
      const bool staged = s.n <= kStagedRow;
      launch(rmsNormKernel<S>, gridFor(s.rows, 1), normThreads(s.n),
             staged ? s.n * sizeof(float) : 0, stream, x, y, s.rows, s.n,
             s.epsilon, weight, staged);
    }
    checkLaunch("rms_norm");
  });
}

size_t rmsNormScratchBytes(const CudaCall &call) {
  try {
    using In = ops::RmsNorm::In;
    NormProblem s = normShape(call.operands.at(In::input).shape,
                              call.attrs<ops::RmsNorm>().axis, "rms_norm");
    addNormWeights(s, optional(call, In::weight), nullptr, "rms_norm");
    return rmsNormScratch(s);
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
