// gather's checks and row layout (see Gather.h).
#include "common/Gather.h"

#include "common/Check.h"

namespace hybrid::kernels {

GatherProblem describeGather(const GatherArgs &a) {
  const ConstTensor &data = a.data, &indices = a.indices;
  expectIndex(indices.dtype, "gather", "indices");
  expectDType(a.out, data.dtype, "gather", "result");
  const int64_t rank = data.rank();
  if (rank == 0)
    fail("gather", "data must have rank >= 1");
  GatherProblem p;
  p.axis = normalizeAxis(a.attrs.axis, rank, "gather");
  Shape outShape(data.shape.begin(), data.shape.begin() + p.axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + p.axis + 1,
                  data.shape.end());
  expectShape(a.out, outShape, "gather", "result");
  p.outer = product(data.shape, 0, p.axis);
  p.count = indices.numel();
  p.dim = data.shape[p.axis];
  p.rowBytes = product(data.shape, p.axis + 1, rank) *
               static_cast<int64_t>(dtypeSize(data.dtype));
  return p;
}

} // namespace hybrid::kernels
