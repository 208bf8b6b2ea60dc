// Creating and destroying the kernels' per-device Context, and whether a
// CUDA device is present at all.
#include "Context.h"

#include "Check.h"

#include <cuda_runtime.h>

#include <memory>

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
  checkCublas(cublasLtCreate(&context->lt), "cublasLtCreate");
  return context.release();
}

void destroyContext(Context *context) {
  if (!context)
    return;
  for (auto &entry : context->gemmPlans)
    destroyPlan(entry.second);
  if (context->lt)
    cublasLtDestroy(context->lt);
  delete context;
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
