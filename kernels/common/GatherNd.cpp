// gather_nd's checks and layout (see GatherNd.h).
#include "common/GatherNd.h"

#include "common/Check.h"

#include <algorithm>

namespace hybrid::kernels {

GatherNdProblem describeGatherNd(const GatherNdArgs &a, int64_t maxTuple) {
  const ConstTensor &data = a.data, &indices = a.indices;
  expectIndex(indices.dtype, "gather_nd", "indices");
  expectDType(a.out, data.dtype, "gather_nd", "result");
  const int64_t r = data.rank(), q = indices.rank();
  const int64_t b = a.attrs.batchDims;
  if (r < 1 || q < 1)
    fail("gather_nd", "data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q))
    fail("gather_nd", "batch_dims " + std::to_string(b) +
                          " must be in [0, min(rank(data), rank(indices)))");
  for (int64_t d = 0; d < b; ++d)
    if (data.shape[d] != indices.shape[d])
      fail("gather_nd", "batch dimensions of data " +
                            shapeToString(data.shape) + " and indices " +
                            shapeToString(indices.shape) + " differ");
  const int64_t k = indices.shape[q - 1];
  if (k < 1 || k > r - b)
    fail("gather_nd", "the last dimension of indices (" + std::to_string(k) +
                          ") must be in [1, " + std::to_string(r - b) + "]");
  if (k > maxTuple)
    fail("gather_nd", "index tuples of " + std::to_string(k) +
                          " entries are not supported (at most " +
                          std::to_string(maxTuple) + ")");
  Shape outShape(indices.shape.begin(), indices.shape.end() - 1);
  outShape.insert(outShape.end(), data.shape.begin() + b + k, data.shape.end());
  expectShape(a.out, outShape, "gather_nd", "result");
  GatherNdProblem p;
  p.b = b;
  p.k = k;
  p.batches = product(data.shape, 0, b);
  p.tuples = product(indices.shape, b, q - 1);
  p.slice = product(data.shape, b + k, r);
  p.batchStride = product(data.shape, b, r);
  return p;
}

} // namespace hybrid::kernels
