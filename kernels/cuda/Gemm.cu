// The GEMMs behind matmul and linear: cuBLASLt with f32 compute (exact f32,
// no TF32), the bias (and a ReLU, or a residual as C) fused as its
// epilogue, other activations in one elementwise pass after it, batches as
// strided batches. The descriptors of each shape are made once and cached
// in the Context (the heuristic query costs tens of microseconds), and the
// first call outside a stream capture times the heuristic's best few
// algorithms on its operands, and our skinny kernel (SkinnyGemm.h) for
// products of a few rows, and keeps the fastest. A small tiled kernel of
// our own runs what cuBLASLt declines. A group of products that share A
// (linear_group) is one skinny launch where every member's plan chose the
// skinny kernel, else each member's plan in turn.
#include "Activation.cuh"
#include "Context.h"
#include "Device.cuh"
#include "Gemm.h"
#include "SkinnyGemm.h"
#include "StepTuning.h"
#include "StreamGemv.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace hybrid::cuda {
namespace {

/// Algorithms of the heuristic that a plan times on its first call.
constexpr int kGemmCandidates = 8;

void checkLt(cublasStatus_t status, const char *kernel, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail(kernel, std::string(what) + " failed: cuBLAS status " +
                     std::to_string(static_cast<int>(status)));
}

cudaDataType_t cudaTypeOf(DType dt) {
  switch (dt) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  default:
    return CUDA_R_32F;
  }
}

/// The largest power of two (up to 256) dividing the address: cuBLASLt's
/// heuristic assumes 256-byte aligned operands unless told otherwise, and a
/// tensor in the middle of a workspace or a slice may be less aligned.
int64_t alignmentOf(const void *p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  int64_t align = 256;
  while (align > 1 && (a % align) != 0)
    align >>= 1;
  return align;
}

constexpr int kTile = 16;

/// C = op(A) op(B) (+ bias), one 16 x 16 tile of C per block, blockIdx.z
/// over batches; f32 accumulation.
template <typename S> __global__ void tiledGemmKernel(GemmProblem p) {
  awaitInputs();
  __shared__ float As[kTile][kTile + 1];
  __shared__ float Bs[kTile][kTile + 1];
  const S *A = static_cast<const S *>(p.A);
  const S *B = static_cast<const S *>(p.B);
  const S *bias = static_cast<const S *>(p.bias);
  S *C = static_cast<S *>(p.C);
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t row = static_cast<int64_t>(blockIdx.y) * kTile + ty;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
  for (int64_t b = blockIdx.z; b < p.batch; b += gridDim.z) {
    const S *a = A + b * p.strideA;
    const S *bb = B + b * p.strideB;
    float acc = 0;
    for (int64_t k0 = 0; k0 < p.K; k0 += kTile) {
      // As[ty][tx] = op(A)[row][k0 + tx]; Bs[ty][tx] = op(B)[k0 + ty][col].
      const int64_t ka = k0 + tx, kb = k0 + ty;
      float av = 0, bv = 0;
      if (row < p.M && ka < p.K)
        av = toFloat(p.transA ? a[ka * p.lda + row] : a[row * p.lda + ka]);
      if (col < p.N && kb < p.K)
        bv = toFloat(p.transB ? bb[col * p.ldb + kb] : bb[kb * p.ldb + col]);
      As[ty][tx] = av;
      Bs[ty][tx] = bv;
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kTile; ++k)
        acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
    if (row < p.M && col < p.N) {
      if (bias)
        acc += toFloat(bias[col]);
      acc = activate(p.activation, acc);
      if (p.residual)
        acc += toFloat(static_cast<const S *>(
            p.residual)[b * p.strideR + row * p.ldr + col]);
      C[b * p.strideC + row * p.ldc + col] = fromFloat<S>(acc);
    }
  }
}

/// Which part of the epilogue cuBLASLt runs: the bias, ReLU (when nothing
/// is added after it) and a residual as its C matrix (D = AB + C + bias,
/// when no activation follows the sum). The rest runs in finishEpilogue.
struct LtEpilogue {
  bool relu = false, residual = false;
};
LtEpilogue ltEpilogue(const GemmProblem &p) {
  LtEpilogue e;
  e.relu = p.activation == Activation::Relu && !p.residual;
  e.residual = p.residual && p.activation == Activation::None;
  return e;
}

/// y = activation(y) + residual in place, for what cuBLASLt did not fuse.
template <typename S>
__global__ void finishEpilogueKernel(GemmProblem p, Activation act,
                                     bool addResidual) {
  awaitInputs();
  S *C = static_cast<S *>(p.C);
  const S *R = static_cast<const S *>(p.residual);
  const int64_t perBatch = p.M * p.N, n = perBatch * p.batch;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t b = i / perBatch, rc = i % perBatch;
    const int64_t row = rc / p.N, col = rc % p.N;
    S &y = C[b * p.strideC + row * p.ldc + col];
    float v = activate(act, toFloat(y));
    if (addResidual)
      v += toFloat(R[b * p.strideR + row * p.ldr + col]);
    y = fromFloat<S>(v);
  }
}

void finishEpilogue(const GemmProblem &p, const LtEpilogue &done,
                    cudaStream_t stream, const char *kernel) {
  const Activation act = done.relu ? Activation::None : p.activation;
  const bool addResidual = p.residual && !done.residual;
  if (act == Activation::None && !addResidual)
    return;
  visitFloat(p.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    launch(finishEpilogueKernel<S>, gridFor(p.M * p.N * p.batch), kThreads, 0,
           stream, p, act, addResidual);
  });
  checkLaunch(kernel);
}

