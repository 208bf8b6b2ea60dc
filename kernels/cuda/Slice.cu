// slice: strided slice along listed axes with ONNX Slice semantics (the CPU
// kernel's clamping, negative steps included); any dtype.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/Slice.h"

namespace hybrid::cuda::kernels {

void slice(const CudaCall &call) {
  const SliceArgs a = SliceArgs::bind(call, "slice");
  const SliceProblem p = describeSlice(a);
  const char *first = static_cast<const char *>(a.input.data);
  copyStrided(stridedPlan(p.shape, p.strides.data(), "slice"),
              first + p.offset * static_cast<int64_t>(p.elementSize),
              a.out.data, p.elementSize, streamOf(call), "slice");
}

} // namespace hybrid::cuda::kernels
