// The marker of the per-element math that kernels/common and Philox share:
// host and device functions under nvcc, so the CUDA kernels run the very
// code the CPU kernels (built by the host compiler alone) run.
#pragma once

#if defined(__CUDACC__)
#define HYBRID_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define HYBRID_HOST_DEVICE inline
#endif