/// How one of our product kernels enters the GEMM plans, by its environment
/// variable: timed against the others (unset or anything else), left out
/// ("0", to measure a step without it) or taken wherever it applies,
/// untimed ("prefer", to measure a step with it everywhere; tests use it to
/// reach a kernel's dispatch). Read on every call (tests set them while
/// running), but a plan, once made and tuned, keeps its pick.
enum class KernelMode { Timed, Off, Prefer };
KernelMode kernelMode(const char *variable) {
  const char *env = std::getenv(variable);
  if (!env)
    return KernelMode::Timed;
  const std::string v(env);
  return v == "0"        ? KernelMode::Off
         : v == "prefer" ? KernelMode::Prefer
                         : KernelMode::Timed;
}

/// HYBRID_CUDA_SKINNY: the skinny kernel (kernelMode).
KernelMode skinnyMode() { return kernelMode("HYBRID_CUDA_SKINNY"); }

/// HYBRID_CUDA_STREAM: the streaming GEMV (kernelMode). It is a candidate
/// where the skinny kernel is (skinnyAllowed: not with
/// HYBRID_CUDA_SKINNY=0), and HYBRID_CUDA_SKINNY=prefer keeps the skinny
/// kernel instead.
KernelMode streamMode() { return kernelMode("HYBRID_CUDA_STREAM"); }
bool streamAllowed() { return streamMode() != KernelMode::Off; }

/// Whether the skinny kernel is timed for `p`: not with
/// HYBRID_CUDA_SKINNY=0, and bf16/f16 need the tensor cores of sm_80 or
/// later.
bool skinnyAllowed(const Context &context, const GemmProblem &p) {
  if (skinnyMode() == KernelMode::Off)
    return false;
  return p.dtype == DType::F32 || context.computeMajor >= 8;
}

/// What a plan depends on: the shapes, layouts, alignments and epilogue.
GemmKey keyOf(const GemmProblem &p, size_t workspace) {
  const LtEpilogue fused = ltEpilogue(p);
  return {static_cast<int64_t>(p.dtype),
          p.transA,
          p.transB,
          p.M,
          p.N,
          p.K,
          p.lda,
          p.ldb,
          p.ldc,
          p.batch,
          p.strideA,
          p.strideB,
          p.strideC,
          p.bias != nullptr,
          alignmentOf(p.A),
          alignmentOf(p.B),
          alignmentOf(p.C),
          p.bias ? alignmentOf(p.bias) : 0,
          static_cast<int64_t>(workspace),
          (fused.relu ? 1 : 0) | (fused.residual ? 2 : 0),
          fused.residual ? alignmentOf(p.residual) : 0,
          static_cast<int64_t>(p.activation),
          p.residual != nullptr,
          static_cast<int64_t>(p.norm) | (p.normWeight ? 4 : 0) |
              (p.normBias ? 8 : 0)};
}

/// The context's pin (PlanPins.h) for `problems` (one product or a group's
/// members), or null.
const PlanPin *pinFor(const Context &context, const GemmProblem *problems,
                      size_t count) {
  if (context.planPins.empty())
    return nullptr;
  std::vector<int64_t> widths;
  for (size_t i = 0; i < count; ++i)
    widths.push_back(problems[i].N);
  return findPlanPin(context.planPins, problems[0].M, problems[0].K, widths);
}

/// The candidates `pinned` (a pin's count, -1 for any) leaves of `all`;
/// throws naming `kernel` and `what` when it names none of them.
std::vector<int> pinnedCounts(const std::vector<int> &all, int pinned,
                              const char *kernel, const char *what) {
  if (pinned < 0)
    return all;
  if (std::find(all.begin(), all.end(), pinned) == all.end()) {
    std::string known;
    for (int v : all)
      known += (known.empty() ? "" : ", ") + std::to_string(v);
    fail(kernel, "HYBRID_CUDA_PLANS pins " + std::to_string(pinned) + " " +
                     what + " where this product takes " +
                     (known.empty() ? "none" : known));
  }
  return {pinned};
}

