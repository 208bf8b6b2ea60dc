// copy: the same bytes in another buffer of the same dtype and element count,
// any dtype (a reshape is a copy into a result of another shape); a
// device-to-device copy on the call's stream (captured as a memcpy node).
#include "Device.cuh"
#include "Kernels.h"

namespace hybrid::cuda::kernels {

void copy(const CudaCall &call) {
  expectArity(call, "copy", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "copy", "result");
  if (input.numel() != result.numel())
    fail("copy", "input " + shapeToString(input.shape) + " and result " +
                     shapeToString(result.shape) +
                     " have different element counts");
  if (input.numel() > 0 && input.data != result.data)
    checkCuda(cudaMemcpyAsync(result.data, input.data,
                              input.numel() * dtypeSize(input.dtype),
                              cudaMemcpyDeviceToDevice, streamOf(call)),
              "copy", "cudaMemcpyAsync");
}

} // namespace hybrid::cuda::kernels
