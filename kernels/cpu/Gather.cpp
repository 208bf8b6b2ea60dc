// gather: ONNX Gather, slices of data along `axis` at i32 or i64 indices
// (negative indices count from the end); any data dtype.
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void gather(const KernelCall &call) {
  expectArity(call, "gather", 2, 1);
  const ConstTensor &data = call.operands[0], &indices = call.operands[1];
  const Tensor &result = call.results[0];
  expectIndex(indices.dtype, "gather", "indices");
  expectDType(result, data.dtype, "gather", "result");
  const int64_t rank = data.rank();
  if (rank == 0)
    fail("gather", "data must have rank >= 1");
  const int64_t axis =
      normalizeAxis(call.attrs<ops::Gather>().axis, rank, "gather");
  Shape outShape(data.shape.begin(), data.shape.begin() + axis);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), data.shape.begin() + axis + 1,
                  data.shape.end());
  expectShape(result, outShape, "gather", "result");

  // Validate every index before the (parallel) copy, which cannot throw.
  const int64_t dim = data.shape[axis];
  const int64_t count = indices.numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t v = indexAt(indices, i);
    if (v < -dim || v >= dim)
      fail("gather", "index " + std::to_string(v) + " (element " +
                         std::to_string(i) + ") is out of range for axis " +
                         std::to_string(axis) + " of size " +
                         std::to_string(dim));
  }
  if (result.numel() == 0)
    return;
  const int64_t outer = product(data.shape, 0, axis);
  const int64_t inner =
      product(data.shape, axis + 1, rank) * dtypeSize(data.dtype); // bytes
  const char *src = static_cast<const char *>(data.data);
  char *out = static_cast<char *>(result.data);
  parallelFor(outer * count, inner, [&](int64_t k) {
    const int64_t o = k / count, v = indexAt(indices, k % count);
    const int64_t row = v < 0 ? v + dim : v;
    std::memcpy(out + k * inner, src + (o * dim + row) * inner, inner);
  });
}

} // namespace hybrid::cpu::kernels
