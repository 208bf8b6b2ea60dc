// The kernel table: each typed op (and each kind of an op with kinds) to its
// CUDA kernel, as runtime/base/ops/ops.py lays it out for every backend.
#include "Kernels.h"

#include <iterator>

namespace hybrid::cuda {

#include "common/KernelTable.inc"

} // namespace hybrid::cuda
