// broadcast_to: NumPy broadcast of the input to the result's shape (ONNX
// Expand); any dtype (elements are moved as words of their size).
#include "common/BroadcastTo.h"
#include "Broadcast.h"
#include "Kernels.h"

namespace hybrid::cpu::kernels {

void broadcastTo(const KernelCall &call) {
  const BroadcastToArgs a = BroadcastToArgs::bind(call, "broadcast_to");
  const BroadcastToProblem p = describeBroadcastTo(a);
  copyStrided(BroadcastWalk(a.out.shape, {&a.input.shape}, "broadcast_to"),
              a.input.data, 0, a.out.data, p.elementSize);
}

} // namespace hybrid::cpu::kernels
