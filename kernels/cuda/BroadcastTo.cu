// broadcast_to: NumPy broadcast of the input to the result's shape (ONNX
// Expand); any dtype. The shape attribute may be symbolic, so the concrete
// shape is the result's.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"

namespace hybrid::cuda::kernels {

void broadcastTo(const CudaCall &call) {
  expectArity(call, "broadcast_to", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "broadcast_to", "result");
  const StridedPlan<1> plan =
      broadcastPlan<1>(result.shape, {&input.shape}, "broadcast_to");
  copyStrided(plan, input.data, result.data, dtypeSize(input.dtype),
              streamOf(call), "broadcast_to");
}

} // namespace hybrid::cuda::kernels