/// The cached plan of `p` (created on first use).
GemmPlan &planFor(Context &context, const GemmProblem &p, size_t workspace,
                  const char *kernel) {
  const LtEpilogue fused = ltEpilogue(p);
  const GemmKey key = keyOf(p, workspace);
  auto found = context.gemmPlans.find(key);
  if (found != context.gemmPlans.end())
    return found->second;
  GemmPlan plan;
  if (p.norm != NormKind::None) {
    // Only our kernels apply a prologue: the skinny kernel's split counts
    // and the streaming GEMV are the candidates (linear() normalises into
    // scratch for other products). (Today the skinny kernel takes every
    // [N, K] prologue the streaming GEMV takes, so the latter only ever
    // competes; the checks stay for either alone.)
    const bool skinny = skinnyAllowed(context, p) && skinnyGemmSupports(p);
    plan.streamCandidate =
        skinnyAllowed(context, p) && streamAllowed() && streamGemvSupports(p);
    if (!skinny && !plan.streamCandidate)
      fail(kernel, "a norm prologue needs the skinny GEMM or the streaming "
                   "GEMV, and neither takes this product");
    if (skinny) {
      plan.skinnyCandidates =
          skinnySplitCandidates(p, workspace, context.smCount);
      plan.skinnySplits = 1;
    } else {
      plan.stream = true;
    }
    const size_t stashCounts =
        plan.streamCandidate ? streamGemvStashCandidates(p).size() : 0;
    plan.tuned = plan.skinnyCandidates.size() + stashCounts <= 1 &&
                 !pinFor(context, &p, 1);
    return context.gemmPlans.emplace(key, plan).first->second;
  }
  if (p.batch > INT_MAX) {
    plan.fallback = true;
    return context.gemmPlans.emplace(key, plan).first->second;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
  // sees our B as its A and our A as its B, each stored as the transpose of
  // what row-major says, so the transpose flags carry over unchanged.
  const cudaDataType_t type = cudaTypeOf(p.dtype);
  const cublasOperation_t opA = p.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opB = p.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  checkLt(cublasLtMatmulDescCreate(&plan.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
          kernel, "cublasLtMatmulDescCreate");
  checkLt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                         &opA, sizeof(opA)),
          kernel, "cublasLtMatmulDescSetAttribute(TRANSA)");
  checkLt(cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                         &opB, sizeof(opB)),
          kernel, "cublasLtMatmulDescSetAttribute(TRANSB)");
  if (p.bias || fused.relu) {
    const cublasLtEpilogue_t epilogue =
        p.bias ? (fused.relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                             : CUBLASLT_EPILOGUE_BIAS)
               : CUBLASLT_EPILOGUE_RELU;
    checkLt(cublasLtMatmulDescSetAttribute(plan.desc,
                                           CUBLASLT_MATMUL_DESC_EPILOGUE,
                                           &epilogue, sizeof(epilogue)),
            kernel, "cublasLtMatmulDescSetAttribute(EPILOGUE)");
  }
  if (p.bias)
    checkLt(cublasLtMatmulDescSetAttribute(plan.desc,
                                           CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                           &type, sizeof(type)),
            kernel, "cublasLtMatmulDescSetAttribute(BIAS_DATA_TYPE)");
  auto layout = [&](cublasLtMatrixLayout_t *out, int64_t rows, int64_t cols,
                    int64_t ld, int64_t stride) {
    checkLt(cublasLtMatrixLayoutCreate(out, type, rows, cols, ld), kernel,
            "cublasLtMatrixLayoutCreate");
    if (p.batch > 1) {
      const int32_t count = static_cast<int32_t>(p.batch);
      checkLt(
          cublasLtMatrixLayoutSetAttribute(
              *out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          kernel, "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      checkLt(cublasLtMatrixLayoutSetAttribute(
                  *out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                  sizeof(stride)),
              kernel, "cublasLtMatrixLayoutSetAttribute(BATCH_OFFSET)");
    }
  };
  // Stored (pre-op) shapes in column-major terms.
  layout(&plan.a, p.transB ? p.K : p.N, p.transB ? p.N : p.K, p.ldb, p.strideB);
  layout(&plan.b, p.transA ? p.M : p.K, p.transA ? p.K : p.M, p.lda, p.strideA);
  layout(&plan.c, p.N, p.M, p.ldc, p.strideC);
  if (fused.residual)
    layout(&plan.r, p.N, p.M, p.ldr, p.strideR);

  cublasLtMatmulPreference_t pref = nullptr;
  checkLt(cublasLtMatmulPreferenceCreate(&pref), kernel,
          "cublasLtMatmulPreferenceCreate");
  const uint64_t maxWorkspace = workspace;
  cublasLtMatmulPreferenceSetAttribute(pref,
                                       CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &maxWorkspace, sizeof(maxWorkspace));
  const uint32_t alignA = static_cast<uint32_t>(alignmentOf(p.B));
  const uint32_t alignB = static_cast<uint32_t>(alignmentOf(p.A));
  const uint32_t alignC = static_cast<uint32_t>(alignmentOf(p.C));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
      sizeof(alignA));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
      sizeof(alignB));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
      sizeof(alignC));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
      sizeof(alignC));
  cublasLtMatmulHeuristicResult_t results[kGemmCandidates] = {};
  int returned = 0;
  if (fused.residual) {
    const uint32_t alignR = static_cast<uint32_t>(alignmentOf(p.residual));
    cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignR,
        sizeof(alignR));
  }
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      context.lt, plan.desc, plan.a, plan.b, fused.residual ? plan.r : plan.c,
      plan.c, pref, kGemmCandidates, results, &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status == CUBLAS_STATUS_SUCCESS)
    for (int i = 0; i < returned; ++i)
      if (results[i].state == CUBLAS_STATUS_SUCCESS)
        plan.candidates.push_back(results[i]);
  if (plan.candidates.empty()) {
    plan.fallback = true;
  } else {
    plan.algo = plan.candidates[0].algo;
    plan.workspace = plan.candidates[0].workspaceSize;
    if (skinnyAllowed(context, p)) {
      plan.skinnyCandidates =
          skinnySplitCandidates(p, workspace, context.smCount);
      plan.streamCandidate = streamAllowed() && streamGemvSupports(p);
    }
    plan.tuned = plan.candidates.size() == 1 && plan.skinnyCandidates.empty() &&
                 !plan.streamCandidate && !pinFor(context, &p, 1);
  }
  return context.gemmPlans.emplace(key, plan).first->second;
}

} // namespace

void fallbackGemm(const GemmProblem &p, cudaStream_t stream,
                  const char *kernel) {
  if (p.M == 0 || p.N == 0 || p.batch == 0)
    return;
  const dim3 block(kTile, kTile);
  const int64_t gx = (p.N + kTile - 1) / kTile, gy = (p.M + kTile - 1) / kTile;
  if (gx > INT_MAX || gy > 65535)
    fail(kernel, "product of " + std::to_string(p.M) + " x " +
                     std::to_string(p.N) + " is too large for the fallback");
  const dim3 grid(static_cast<unsigned>(gx), static_cast<unsigned>(gy),
                  static_cast<unsigned>(std::min<int64_t>(p.batch, 65535)));
  visitFloat(p.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    launch(tiledGemmKernel<S>, grid, block, 0, stream, p);
  });
  checkLaunch(kernel);
}

