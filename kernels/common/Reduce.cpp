// reduce's host-side checks and shape, shared by every backend.
#include "common/Reduce.h"

#include "common/Check.h"

namespace hybrid::kernels {

ReduceProblem reduceShape(const Shape &input, const ops::Reduce &attrs,
                          const char *kernel) {
  const int64_t rank = static_cast<int64_t>(input.size());
  ReduceProblem p;
  p.reduced.assign(rank, attrs.axes.empty());
  for (int64_t axis : attrs.axes)
    p.reduced[normalizeAxis(axis, rank, kernel)] = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (!p.reduced[d]) {
      p.out.push_back(input[d]);
    } else {
      p.reduceCount *= input[d];
      if (attrs.keepdims)
        p.out.push_back(1);
    }
  }
  return p;
}

ReduceProblem describeReduce(const ReduceArgs &a, const char *kernel) {
  expectDType(a.out, a.input.dtype, kernel, "result");
  ReduceProblem p = reduceShape(a.input.shape, a.attrs, kernel);
  p.dtype = a.input.dtype;
  expectShape(a.out, p.out, kernel, "result");
  return p;
}

} // namespace hybrid::kernels
