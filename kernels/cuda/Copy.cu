// copy: the same bytes in another buffer of the same dtype and element count,
// any dtype (a reshape is a copy into a result of another shape); a
// device-to-device copy on the call's stream (captured as a memcpy node).
#include "Device.cuh"
#include "Kernels.h"
#include "common/Copy.h"

namespace hybrid::cuda::kernels {

void copy(const CudaCall &call) {
  const CopyArgs a = CopyArgs::bind(call, "copy");
  const CopyProblem p = describeCopy(a);
  if (p.bytes == 0)
    return;
  checkCuda(cudaMemcpyAsync(a.out.data, a.input.data, p.bytes,
                            cudaMemcpyDeviceToDevice, streamOf(call)),
            "copy", "cudaMemcpyAsync");
}

} // namespace hybrid::cuda::kernels
