// broadcast_to: NumPy broadcast of the input to the result's shape (ONNX
// Expand); any dtype (elements are moved as words of their size). The shape
// attribute may be symbolic, so the kernel takes the concrete shape from the
// result.
#include "Broadcast.h"
#include "KernelCheck.h"
#include "Kernels.h"

namespace hybrid::cpu::kernels {

void broadcastTo(const KernelCall &call) {
  expectArity(call, "broadcast_to", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "broadcast_to", "result");
  BroadcastWalk walk(result.shape, {&input.shape}, "broadcast_to");
  copyStrided(walk, input.data, 0, result.data, dtypeSize(input.dtype));
}

} // namespace hybrid::cpu::kernels