namespace {

/// One cuBLASLt call of `p` with `algo` (the plan's descriptors).
cublasStatus_t runLt(const CudaCall &call, const GemmProblem &p,
                     const GemmPlan &plan, const cublasLtMatmulAlgo_t &algo,
                     size_t workspace, cudaStream_t stream) {
  const LtEpilogue fused = ltEpilogue(p);
  const float alpha = 1.0f, beta = fused.residual ? 1.0f : 0.0f;
  return cublasLtMatmul(call.context->lt, plan.desc, &alpha, p.B, plan.a, p.A,
                        plan.b, &beta, fused.residual ? p.residual : p.C,
                        fused.residual ? plan.r : plan.c, p.C, plan.c, &algo,
                        call.scratch, workspace, stream);
}

/// How long the kernel before a timed candidate runs (CandidateTimer):
/// about a batch-1 layer norm or attention kernel of a decode step.
constexpr long long kPredecessorNs = 5000;

/// One warp that waits `ns` nanoseconds of the GPU's global timer after
/// awaitInputs(), reading and writing nothing.
__global__ void predecessorKernel(long long ns) {
  awaitInputs();
  long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  while (now - start < ns);
}

/// Reads `words` 16-byte words at `from` (all of it through L2, evicting
/// what L2 held; these lines stay clean), writing nothing unless the words'
/// xor is one value, so the compiler keeps the loads.
__global__ void evictL2Kernel(const uint4 *from, size_t words,
                              unsigned *never) {
  awaitInputs();
  uint32_t x = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = from[i];
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x9E3779B9u)
    *never = x;
}

/// How tuning treats L2 before each timed run (HYBRID_CUDA_TUNE, read
/// once): Dirty (unset) writes twice L2's size; Clean ("clean") reads it,
/// so that no dirty line's write-back shares the HBM with the timed run;
/// Warm ("warm") leaves L2 as the last run left it.
enum class TuneEviction { Dirty, Clean, Warm };
TuneEviction tuneEviction() {
  static const TuneEviction mode = [] {
    const char *v = std::getenv("HYBRID_CUDA_TUNE");
    const std::string s = v ? v : "";
    return s == "warm"    ? TuneEviction::Warm
           : s == "clean" ? TuneEviction::Clean
                          : TuneEviction::Dirty;
  }();
  return mode;
}

/// Times candidate runs for tuning, each starting with the operands out of
/// L2, as a decode step's weights are (each read once per step from HBM):
/// timed warm, split-K shapes that win from L2 lose in the step (OPT-1.3B
/// decode, H200: 1.79 -> 1.71 ms per step at batch 1, 2.63 -> 2.42 at batch
/// 32). HYBRID_CUDA_TUNE=warm times repeated runs on warm operands instead.
/// The eviction by default writes (a memset), which leaves up to an L2 of
/// dirty lines to be written back during the timed run, as no decode step
/// has them: HYBRID_CUDA_TUNE=clean evicts by reading instead, to measure
/// whether that ranks close candidates as the step does (bench/RESULTS.md,
/// thirteenth session: the LM head's and the stash counts').
/// Not during a stream capture (nothing runs then): ready() says so.
///
/// With `afterKernel` (products the skinny kernel can take: a decode
/// step's), each timed run starts with a short kernel of ours before the
/// candidate, as a layer norm or attention kernel runs before a step's
/// projections: the skinny kernel's launch overlaps it and streams its
/// settled weight meanwhile (SkinnyGemm.h), a cuBLASLt kernel starts after
/// it. Timed alone, cuBLASLt won OPT-1.3B's fc1 / fc2 at batch 1 by 2-3
/// us, yet the step ran 1.487 -> 1.448 ms with the skinny kernel for every
/// product (GPT-2: 0.520 -> 0.432 ms; H200).
class CandidateTimer {
public:
  CandidateTimer(Context &context, cudaStream_t stream, bool afterKernel)
      : context_(context), stream_(stream), afterKernel_(afterKernel) {
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capturing) != cudaSuccess ||
        capturing != cudaStreamCaptureStatusNone) {
      cudaGetLastError();
      capturing_ = true;
      return;
    }
    if (cudaEventCreate(&start_) != cudaSuccess ||
        cudaEventCreate(&stop_) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    eviction_ = tuneEviction();
    if (eviction_ != TuneEviction::Warm && !context.l2Flush &&
        context.l2Bytes > 0) {
      // (Written once, so that reading it reads defined bytes; its last
      // word is where evictL2Kernel would write.)
      void *flush = nullptr;
      if (cudaMalloc(&flush, 2 * context.l2Bytes) != cudaSuccess) {
        flush = nullptr;
      } else if (cudaMemsetAsync(flush, 0, 2 * context.l2Bytes, stream) !=
                 cudaSuccess) {
        cudaFree(flush);
        flush = nullptr;
      }
      cudaGetLastError();
      context.l2Flush = flush;
    }
  }
  ~CandidateTimer() {
    if (start_)
      cudaEventDestroy(start_);
    if (stop_)
      cudaEventDestroy(stop_);
    cudaGetLastError(); // a candidate that failed leaves nothing behind
  }
  CandidateTimer(const CandidateTimer &) = delete;
  CandidateTimer &operator=(const CandidateTimer &) = delete;

  /// Inside a stream capture: nothing can be timed (the next call tunes).
  bool capturing() const { return capturing_; }
  /// Whether runs can be timed (else keep the heuristic's pick).
  bool ready() const { return start_ && stop_; }

  /// Milliseconds of the fastest of three runs; infinite when `run`, which
  /// enqueues one, says the first failed.
  template <typename Run> float time(Run run) {
    if (!run())
      return INFINITY;
    float fastest = INFINITY;
    for (int r = 0; r < 3; ++r) {
      if (context_.l2Flush && eviction_ == TuneEviction::Dirty)
        cudaMemsetAsync(context_.l2Flush, r, 2 * context_.l2Bytes, stream_);
      if (context_.l2Flush && eviction_ == TuneEviction::Clean)
        evictL2();
      cudaEventRecord(start_, stream_);
      if (afterKernel_)
        launch(predecessorKernel, 1, 32, 0, stream_, kPredecessorNs);
      run();
      cudaEventRecord(stop_, stream_);
      float ms = INFINITY;
      if (cudaEventSynchronize(stop_) == cudaSuccess &&
          cudaEventElapsedTime(&ms, start_, stop_) == cudaSuccess)
        fastest = std::min(fastest, ms);
    }
    return fastest;
  }

