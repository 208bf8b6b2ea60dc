// Every CUDA kernel entry point: one per op (per kind for ops with kinds) and
// the scratch functions (`<kernel>ScratchBytes`) of ops whose kernels take
// scratch, as runtime/base/ops/ops.py declares them for every backend;
// KernelTable.cpp maps the typed ops to them. Names that are C++ keywords
// get a `logical` prefix.
#pragma once

#include "cuda/CudaKernels.h"

namespace hybrid::cuda::kernels {

#define HYBRID_KERNEL_CALL CudaCall
#define HYBRID_SCRATCH_PARAMS const CudaCall &call
#include "common/KernelDecls.inc"
#undef HYBRID_KERNEL_CALL
#undef HYBRID_SCRATCH_PARAMS

/// cache_write on tensors, enqueued on `stream`, for kernels that write a
/// cache as part of their work (an attention appending outside the grouped
/// decode kernel).
void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axis, Stream stream);

} // namespace hybrid::cuda::kernels
