// label_log_probs and label_log_probs_grad: a fused cross-entropy, one block
// per row of V logits. Each thread keeps a running (max, sum of exp(x -
// max)) over its share of the row, read once in 16-byte words where the
// rows are aligned, and the block combines the threads' pairs in a fixed
// order (so every run gives the same bits). The forward writes x[label] -
// max - log(sum); the backward reads the row a second time and writes
// grad (onehot(label) - exp(x - max) / sum), rounded once to the logits'
// type. A label outside [0, V) (the ignore index -100) gives 0 and a zero
// row without reading the logits. No [rows, V] temporary is made.
#include "Device.cuh"
#include "Kernels.h"

#include "common/LabelLogProbs.h"

namespace hybrid::cuda::kernels {
namespace {

/// Threads per row of a long row; a row under kWideChunks chunks takes a
/// warp.
constexpr int kRowThreads = 256;
constexpr int64_t kWideChunks = 1024;

/// A running maximum and sum of exp(x - max) (0 while max is -inf).
struct MaxSum {
  float max, sum;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = maxOf(a.max, b.max);
  if (m == -INFINITY)
    return {m, 0.0f};
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

/// The block's (max, sum) over a row of `chunks` chunks of N elements, the
/// same in every thread.
template <typename S, int N>
__device__ MaxSum rowMaxSum(const S *row, int64_t chunks) {
  __shared__ MaxSum partial[kRowThreads / 32];
  MaxSum t{-INFINITY, 0.0f};
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float v[N];
    loadChunk<S, N>(row + c * N, v);
    float m = t.max;
#pragma unroll
    for (int i = 0; i < N; ++i)
      m = maxOf(m, v[i]);
    if (m == -INFINITY)
      continue;
    float sum = 0;
#pragma unroll
    for (int i = 0; i < N; ++i)
      sum += expf(v[i] - m);
    t = {m, t.sum * expf(t.max - m) + sum};
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    t = combine(t, {__shfl_xor_sync(0xffffffffu, t.max, o),
                    __shfl_xor_sync(0xffffffffu, t.sum, o)});
  if (blockDim.x == 32)
    return t;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
    partial[warp] = t;
  __syncthreads();
  MaxSum r = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
    r = combine(r, partial[w]);
  return r;
}

template <typename S, int N, typename I>
__global__ void __launch_bounds__(kRowThreads)
    labelLogProbsKernel(const S *x, const I *labels, float *out,
                        int64_t vocab) {
  awaitInputs();
  const int64_t r = blockIdx.x;
  const int64_t label = indexAt(labels, r);
  if (label < 0 || label >= vocab) {
    if (threadIdx.x == 0)
      out[r] = 0.0f;
    return;
  }
  const S *row = x + r * vocab;
  const MaxSum s = rowMaxSum<S, N>(row, vocab / N);
  if (threadIdx.x == 0)
    out[r] = toFloat(row[label]) - s.max - logf(s.sum);
}

template <typename S, int N, typename I>
__global__ void __launch_bounds__(kRowThreads)
    labelLogProbsGradKernel(const S *x, const I *labels, const float *grad,
                            S *dx, int64_t vocab) {
  awaitInputs();
  const int64_t r = blockIdx.x;
  const int64_t label = indexAt(labels, r);
  const int64_t chunks = vocab / N;
  S *out = dx + r * vocab;
  if (label < 0 || label >= vocab) {
    float zero[N] = {};
    for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
      storeChunk<S, N>(out + c * N, zero);
    return;
  }
  const S *row = x + r * vocab;
  const MaxSum s = rowMaxSum<S, N>(row, chunks);
  const float g = grad[r], inv = 1.0f / s.sum;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) {
    float v[N];
    loadChunk<S, N>(row + c * N, v);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      const float hot = c * N + i == label ? 1.0f : 0.0f;
      v[i] = g * (hot - expf(v[i] - s.max) * inv);
    }
    storeChunk<S, N>(out + c * N, v);
  }
}

/// Calls fn(S{}, I{}, N) for the logits' type S, the labels' type I and
/// the chunk width: 16 bytes of S where every row starts 16-byte aligned.
template <typename Fn>
void visitRows(const ConstTensor &logits, const ConstTensor &labels,
               const void *out, int64_t vocab, const char *kernel, Fn &&fn) {
  visitFloat(logits.dtype, kernel, "logits", [&](auto zero) {
    using S = decltype(zero);
    constexpr int kWide = 16 / sizeof(S);
    const bool wide =
        vocab % kWide == 0 &&
        reinterpret_cast<uintptr_t>(logits.data) % 16 == 0 &&
        (out == nullptr || reinterpret_cast<uintptr_t>(out) % 16 == 0);
    auto withLabels = [&](auto index) {
      if (wide)
        fn(S{}, index, std::integral_constant<int, kWide>{});
      else
        fn(S{}, index, std::integral_constant<int, 1>{});
    };
    if (labels.dtype == DType::I32)
      withLabels(int32_t{});
    else
      withLabels(int64_t{});
  });
}

unsigned rowThreads(int64_t chunks) {
  return chunks >= kWideChunks ? kRowThreads : 32;
}

} // namespace

void labelLogProbs(const CudaCall &call) {
  constexpr const char *kKernel = "label_log_probs";
  const auto a = LabelLogProbsArgs::bind(call, kKernel);
  const LabelLogProbsProblem s = describeLabelLogProbs(a);
  if (s.rows == 0)
    return;
  visitRows(a.logits, a.labels, nullptr, s.vocab, kKernel,
            [&](auto zero, auto index, auto width) {
              using S = decltype(zero);
              using I = decltype(index);
              constexpr int N = decltype(width)::value;
              launch(labelLogProbsKernel<S, N, I>,
                     static_cast<unsigned>(s.rows), rowThreads(s.vocab / N), 0,
                     streamOf(call), static_cast<const S *>(a.logits.data),
                     static_cast<const I *>(a.labels.data),
                     static_cast<float *>(a.out.data), s.vocab);
            });
  checkLaunch(kKernel);
}

void labelLogProbsGrad(const CudaCall &call) {
  constexpr const char *kKernel = "label_log_probs_grad";
  const auto a = LabelLogProbsGradArgs::bind(call, kKernel);
  const LabelLogProbsProblem s = describeLabelLogProbsGrad(a);
  if (s.rows == 0 || s.vocab == 0)
    return;
  visitRows(a.logits, a.labels, a.out.data, s.vocab, kKernel,
            [&](auto zero, auto index, auto width) {
              using S = decltype(zero);
              using I = decltype(index);
              constexpr int N = decltype(width)::value;
              launch(labelLogProbsGradKernel<S, N, I>,
                     static_cast<unsigned>(s.rows), rowThreads(s.vocab / N), 0,
                     streamOf(call), static_cast<const S *>(a.logits.data),
                     static_cast<const I *>(a.labels.data),
                     static_cast<const float *>(a.grad.data),
                     static_cast<S *>(a.out.data), s.vocab);
            });
  checkLaunch(kKernel);
}

} // namespace hybrid::cuda::kernels