private:
  Context &context_;
  cudaStream_t stream_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  TuneEviction eviction_ = TuneEviction::Warm;
  bool capturing_ = false, afterKernel_ = false;

  /// Reads the flush buffer but its last 16 bytes (evictL2Kernel's
  /// `never`), with as many threads as the GPU holds.
  void evictL2() {
    const size_t words = 2 * context_.l2Bytes / sizeof(uint4) - 1;
    auto *from = static_cast<const uint4 *>(context_.l2Flush);
    auto *never = reinterpret_cast<unsigned *>(
        static_cast<char *>(context_.l2Flush) + words * sizeof(uint4));
    launch(evictL2Kernel, dim3(unsigned(std::max(1, context_.smCount) * 8)),
           dim3(256), 0, stream_, from, words, never);
  }
};

/// "linear bf16 1 x 2048 x 8192 [N,K]" (M x K x N; group members' N
/// joined by +).
std::string describeProducts(const char *kernel, const GemmProblem *problems,
                             size_t count) {
  const GemmProblem &p = problems[0];
  std::string n;
  for (size_t i = 0; i < count; ++i)
    n += (i ? "+" : "") + std::to_string(problems[i].N);
  return std::string(kernel) + " " + dtypeName(p.dtype) + " " +
         std::to_string(p.M) + " x " + std::to_string(p.K) + " x " + n +
         (p.transB ? " [N,K]" : " [K,N]") +
         (p.batch > 1 ? " batch " + std::to_string(p.batch) : "");
}

static_assert(kMaxStashedSteps == kStreamGemvMaxStash,
              "PlanPins.h and StreamGemv.h disagree on the stash counts");

/// The stash counts tuning times for the streaming GEMV of `q` (a product
/// or a group's first member): the pin's count where it names one (over
/// HYBRID_CUDA_GEMV_STASH), else streamGemvStashCandidates'.
std::vector<int> stashChoices(const PlanPin *pin, const GemmProblem &q,
                              const char *kernel) {
  if (!pin || pin->value < 0)
    return streamGemvStashCandidates(q);
  if (pin->value > kStreamGemvMaxStash || (pin->value > 0 && q.M != 1))
    fail(kernel, "HYBRID_CUDA_PLANS pins " + std::to_string(pin->value) +
                     " stashed steps: the streaming GEMV stashes 0 to " +
                     std::to_string(kStreamGemvMaxStash) +
                     " steps, and only with one x row");
  return {pin->value};
}

/// Adds a timed option to a plan's (GemmPlan::options): every stash count
/// of the streaming GEMV, but only the fastest split count of the skinny
/// kernel or of a group's one launch; an untimed one (infinite) not at all.
void noteOption(std::vector<PlanOption> &options, const PlanOption &option) {
  if (!std::isfinite(option.ms))
    return;
  if (option.kind == PlanPin::Kind::Skinny ||
      option.kind == PlanPin::Kind::OneLaunch)
    for (PlanOption &o : options)
      if (o.kind == option.kind) {
        if (option.ms < o.ms)
          o = option;
        return;
      }
  options.push_back(option);
}

/// " (stash 0: 19.4, 1: 19.2, 2: 19.5)": each stash count's time in
/// microseconds among `options`, where more than one was timed (the tune
/// log's).
std::string stashTimes(const std::vector<PlanOption> &options) {
  std::string text;
  int timed = 0;
  char us[32];
  for (const PlanOption &o : options) {
    if (o.kind != PlanPin::Kind::Stream)
      continue;
    std::snprintf(us, sizeof us, "%.1f", o.ms * 1e3);
    text += (text.empty() ? " (stash " : ", ") + std::to_string(o.value) +
            ": " + us;
    ++timed;
  }
  return timed < 2 ? "" : text + ")";
}

/// ", 2 steps stashed" for a tuned stash of 2 (nothing for 0 or -1).
std::string stashNote(int stash) {
  return stash > 0 ? ", " + std::to_string(stash) + " steps stashed" : "";
}

