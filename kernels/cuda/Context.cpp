// Creating and destroying the kernels' per-device Context, and whether a
// CUDA device is present at all.
#include "Context.h"

#include "Check.h"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace hybrid::cuda {
namespace {

void checkCublas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cuda context", std::string(what) + " failed: cuBLAS status " +
                             std::to_string(static_cast<int>(status)));
}

void destroyPlan(GemmPlan &plan) {
  if (plan.desc)
    cublasLtMatmulDescDestroy(plan.desc);
  if (plan.a)
    cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b)
    cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.c)
    cublasLtMatrixLayoutDestroy(plan.c);
  if (plan.r)
    cublasLtMatrixLayoutDestroy(plan.r);
  plan = GemmPlan{};
}

} // namespace

Context *createContext() {
  auto context = std::make_unique<Context>();
  checkCuda(cudaGetDevice(&context->device), "cuda context", "cudaGetDevice");
  cudaDeviceProp props{};
  checkCuda(cudaGetDeviceProperties(&props, context->device), "cuda context",
            "cudaGetDeviceProperties");
  context->smCount = props.multiProcessorCount;
  context->computeMajor = props.major;
  context->maxSharedPerBlockOptin = props.sharedMemPerBlockOptin;
  context->l2Bytes = static_cast<size_t>(props.l2CacheSize);
  std::string error;
  const char *pins = std::getenv("HYBRID_CUDA_PLANS");
  if (!parsePlanPins(pins ? pins : "", context->planPins, error))
    fail("cuda context", error);
  checkCublas(cublasLtCreate(&context->lt), "cublasLtCreate");
  return context.release();
}

unsigned *tileCounters(Context &context, void *stream, const char *kernel) {
  auto it = context.tileCounters.find(stream);
  if (it != context.tileCounters.end())
    return it->second;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  checkCuda(cudaStreamIsCapturing(s, &capturing), kernel,
            "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone)
    return nullptr;
  unsigned *counters = nullptr;
  const size_t bytes = kTileCounters * sizeof(unsigned);
  checkCuda(cudaMalloc(&counters, bytes), kernel, "cudaMalloc (tile counters)");
  const cudaError_t zeroed = cudaMemsetAsync(counters, 0, bytes, s);
  if (zeroed != cudaSuccess) {
    cudaFree(counters);
    checkCuda(zeroed, kernel, "cudaMemsetAsync (tile counters)");
  }
  context.tileCounters.emplace(stream, counters);
  return counters;
}

void allowSharedMemory(Context *context, const void *kernel, size_t bytes,
                       const char *who) {
  if (context) {
    size_t &allowed = context->sharedOptIns[kernel];
    if (bytes <= allowed)
      return;
    allowed = 0; // until CUDA agrees
  }
  checkCuda(cudaFuncSetAttribute(kernel,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 static_cast<int>(bytes)),
            who, "cudaFuncSetAttribute");
  if (context)
    context->sharedOptIns[kernel] = bytes;
}

void destroyContext(Context *context) {
  if (!context)
    return;
  for (auto &entry : context->tileCounters)
    cudaFree(entry.second);
  if (context->l2Flush)
    cudaFree(context->l2Flush);
  for (auto &entry : context->gemmPlans)
    destroyPlan(entry.second);
  if (context->lt)
    cublasLtDestroy(context->lt);
  delete context;
}

bool overlapLaunches() {
  static const bool allowed = [] {
    const char *v = std::getenv("HYBRID_CUDA_PDL");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  if (!allowed)
    return false;
  // Per device: 0 not asked yet, 1 before sm_90, 2 sm_90 or later.
  static std::atomic<int> known[64];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64)
    return false;
  int v = known[device].load(std::memory_order_relaxed);
  if (v == 0) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor,
                               device) != cudaSuccess)
      return false;
    v = major >= 9 ? 2 : 1;
    known[device].store(v, std::memory_order_relaxed);
  }
  return v == 2;
}

bool deviceAvailable() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError(); // clear the error so later calls do not see it
    return false;
  }
  return count > 0;
}

} // namespace hybrid::cuda
