// broadcast_to: NumPy broadcast of the input to the result's shape (ONNX
// Expand); any dtype, as a strided copy.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/BroadcastTo.h"

namespace hybrid::cuda::kernels {

void broadcastTo(const CudaCall &call) {
  const BroadcastToArgs a = BroadcastToArgs::bind(call, "broadcast_to");
  const BroadcastToProblem p = describeBroadcastTo(a);
  copyStrided(broadcastPlan<1>(a.out.shape, {&a.input.shape}, "broadcast_to"),
              a.input.data, a.out.data, p.elementSize, streamOf(call),
              "broadcast_to");
}

} // namespace hybrid::cuda::kernels
