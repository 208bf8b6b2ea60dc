// Every CPU kernel entry point: one per op (per kind for ops with kinds) and
// the scratch functions (`<kernel>ScratchBytes`) of ops whose kernels take
// scratch, as runtime/base/ops/ops.py declares them for every backend;
// KernelTable.cpp maps the typed ops to them. Names that are C++ keywords
// get a `logical` prefix.
#pragma once

#include "cpu/CpuKernels.h"

namespace hybrid::cpu::kernels {

#define HYBRID_KERNEL_CALL KernelCall
#define HYBRID_SCRATCH_PARAMS const KernelCall &call, int threads
#include "common/KernelDecls.inc"
#undef HYBRID_KERNEL_CALL
#undef HYBRID_SCRATCH_PARAMS

/// cache_write on tensors, for kernels that write a cache as part of their
/// work (an attention appending its step's keys and values).
void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axis);

} // namespace hybrid::cpu::kernels
