// slice: strided slice along listed axes with ONNX Slice semantics (the CPU
// kernel's clamping, negative steps included); any dtype.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"

#include <algorithm>
#include <vector>

namespace hybrid::cuda::kernels {

void slice(const CudaCall &call) {
  expectArity(call, "slice", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "slice", "result");
  const ops::Slice &attrs = call.attrs<ops::Slice>();
  std::vector<int64_t> axes = attrs.axes, steps = attrs.steps;
  const std::vector<int64_t> &starts = attrs.starts, &ends = attrs.ends;
  const int64_t rank = input.rank();
  // Missing axes mean the leading dimensions, missing steps mean 1 (ONNX).
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != axes.size() || ends.size() != axes.size() ||
      steps.size() != axes.size())
    fail("slice", "axes, starts, ends and steps must have the same length");

  std::vector<int64_t> start(rank, 0), step(rank, 1);
  Shape outShape = input.shape;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = normalizeAxis(axes[i], rank, "slice");
    if (seen[axis])
      fail("slice", "axis " + std::to_string(axes[i]) + " is listed twice");
    seen[axis] = true;
    const int64_t dim = input.shape[axis];
    int64_t s = starts[i], e = ends[i], st = steps[i];
    if (st == 0)
      fail("slice", "step along axis " + std::to_string(axes[i]) + " is 0");
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    int64_t length = 0;
    if (dim == 0) {
      s = 0;
    } else if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e > s)
        length = (e - s - 1) / st + 1;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      if (s > e)
        length =
            static_cast<int64_t>(uint64_t(s - e - 1) / (0 - uint64_t(st))) + 1;
    }
    start[axis] = s;
    step[axis] = st;
    outShape[axis] = length;
  }
  expectShape(result, outShape, "slice", "result");
  if (result.numel() == 0)
    return;
  const std::vector<int64_t> inStrides = contiguousStrides(input.shape);
  std::vector<int64_t> strides(rank);
  int64_t offset = 0;
  for (int64_t d = 0; d < rank; ++d) {
    // A length-1 dimension never steps (and a huge step must not overflow).
    strides[d] = outShape[d] > 1 ? inStrides[d] * step[d] : 0;
    offset += start[d] * inStrides[d];
  }
  const size_t es = dtypeSize(input.dtype);
  copyStrided(stridedPlan(outShape, strides.data(), "slice"),
              static_cast<const char *>(input.data) + offset * es, result.data,
              es, streamOf(call), "slice");
}

} // namespace hybrid::cuda::kernels
