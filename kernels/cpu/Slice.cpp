// slice: strided slice along listed axes with ONNX Slice semantics; any dtype.
#include "common/Slice.h"
#include "Broadcast.h"
#include "Kernels.h"

namespace hybrid::cpu::kernels {

void slice(const KernelCall &call) {
  const SliceArgs a = SliceArgs::bind(call, "slice");
  const SliceProblem p = describeSlice(a);
  if (a.out.numel() == 0)
    return;
  copyStrided(BroadcastWalk::fromStrides(p.shape, p.strides.data(), "slice"),
              a.input.data, p.offset, a.out.data, p.elementSize);
}

} // namespace hybrid::cpu::kernels
