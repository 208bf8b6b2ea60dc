// gather_nd: ONNX GatherND with batch_dims, i32 or i64 index tuples; any
// data dtype.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu::kernels {
namespace {

/// The data offset (in elements) of index tuple t, or -1 - j when its j-th
/// index is out of range.
int64_t tupleOffset(const ConstTensor &data, const ConstTensor &indices,
                    int64_t t, int64_t b, int64_t k, int64_t tuples,
                    int64_t batchStride) {
  int64_t offset = (t / std::max<int64_t>(tuples, 1)) * batchStride;
  int64_t stride = 1;
  for (int64_t d = data.rank() - 1; d >= b + k; --d)
    stride *= data.shape[d];
  // Row-major: the last index of the tuple moves fastest.
  for (int64_t j = k; j-- > 0;) {
    const int64_t dim = data.shape[b + j];
    const int64_t v = indexAt(indices, t * k + j);
    const int64_t w = v < 0 ? v + dim : v;
    if (w < 0 || w >= dim)
      return -1 - j;
    offset += w * stride;
    stride *= dim;
  }
  return offset;
}

} // namespace

void gatherNd(const KernelCall &call) {
  expectArity(call, "gather_nd", 2, 1);
  const ConstTensor &data = call.operands[0], &indices = call.operands[1];
  const Tensor &result = call.results[0];
  expectIndex(indices.dtype, "gather_nd", "indices");
  expectDType(result, data.dtype, "gather_nd", "result");
  const int64_t r = data.rank(), q = indices.rank();
  const int64_t b = call.attrs<ops::GatherNd>().batchDims;
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
  Shape outShape(indices.shape.begin(), indices.shape.end() - 1);
  outShape.insert(outShape.end(), data.shape.begin() + b + k, data.shape.end());
  expectShape(result, outShape, "gather_nd", "result");

  const int64_t batches = product(data.shape, 0, b);
  const int64_t tuples = product(indices.shape, b, q - 1); // per batch
  const int64_t slice = product(data.shape, b + k, r);     // elements
  const int64_t batchStride = product(data.shape, b, r);

  // Validate every tuple first: errors cannot leave a parallel loop. The
  // copy resolves them again rather than keeping a table of offsets.
  for (int64_t t = 0; t < batches * tuples; ++t) {
    const int64_t offset =
        tupleOffset(data, indices, t, b, k, tuples, batchStride);
    if (offset < 0) {
      const int64_t j = -1 - offset;
      fail("gather_nd", "index " + std::to_string(indexAt(indices, t * k + j)) +
                            " (tuple " + std::to_string(t) +
                            ") is out of range for data dimension " +
                            std::to_string(b + j) + " of size " +
                            std::to_string(data.shape[b + j]));
    }
  }
  if (result.numel() == 0)
    return;
  const size_t es = dtypeSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *out = static_cast<char *>(result.data);
  parallelFor(batches * tuples, slice * es, [&](int64_t t) {
    const int64_t offset =
        tupleOffset(data, indices, t, b, k, tuples, batchStride);
    std::memcpy(out + t * slice * es, src + offset * es, slice * es);
  });
}

} // namespace hybrid::cpu::kernels
