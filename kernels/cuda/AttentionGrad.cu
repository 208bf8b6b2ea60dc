// attention_grad: attention's backward (ops::AttentionGrad) on f32, bf16 and
// f16 with the probabilities materialised in scratch. The query heads of a
// KV head are contiguous, so each (batch row, KV head) pair is one
// [G*T, Dh] query matrix (G = Hq / Hkv) and its products are single GEMMs
// with the group stacked along the rows (or, for dk and dv, along the
// reduction): no repeated keys, no sum over the group. Per chunk of pairs,
// in storage dtype with f32 accumulation (Gemm.h):
//   s  = q k^T                       (GEMM)
//   p  = softmax(s scale + mask      (row kernel; invisible keys and rows
//                + ALiBi)             that see no key give 0)
//   dv = p^T dO                      (GEMM)
//   dp = dO v^T                      (GEMM)
//   ds = p (dp - rowsum(dp p)) scale (row kernel, in place of dp)
//   dq = ds k, dk = ds^T q           (GEMMs)
// Scratch: the GEMM workspace, then the chunk's p and dp matrices.
// bf16 / f16 heads of 64 take the flash-style tensor-core kernels of
// AttentionGradMma.cu instead (no T x S matrix, ~1 MB of scratch).
#include "Attention.cuh"
#include "Device.cuh"
#include "Gemm.h"
#include "Kernels.h"
#include "Norm.cuh"

#include "common/Attention.h"

#include <algorithm>