/// Notes a tuned plan's use where step tuning records them
/// (Context::usedPlans, StepTuning.h): `product` or `group`, of `problems`,
/// when `stream` is in the capture being recorded (Context::usedCapture;
/// what another engine runs meanwhile is not the step's).
void noteUse(Context &context, cudaStream_t stream, GemmPlan *product,
             GroupPlan *group, const GemmProblem *problems, size_t count) {
  if (!context.usedPlans || !context.usedCapture)
    return;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  if (cudaStreamGetCaptureInfo(stream, &capturing, &id) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  if (capturing != cudaStreamCaptureStatusActive || id != context.usedCapture)
    return;
  for (const UsedPlan &u : *context.usedPlans)
    if (u.product == product && u.group == group)
      return;
  std::string shape =
      std::to_string(problems[0].M) + "x" + std::to_string(problems[0].K) + "x";
  for (size_t i = 0; i < count; ++i)
    shape += (i ? "+" : "") + std::to_string(problems[i].N);
  context.usedPlans->push_back({product, group, std::move(shape)});
}

/// Times the plan's candidates on this call's operands (best of a few runs
/// each, after one to warm up) and keeps the fastest: cuBLASLt's
/// algorithms (with the part of the epilogue it does not fuse), the skinny
/// kernel's split counts and the streaming GEMV with each stash count
/// (stashChoices) — of one kind only where the context pins the shape
/// (PlanPins.h). The heuristic's first pick is often far from the best for
/// the skinny products of decoding (a few rows against a large weight
/// matrix). Runs write only the result (and scratch), which the real call
/// writes again. Not during a stream capture (nothing runs then): the next
/// call outside one tunes.
void tune(const CudaCall &call, const GemmProblem &p, GemmPlan &plan,
          size_t workspace, cudaStream_t stream, const char *kernel) {
  CandidateTimer timer(*call.context, stream,
                       !plan.skinnyCandidates.empty() || plan.streamCandidate);
  if (timer.capturing())
    return;
  if (!timer.ready()) {
    plan.tuned = true; // keep the heuristic's pick
    return;
  }
  auto timeRuns = [&](auto run) { return timer.time(run); };
  const LtEpilogue fused = ltEpilogue(p);
  float best = INFINITY;
  // A pin times only its kind (and count, where it names one).
  const PlanPin *pin = pinFor(*call.context, &p, 1);
  auto allowed = [&](PlanPin::Kind kind) { return !pin || pin->kind == kind; };
  if (pin && pin->kind == PlanPin::Kind::Stream && !plan.streamCandidate)
    fail(kernel, "HYBRID_CUDA_PLANS pins the streaming GEMV for " +
                     describeProducts(kernel, &p, 1) +
                     ", which it does not take");
  if (pin && pin->kind == PlanPin::Kind::CublasLt && plan.candidates.empty())
    fail(kernel, "HYBRID_CUDA_PLANS pins cuBLASLt for " +
                     describeProducts(kernel, &p, 1) +
                     ", which only our kernels run (a norm prologue)");
  if (pin && pin->kind == PlanPin::Kind::Skinny &&
      plan.skinnyCandidates.empty())
    fail(kernel, "HYBRID_CUDA_PLANS pins the skinny kernel for " +
                     describeProducts(kernel, &p, 1) +
                     ", which it does not take");
  const std::vector<int> splitCandidates =
      allowed(PlanPin::Kind::Skinny)
          ? pinnedCounts(plan.skinnyCandidates, pin ? pin->value : -1, kernel,
                         "skinny splits")
          : std::vector<int>{};
  const std::vector<int> stashCandidates =
      plan.streamCandidate && allowed(PlanPin::Kind::Stream)
          ? stashChoices(pin, p, kernel)
          : std::vector<int>{};
  // HYBRID_CUDA_SKINNY=prefer: the skinny kernel wherever it takes the
  // product (its split counts still timed), to measure a whole step
  // against the plans timed one product at a time.
  const bool skinnyOnly = !pin && skinnyMode() == KernelMode::Prefer &&
                          !plan.skinnyCandidates.empty();
  const bool streamOnly = !pin && !skinnyOnly && plan.streamCandidate &&
                          streamMode() == KernelMode::Prefer;
  plan.settled = pin || skinnyOnly || streamOnly;
  if (streamOnly) {
    plan.stream = true;
    plan.skinnySplits = 0;
    plan.tuned = true;
    if (tuneLog())
      std::fprintf(stderr, "hybrid: %s: streaming GEMV (preferred)\n",
                   describeProducts(kernel, &p, 1).c_str());
    return;
  }
  for (const cublasLtMatmulHeuristicResult_t &c : plan.candidates) {
    if (skinnyOnly || !allowed(PlanPin::Kind::CublasLt))
      break; // (the skinny kernel is kept untimed against cuBLASLt)
    const float ms = timeRuns([&] {
      if (runLt(call, p, plan, c.algo, c.workspaceSize, stream) !=
          CUBLAS_STATUS_SUCCESS)
        return false;
      finishEpilogue(p, fused, stream, kernel);
      return true;
    });
    if (ms < best) {
      best = ms;
      plan.algo = c.algo;
      plan.workspace = c.workspaceSize;
    }
  }
  const float lt = best;
  noteOption(plan.options, {PlanPin::Kind::CublasLt, -1, lt});
  float skinny = INFINITY;
  unsigned *counters = tileCounters(*call.context, stream, kernel);
  for (int splits : splitCandidates) {
    const float ms = timeRuns([&] {
      skinnyGemm(p, splits, call.scratch, workspace, stream, kernel, counters,
                 kTileCounters);
      return true;
    });
    noteOption(plan.options, {PlanPin::Kind::Skinny, splits, ms});
    skinny = std::min(skinny, ms);
    if (ms < best) {
      best = ms;
      plan.skinnySplits = splits;
    }
  }
  float streaming = INFINITY;
  if (!skinnyOnly)
    for (int stash : stashCandidates) {
      const float ms = timeRuns([&] {
        streamGemv(p, call.context->smCount, stream, kernel, stash);
        return true;
      });
      streaming = std::min(streaming, ms);
      noteOption(plan.options, {PlanPin::Kind::Stream, stash, ms});
      if (ms < best) {
        best = ms;
        plan.stream = true;
        plan.stash = stash;
        plan.skinnySplits = 0;
      }
    }
  plan.tuned = true;
  if (tuneLog()) {
    const std::string choice =
        (plan.stream ? "streaming GEMV" + stashNote(plan.stash)
         : plan.skinnySplits > 0
             ? "skinny, " + std::to_string(plan.skinnySplits) + " splits"
             : std::string("cuBLASLt")) +
        (pin ? " (pinned)" : "");
    std::fprintf(stderr,
                 "hybrid: tuned %s: cuBLASLt %.1f us, skinny %.1f us, "
                 "streaming %.1f us%s%s -> %s\n",
                 describeProducts(kernel, &p, 1).c_str(), lt * 1e3,
                 skinny * 1e3, streaming * 1e3,
                 stashTimes(plan.options).c_str(),
                 plan.skinnyCandidates.empty() ? "" : " (after a 5 us kernel)",
                 choice.c_str());
  }
}

} // namespace

