// The per-device state the CUDA kernels share (the definition behind the
// opaque hybrid::cuda::Context of CudaKernels.h): the cuBLASLt handle, the
// device's limits, and the GEMM plans chosen once per shape. Owned by the
// backend (createContext / destroyContext); not thread-safe: one host thread
// per stream, as CudaKernels.h says.
#pragma once

#include "cuda/CudaKernels.h"
#include "cuda/PlanPins.h"

#include <cublasLt.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hybrid::cuda {

/// A GEMM's shape, layout, dtype, epilogue, pointer alignments and
/// workspace limit: everything cuBLASLt's heuristic and the timing of the
/// candidates look at.
using GemmKey = std::array<int64_t, 24>;

/// One way of running a product or a linear group that tuning timed alone:
/// a kind of kernel (PlanPins.h's, cuBLASLt and skinny for a product,
/// apart and one launch for a group, the streaming GEMV for either) with
/// its split or stash count (-1: none), and its time in milliseconds. What
/// step tuning (StepTuning.h) tries again inside a captured step.
struct PlanOption {
  PlanPin::Kind kind = PlanPin::Kind::CublasLt;
  int value = -1;
  float ms = INFINITY;
};

/// Descriptors and the algorithm chosen for one GemmKey. `fallback` marks
/// shapes cuBLASLt has no algorithm for (our own kernel runs them).
struct GemmPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatrixLayout_t r = nullptr; ///< a residual C (when fused)
  cublasLtMatmulAlgo_t algo = {};
  size_t workspace = 0;
  bool fallback = false;
  /// The heuristic's best few algorithms (algo is the first) until the
  /// first call outside a stream capture times them and keeps the fastest.
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;
  /// Split counts of our skinny kernel (SkinnyGemm.h) timed beside them,
  /// for the few-row products it takes.
  std::vector<int> skinnyCandidates;
  /// The skinny kernel's split count when it measured fastest (it then runs
  /// instead of cuBLASLt), else 0.
  int skinnySplits = 0;
  /// Whether our streaming GEMV (StreamGemv.h) takes the product, and
  /// whether it measured fastest (it then runs instead of either).
  bool streamCandidate = false;
  bool stream = false;
  /// The streaming GEMV's stashed steps (streamGemv's `stash`) as tuning
  /// chose them (stashChoices in Gemm.cu: each count timed unless
  /// HYBRID_CUDA_GEMV_STASH(_NORM) or a pin names one), or -1 (untimed:
  /// the environment's count, 0 where it is tuned).
  int stash = -1;
  bool tuned = false;
  /// What tuning timed (cuBLASLt's fastest algorithm, the skinny kernel's
  /// fastest split count, each stash count), empty where it timed nothing.
  std::vector<PlanOption> options;
  /// The plan is not step-tuned: a pin or a "prefer" switch fixed it, or
  /// step tuning already kept an option for it.
  bool settled = false;
};

/// How a linear group (gemmGroup) runs, by its members' keys.
struct GroupPlan {
  /// The skinny split count of the one launch that measured faster than
  /// running the members by their own plans, or 0 when that was faster, or
  /// kStreamGroup when one streaming GEMV launch (StreamGemv.h) was.
  int splits = 0;
  int stash = -1; ///< the streaming launch's, as GemmPlan::stash
  static constexpr int kStreamGroup = -1;
  /// As GemmPlan's: apart, the fastest one launch, each stash count.
  std::vector<PlanOption> options;
  bool settled = false;
};

/// A plan a stream capture used (Context::usedPlans): a product's or a
/// linear group's, and its shape as HYBRID_CUDA_PLANS writes it.
struct UsedPlan {
  GemmPlan *product = nullptr;
  GroupPlan *group = nullptr;
  std::string shape; ///< "1x2048x50272", a group's "1x2048x2048+512+512"
};

struct Context {
  int device = 0;
  int smCount = 0;
  int computeMajor = 0; ///< compute capability (8: Ampere, 9: Hopper)
  size_t maxSharedPerBlockOptin = 0;
  size_t l2Bytes = 0; ///< the L2 cache's size
  /// Twice l2Bytes of device memory that GEMM tuning writes before each
  /// timed run (made on first use; not with HYBRID_CUDA_TUNE=warm), or null.
  void *l2Flush = nullptr;
  cublasLtHandle_t lt = nullptr;
  std::map<GemmKey, GemmPlan> gemmPlans;
  /// Linear groups (gemmGroup) by their members' keys.
  std::map<std::vector<GemmKey>, GroupPlan> groupPlans;
  /// Which kind of kernel GEMM tuning may choose per product shape
  /// (PlanPins.h): HYBRID_CUDA_PLANS' entries when the context was made;
  /// tests set their own.
  std::vector<PlanPin> planPins;
  /// While set (step tuning's first capture, StepTuning.h): each tuned plan
  /// gemm() and gemmGroup() use, once, in the order of their first use.
  std::vector<UsedPlan> *usedPlans = nullptr;
  /// The capture (cudaStreamGetCaptureInfo's id) whose GEMMs usedPlans
  /// records, not another engine's meanwhile; 0 before it begins.
  unsigned long long usedCapture = 0;
  /// Zeroed counters per stream (kernels whose blocks count their way to
  /// the one that finishes a tile leave them zeroed), made on a stream's
  /// first call outside a capture.
  std::map<void *, unsigned *> tileCounters;
  /// Runs attention's decode steps on the per-row kernel for this context,
  /// as HYBRID_CUDA_DECODE_ATTN=old does for all (tests cover both).
  bool oldDecodeAttention = false;
  /// Runs them on the CUDA-core grouped kernel where the tensor-core one
  /// would apply, as HYBRID_CUDA_DECODE_ATTN=grouped does for all.
  bool coreDecodeAttention = false;
  /// The dynamic shared memory each kernel (a __global__ function) was let
  /// use beyond 48 KB on this device (the attribute belongs to the device's
  /// context, not the process).
  std::map<const void *, size_t> sharedOptIns;
};

/// The dynamic shared memory a block may have: the device's opt-in limit
/// through `context`, or the 48 KB every kernel has without one.
inline size_t sharedLimit(const Context *context) {
  return context ? context->maxSharedPerBlockOptin : size_t(48) << 10;
}

/// Lets `kernel` (a __global__ function) launch with `bytes` of dynamic
/// shared memory on the device of `context` (once per size it grows to),
/// or, without a context, on the current device (every call). Throws naming
/// `who` when CUDA refuses.
void allowSharedMemory(Context *context, const void *kernel, size_t bytes,
                       const char *who);

/// How many counters tileCounters gives.
constexpr size_t kTileCounters = size_t(1) << 16;

/// The kTileCounters zeroed counters of `stream`: made (and zeroed on the
/// stream) on its first call, or null while the stream is being captured
/// and has none yet (callers then take a path without them). Throws
/// naming `kernel` when the allocation fails.
unsigned *tileCounters(Context &context, void *stream, const char *kernel);

} // namespace hybrid::cuda
