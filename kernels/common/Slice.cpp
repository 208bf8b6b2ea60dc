// slice's checks and strided view (see Slice.h).
#include "common/Slice.h"

#include "common/Check.h"

#include <algorithm>

namespace hybrid::kernels {

SliceProblem describeSlice(const SliceArgs &a) {
  const ConstTensor &input = a.input;
  expectDType(a.out, input.dtype, "slice", "result");
  std::vector<int64_t> axes = a.attrs.axes, steps = a.attrs.steps;
  const std::vector<int64_t> &starts = a.attrs.starts, &ends = a.attrs.ends;
  const int64_t rank = input.rank();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != axes.size() || ends.size() != axes.size() ||
      steps.size() != axes.size())
    fail("slice", "axes, starts, ends and steps must have the same length");

  std::vector<int64_t> start(rank, 0), step(rank, 1);
  SliceProblem p;
  p.shape = input.shape;
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
      // The step's magnitude as unsigned: -INT64_MIN does not fit in i64.
      if (s > e)
        length =
            static_cast<int64_t>(uint64_t(s - e - 1) / (0 - uint64_t(st))) + 1;
    }
    start[axis] = s;
    step[axis] = st;
    p.shape[axis] = length;
  }
  expectShape(a.out, p.shape, "slice", "result");
  p.elementSize = dtypeSize(input.dtype);
  p.strides.assign(rank, 0);
  if (a.out.numel() == 0)
    return p; // (steps times strides may overflow where nothing moves)
  const std::vector<int64_t> inStrides = contiguousStrides(input.shape);
  for (int64_t d = 0; d < rank; ++d) {
    // A length-1 dimension never steps (and a huge step must not overflow).
    p.strides[d] = p.shape[d] > 1 ? inStrides[d] * step[d] : 0;
    p.offset += start[d] * inStrides[d];
  }
  return p;
}

} // namespace hybrid::kernels
