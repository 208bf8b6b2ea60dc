// concat: join inputs along `axis`; any dtype. Each input is one pitched row
// copy into its slot of the result (outer rows of the input's bytes).
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/Concat.h"

namespace hybrid::cuda::kernels {

void concat(const CudaCall &call) {
  const ConcatProblem p = describeConcat(call);
  char *dst = static_cast<char *>(call.results[0].data);
  for (const ConstTensor &t : call.operands) {
    const int64_t bytes = t.shape[p.axis] * p.inner;
    copyRows(dst, p.outRow, t.data, bytes, bytes, p.outer, streamOf(call),
             "concat");
    dst += bytes;
  }
}

} // namespace hybrid::cuda::kernels