bool gemmTakesPrologue(const CudaCall &call, const GemmProblem &p) {
  // (A shape pinned to cuBLASLt has its rows normalised into scratch.)
  const PlanPin *pin = call.context ? pinFor(*call.context, &p, 1) : nullptr;
  return call.context && skinnyAllowed(*call.context, p) &&
         !(pin && pin->kind == PlanPin::Kind::CublasLt) &&
         (skinnyGemmSupports(p) || (streamAllowed() && streamGemvSupports(p)));
}

void gemm(const CudaCall &call, const GemmProblem &p, const char *kernel) {
  if (p.M == 0 || p.N == 0 || p.batch == 0)
    return;
  const cudaStream_t stream = streamOf(call);
  if (p.K == 0 || !call.context)
    return fallbackGemm(p, stream, kernel);
  const size_t workspace =
      call.scratch ? std::min(call.scratchBytes, kGemmWorkspaceBytes) : 0;
  GemmPlan &plan = planFor(*call.context, p, workspace, kernel);
  if (plan.fallback)
    return fallbackGemm(p, stream, kernel);
  if (p.bias && p.norm == NormKind::None)
    checkLt(cublasLtMatmulDescSetAttribute(plan.desc,
                                           CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                           &p.bias, sizeof(p.bias)),
            kernel, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  if (!plan.tuned)
    tune(call, p, plan, workspace, stream, kernel);
  if (plan.tuned)
    noteUse(*call.context, stream, &plan, nullptr, &p, 1);
  if (plan.stream)
    return streamGemv(p, call.context->smCount, stream, kernel, plan.stash);
  if (plan.skinnySplits > 0)
    return skinnyGemm(
        p, plan.skinnySplits, call.scratch, workspace, stream, kernel,
        plan.skinnySplits > 1 ? tileCounters(*call.context, stream, kernel)
                              : nullptr,
        kTileCounters);
  const LtEpilogue fused = ltEpilogue(p);
  const cublasStatus_t status =
      runLt(call, p, plan, plan.algo, plan.workspace, stream);
  // cuBLASLt checks a configuration (a batch stride of 0, say) when it is
  // launched, before enqueueing anything: what it declines runs on our
  // kernel, now and for every later call of the shape.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED ||
      status == CUBLAS_STATUS_INVALID_VALUE) {
    plan.fallback = true;
    return fallbackGemm(p, stream, kernel);
  }
  checkLt(status, kernel, "cublasLtMatmul");
  finishEpilogue(p, fused, stream, kernel);
}

constexpr int kStreamGroup = GroupPlan::kStreamGroup;