namespace hybrid::cuda::kernels {
namespace {

/// The most bytes the chunk's two [pairs, G*T, S] matrices take together
/// (a chunk holds at least one pair whatever its size).
constexpr size_t kMatrixCapBytes = size_t(256) << 20;

/// Threads of the row kernels (a block per row of S keys).
constexpr int kRowThreads = 256;

inline size_t roundUp256(size_t bytes) { return (bytes + 255) / 256 * 256; }

/// How a call runs, from shapes alone (the scratch function and the run
/// agree). With pairs = B * Hkv and rows = G * T:
///   chunk   = clamp(kMatrixCapBytes / (2 * rows * S * sizeof(dtype)), 1,
///                   pairs)
///   scratch = kGemmWorkspaceBytes + 2 * roundUp256(chunk * rows * S *
///             sizeof(dtype))
/// (OPT-1.3B at batch 8 x 512 tokens in bf16: 256 pairs of 512 KB, one
/// chunk, 32 + 2 x 128 MB.)
struct GradPlan {
  int64_t pairs = 0, rows = 0, chunk = 0;
  size_t matrixBytes = 0; ///< one of the chunk's two matrices
  size_t scratch = 0;
};

GradPlan planOf(const AttentionProblem &p) {
  GradPlan plan;
  plan.pairs = p.B * p.Hkv;
  plan.rows = p.group * p.T;
  const size_t perPair =
      static_cast<size_t>(plan.rows * p.S) * dtypeSize(p.dtype);
  plan.chunk = std::max<int64_t>(plan.pairs, 1);
  if (perPair > 0)
    plan.chunk = std::clamp<int64_t>(
        static_cast<int64_t>(kMatrixCapBytes / (2 * perPair)), 1, plan.chunk);
  plan.matrixBytes = roundUp256(perPair * static_cast<size_t>(plan.chunk));
  plan.scratch = kGemmWorkspaceBytes + 2 * plan.matrixBytes;
  return plan;
}

/// The call's problem from its shapes and dtypes alone (the scratch
/// function sees no data).
AttentionProblem describe(const CudaCall &call) {
  return describeAttentionGrad(
      AttentionGradArgs::bind(call, "attention_grad", Binding::ShapesOnly));
}

/// Block-wide maximum (every thread gets it). `shared` holds 32 floats.
__device__ __forceinline__ float blockMax(float v, float *shared) {
  v = warpMax(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads(); // `shared` may still be read from the previous maximum
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  float m = shared[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
    m = maxOf(m, shared[w]);
  return m;
}

/// Where chunk row r (of the chunk starting at pair `first`) is: batch row
/// b, query head h, query i.
struct RowAt {
  int64_t b, h, i;
  __device__ RowAt(const AttentionProblem &p, int64_t first, int64_t r) {
    const int64_t rows = p.group * p.T;
    const int64_t pair = first + r / rows, within = r % rows;
    b = pair / p.Hkv;
    h = (pair % p.Hkv) * p.group + within / p.T;
    i = within % p.T;
  }
};

/// Chunk row `blockIdx.x` of `scores` (q k^T) becomes its probabilities,
/// in place: softmax over the visible keys of score * scale + mask + ALiBi
/// bias, f32 math; invisible keys and a row that sees no key (or only -inf)
/// give 0.
template <typename S>
__global__ void __launch_bounds__(kRowThreads)
    probabilityKernel(AttentionProblem p, int64_t first, S *scores) {
  awaitInputs();
  __shared__ float maxima[32];
  __shared__ double sums[32];
  const RowAt at(p, first, blockIdx.x);
  S *row = scores + static_cast<int64_t>(blockIdx.x) * p.S;
  const S *mask = static_cast<const S *>(p.mask);
  const float slope =
      p.slopes ? toFloat(static_cast<const S *>(p.slopes)[at.h]) : 0.0f;
  int64_t begin, end;
  p.keyRange(at.i, begin, end);
  auto score = [&](int64_t j) {
    if (j < begin || j >= end || !p.keyVisible(at.b, j))
      return -INFINITY;
    float s = toFloat(row[j]) * p.scale;
    if (mask)
      s += toFloat(mask[p.maskAt(at.b, at.h, at.i, j)]);
    if (p.slopes)
      s += alibiBias(slope, at.i, j);
    return s;
  };
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < p.S; j += blockDim.x)
    m = maxOf(m, score(j));
  m = blockMax(m, maxima);
  double sum = 0;
  if (m != -INFINITY)
    for (int64_t j = threadIdx.x; j < p.S; j += blockDim.x)
      sum += expf(score(j) - m);
  sum = blockSum(sum, sums);
  const float inv = m == -INFINITY ? 0.0f : static_cast<float>(1.0 / sum);
  for (int64_t j = threadIdx.x; j < p.S; j += blockDim.x)
    row[j] = fromFloat<S>(softmaxCarry(score(j), m) * inv);
}

/// Chunk row `blockIdx.x` of `grads` (dp = dO v^T) becomes ds = p (dp - D)
/// scale, in place, with D = rowsum(dp p) in double.
template <typename S>
__global__ void __launch_bounds__(kRowThreads)
    scoreGradKernel(AttentionProblem p, const S *probs, S *grads) {
  awaitInputs();
  __shared__ double sums[32];
  const int64_t offset = static_cast<int64_t>(blockIdx.x) * p.S;
  const S *prob = probs + offset;
  S *grad = grads + offset;
  double d = 0;
  for (int64_t j = threadIdx.x; j < p.S; j += blockDim.x)
    d += static_cast<double>(toFloat(prob[j])) * toFloat(grad[j]);
  const float D = static_cast<float>(blockSum(d, sums));
  for (int64_t j = threadIdx.x; j < p.S; j += blockDim.x)
    grad[j] = fromFloat<S>(toFloat(prob[j]) * (toFloat(grad[j]) - D) * p.scale);
}

/// The five products of a chunk of `n` pairs from pair `first`.
template <typename S> struct ChunkProducts {
  const CudaCall &gemmCall; ///< the call with the GEMM workspace as scratch
  const AttentionProblem &p;
  const GradPlan &plan;
  const S *q, *k, *v, *gradOut;
  S *gradQ, *gradK, *gradV;
  S *probs, *grads; ///< [chunk, rows, S] each

  /// A product over n pairs: row-major C = op(A) op(B), M x N, inner K.
  GemmProblem product(int64_t n, int64_t M, int64_t N, int64_t K, bool transA,
                      bool transB) const {
    GemmProblem g;
    g.dtype = p.dtype;
    g.transA = transA;
    g.transB = transB;
    g.M = M;
    g.N = N;
    g.K = K;
    g.lda = transA ? M : K;
    g.ldb = transB ? K : N;
    g.ldc = N;
    g.batch = n;
    return g;
  }

  void scores(int64_t first, int64_t n) const {
    const int64_t R = plan.rows, keys = p.S;
    GemmProblem g = product(n, R, keys, p.Dh, false, true);
    g.A = q + first * R * p.Dh;
    g.strideA = R * p.Dh;
    g.B = k + first * keys * p.Dh;
    g.strideB = keys * p.Dh;
    g.C = probs;
    g.strideC = R * keys;
    gemm(gemmCall, g, "attention_grad");
  }

  void valueGrad(int64_t first, int64_t n) const {
    const int64_t R = plan.rows, keys = p.S;
    GemmProblem g = product(n, keys, p.Dv, R, true, false);
    g.A = probs;
    g.strideA = R * keys;
    g.B = gradOut + first * R * p.Dv;
    g.strideB = R * p.Dv;
    g.C = gradV + first * keys * p.Dv;
    g.strideC = keys * p.Dv;
    gemm(gemmCall, g, "attention_grad");
  }

  void probGrad(int64_t first, int64_t n) const {
    const int64_t R = plan.rows, keys = p.S;
    GemmProblem g = product(n, R, keys, p.Dv, false, true);
    g.A = gradOut + first * R * p.Dv;
    g.strideA = R * p.Dv;
    g.B = v + first * keys * p.Dv;
    g.strideB = keys * p.Dv;
    g.C = grads;
    g.strideC = R * keys;
    gemm(gemmCall, g, "attention_grad");
  }

  void queryGrad(int64_t first, int64_t n) const {
    const int64_t R = plan.rows, keys = p.S;
    GemmProblem g = product(n, R, p.Dh, keys, false, false);
    g.A = grads;
    g.strideA = R * keys;
    g.B = k + first * keys * p.Dh;
    g.strideB = keys * p.Dh;
    g.C = gradQ + first * R * p.Dh;
    g.strideC = R * p.Dh;
    gemm(gemmCall, g, "attention_grad");
  }

  void keyGrad(int64_t first, int64_t n) const {
    const int64_t R = plan.rows, keys = p.S;
    GemmProblem g = product(n, keys, p.Dh, R, true, false);
    g.A = grads;
    g.strideA = R * keys;
    g.B = q + first * R * p.Dh;
    g.strideB = R * p.Dh;
    g.C = gradK + first * keys * p.Dh;
    g.strideC = keys * p.Dh;
    gemm(gemmCall, g, "attention_grad");
  }

  void run(cudaStream_t stream) const {
    for (int64_t first = 0; first < plan.pairs; first += plan.chunk) {
      const int64_t n = std::min(plan.chunk, plan.pairs - first);
      const unsigned blocks = static_cast<unsigned>(n * plan.rows);
      scores(first, n);
      launch(probabilityKernel<S>, blocks, kRowThreads, 0, stream, p, first,
             probs);
      checkLaunch("attention_grad");
      valueGrad(first, n);
      probGrad(first, n);
      launch(scoreGradKernel<S>, blocks, kRowThreads, 0, stream, p,
             static_cast<const S *>(probs), grads);
      checkLaunch("attention_grad");
      queryGrad(first, n);
      keyGrad(first, n);
    }
  }
};

} // namespace

void attentionGrad(const CudaCall &call) {
  const auto a = AttentionGradArgs::bind(call, "attention_grad");
  AttentionProblem p = describeAttentionGrad(a);
  const GradPlan plan = planOf(p);
  const bool tensorCores = attentionGradMmaPlanned(p);
  expectScratch(call, tensorCores ? attentionGradMmaScratch(p) : plan.scratch,
                "attention_grad");
  const cudaStream_t stream = streamOf(call);
  if (plan.pairs * plan.rows * p.S == 0) {
    // No query or no key: every gradient there is is zero.
    for (const Tensor *r : {&a.gradQuery, &a.gradKey, &a.gradValue})
      checkCuda(
          cudaMemsetAsync(r->data, 0, r->numel() * dtypeSize(r->dtype), stream),
          "attention_grad", "cudaMemsetAsync");
    return;
  }
  if (tensorCores) {
    const void *const in[4] = {a.query.data, a.key.data, a.value.data,
                               a.gradOut.data};
    void *const out[3] = {a.gradQuery.data, a.gradKey.data, a.gradValue.data};
    attentionGradMma(p, in, out, call.scratch, call.context, stream);
    return;
  }
  if (plan.chunk * plan.rows > INT32_MAX)
    fail("attention_grad", "more than 2^31 query rows in one chunk");
  CudaCall gemmCall;
  gemmCall.scratch = call.scratch;
  gemmCall.scratchBytes = kGemmWorkspaceBytes;
  gemmCall.stream = call.stream;
  gemmCall.context = call.context;
  char *matrices = static_cast<char *>(call.scratch) + kGemmWorkspaceBytes;
  visitFloat(p.dtype, "attention_grad", "query", [&](auto zero) {
    using S = decltype(zero);
    ChunkProducts<S>{gemmCall,
                     p,
                     plan,
                     a.query.as<S>(),
                     a.key.as<S>(),
                     a.value.as<S>(),
                     a.gradOut.as<S>(),
                     a.gradQuery.as<S>(),
                     a.gradKey.as<S>(),
                     a.gradValue.as<S>(),
                     reinterpret_cast<S *>(matrices),
                     reinterpret_cast<S *>(matrices + plan.matrixBytes)}
        .run(stream);
  });
}

size_t attentionGradScratchBytes(const CudaCall &call) {
  try {
    const AttentionProblem p = describe(call);
    return attentionGradMmaPlanned(p) ? attentionGradMmaScratch(p)
                                      : planOf(p).scratch;
  } catch (...) {
    return 0; // the run reports malformed calls
  }
}

} // namespace hybrid::cuda::kernels
