// gather_nd: ONNX GatherND with batch_dims, i32 or i64 index tuples; any
// data dtype.
#include "common/GatherNd.h"
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
  const GatherNdArgs a = GatherNdArgs::bind(call, "gather_nd");
  const GatherNdProblem p = describeGatherNd(a);
  const ConstTensor &data = a.data, &indices = a.indices;
  const int64_t b = p.b, k = p.k, tuples = p.tuples, slice = p.slice;

  // Validate every tuple first: errors cannot leave a parallel loop. The
  // copy resolves them again rather than keeping a table of offsets.
  for (int64_t t = 0; t < p.batches * tuples; ++t) {
    const int64_t offset =
        tupleOffset(data, indices, t, b, k, tuples, p.batchStride);
    if (offset < 0) {
      const int64_t j = -1 - offset;
      fail("gather_nd", "index " + std::to_string(indexAt(indices, t * k + j)) +
                            " (tuple " + std::to_string(t) +
                            ") is out of range for data dimension " +
                            std::to_string(b + j) + " of size " +
                            std::to_string(data.shape[b + j]));
    }
  }
  if (a.out.numel() == 0)
    return;
  const size_t es = dtypeSize(data.dtype);
  const char *src = static_cast<const char *>(data.data);
  char *out = static_cast<char *>(a.out.data);
  parallelFor(p.batches * tuples, slice * es, [&](int64_t t) {
    const int64_t offset =
        tupleOffset(data, indices, t, b, k, tuples, p.batchStride);
    std::memcpy(out + t * slice * es, src + offset * es, slice * es);
  });
}

} // namespace hybrid::cpu::kernels