void gemmGroup(const CudaCall &call, const GemmProblem *problems, size_t count,
               const char *kernel) {
  auto oneByOne = [&] {
    for (size_t i = 0; i < count; ++i)
      gemm(call, problems[i], kernel);
  };
  if (count < 2 || !call.context || !skinnyGemmGroupSupports(problems, count))
    return oneByOne();
  if (!skinnyAllowed(*call.context, problems[0]))
    return oneByOne();
  Context &context = *call.context;
  // A pin (PlanPins.h) times only its kind of launch (apart is timed
  // regardless, for the log) and keeps the fastest of those. A member's own
  // pin holds only where the members run apart, so an unpinned group with
  // a pinned member does.
  const PlanPin *pin = pinFor(context, problems, count);
  auto allowed = [&](PlanPin::Kind kind) { return !pin || pin->kind == kind; };
  if (!pin)
    for (size_t i = 0; i < count; ++i)
      if (pinFor(context, &problems[i], 1))
        return oneByOne();
  // Each member keeps the plan a linear of its shape would have, tuned
  // alone (running it) on the first call outside a capture, which then
  // times the group once: the members by their plans against one skinny
  // launch over all of them for each split count of the widest member's
  // candidates (one launch saves a launch per extra member and fills the
  // GPU with more blocks than any member alone, but the members' plans may
  // be cuBLASLt tiles that stream better). Inside a capture, untimed, the
  // group is one launch when every member's plan is the skinny kernel.
  const size_t workspace =
      call.scratch ? std::min(call.scratchBytes, kGemmWorkspaceBytes) : 0;
  std::vector<GemmKey> key;
  const std::vector<int> *candidates = nullptr;
  int heuristic = 0; // the widest member's split when every member is skinny
  bool allSkinny = true;
  int64_t widest = -1;
  bool untuned = false;
  for (size_t i = 0; i < count; ++i)
    untuned =
        untuned || !planFor(context, problems[i], workspace, kernel).tuned;
  if (untuned) {
    oneByOne(); // tunes every member, outside a capture
    for (size_t i = 0; i < count; ++i)
      if (!planFor(context, problems[i], workspace, kernel).tuned)
        return; // in a capture: the members ran untuned
  }
  for (size_t i = 0; i < count; ++i) {
    GemmPlan &plan = planFor(context, problems[i], workspace, kernel);
    if (plan.fallback) { // (cuBLASLt takes no such product: no group)
      if (!untuned)
        oneByOne();
      return;
    }
    key.push_back(keyOf(problems[i], workspace));
    allSkinny = allSkinny && plan.skinnySplits > 0;
    if (problems[i].N > widest) {
      widest = problems[i].N;
      candidates = &plan.skinnyCandidates;
      heuristic = plan.skinnySplits;
    }
  }
  const cudaStream_t stream = streamOf(call);
  auto fits = [&](int splits) {
    return splits > 0 &&
           skinnyGemmGroupScratchBytes(problems, count, splits) <= workspace;
  };
  auto launchGroup = [&](int splits) {
    skinnyGemmGroup(
        problems, count, splits, call.scratch, workspace, stream, kernel,
        splits > 1 ? tileCounters(context, stream, kernel) : nullptr,
        kTileCounters);
  };
  // The group's plan (the context's, once made; `made` until then).
  GroupPlan made{allSkinny ? heuristic : 0};
  const GroupPlan *chosen = &made;
  if (auto found = context.groupPlans.find(key);
      found != context.groupPlans.end()) {
    chosen = &found->second;
    noteUse(context, streamOf(call), nullptr, &found->second, problems, count);
  } else if (!pin && streamMode() == KernelMode::Prefer &&
             skinnyMode() != KernelMode::Prefer &&
             streamGemvGroupSupports(problems, count)) {
    made.splits = kStreamGroup;
    made.settled = true;
    chosen = &context.groupPlans.emplace(std::move(key), made).first->second;
  } else {
    GroupPlan &plan = made;
    int &splits = plan.splits;
    CandidateTimer timer(context, stream, true);
    if (!timer.capturing()) {
      if (timer.ready()) {
        float best = timer.time([&] {
          oneByOne();
          return true;
        });
        const float apart = best;
        plan.settled = pin != nullptr;
        noteOption(plan.options, {PlanPin::Kind::Apart, -1, apart});
        if (!allowed(PlanPin::Kind::Apart))
          best = INFINITY;
        float together = INFINITY;
        splits = 0;
        std::vector<int> fitting;
        for (int s : *candidates)
          if (fits(s))
            fitting.push_back(s);
        const bool streams =
            streamAllowed() && streamGemvGroupSupports(problems, count);
        if (pin && pin->kind == PlanPin::Kind::Stream && !streams)
          fail(kernel, "HYBRID_CUDA_PLANS pins the streaming GEMV for " +
                           describeProducts(kernel, problems, count) +
                           ", which it does not take");
        const std::vector<int> launches =
            allowed(PlanPin::Kind::OneLaunch)
                ? pinnedCounts(fitting, pin ? pin->value : -1, kernel,
                               "skinny splits")
                : std::vector<int>{};
        if (pin && pin->kind == PlanPin::Kind::OneLaunch && launches.empty())
          fail(kernel, "HYBRID_CUDA_PLANS pins one launch for " +
                           describeProducts(kernel, problems, count) +
                           ", which the skinny kernel does not take in one");
        const std::vector<int> stashes =
            streams && allowed(PlanPin::Kind::Stream)
                ? stashChoices(pin, problems[0], kernel)
                : std::vector<int>{};
        for (int s : launches) {
          const float ms = timer.time([&] {
            launchGroup(s);
            return true;
          });
          noteOption(plan.options, {PlanPin::Kind::OneLaunch, s, ms});
          together = std::min(together, ms);
          if (ms < best) {
            best = ms;
            splits = s;
          }
        }
        float streaming = INFINITY;
        for (int stash : stashes) {
          const float ms = timer.time([&] {
            streamGemvGroup(problems, count, context.smCount, stream, kernel,
                            stash);
            return true;
          });
          streaming = std::min(streaming, ms);
          noteOption(plan.options, {PlanPin::Kind::Stream, stash, ms});
          if (ms < best) {
            best = ms;
            splits = kStreamGroup;
            plan.stash = stash;
          }
        }
        if (tuneLog()) {
          const std::string choice =
              (splits == kStreamGroup ? "streaming GEMV" + stashNote(plan.stash)
               : splits > 0
                   ? "one launch, " + std::to_string(splits) + " splits"
                   : std::string("apart")) +
              (pin ? " (pinned)" : "");
          std::fprintf(stderr,
                       "hybrid: tuned %s: apart %.1f us, one launch %.1f us, "
                       "streaming %.1f us%s (after a 5 us kernel) -> %s\n",
                       describeProducts(kernel, problems, count).c_str(),
                       apart * 1e3, together * 1e3, streaming * 1e3,
                       stashTimes(plan.options).c_str(), choice.c_str());
        }
      }
      chosen = &context.groupPlans.emplace(std::move(key), plan).first->second;
    }
  }
  if (chosen->splits == kStreamGroup)
    return streamGemvGroup(problems, count, context.smCount, stream, kernel,
                           chosen->stash);
  if (!fits(chosen->splits))
    return oneByOne();
  launchGroup(chosen->splits);
}

} // namespace hybrid::cuda
