// concat: join inputs along `axis`; any dtype. Each input is one pitched row
// copy into its slot of the result (outer rows of the input's bytes).
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"

namespace hybrid::cuda::kernels {

void concat(const CudaCall &call) {
  if (call.operands.empty())
    fail("concat", "needs at least one input");
  expectArity(call, "concat", call.operands.size(), 1);
  const ConstTensor &first = call.operands[0];
  const Tensor &result = call.results[0];
  const int64_t rank = first.rank();
  if (rank == 0)
    fail("concat", "inputs must have rank >= 1");
  const int64_t axis =
      normalizeAxis(call.attrs<ops::Concat>().axis, rank, "concat");
  Shape outShape = first.shape;
  outShape[axis] = 0;
  for (const ConstTensor &t : call.operands) {
    expectSameDType(t, first, "concat", "input", "the first input");
    bool compatible = t.rank() == rank;
    for (int64_t d = 0; compatible && d < rank; ++d)
      compatible = d == axis || t.shape[d] == first.shape[d];
    if (!compatible)
      fail("concat", "input " + shapeToString(t.shape) + " does not match " +
                         shapeToString(first.shape) + " outside axis " +
                         std::to_string(axis));
    outShape[axis] += t.shape[axis];
  }
  expectDType(result, first.dtype, "concat", "result");
  expectShape(result, outShape, "concat", "result");
  if (result.numel() == 0)
    return;
  const int64_t es = static_cast<int64_t>(dtypeSize(first.dtype));
  const int64_t outer = product(outShape, 0, axis);
  const int64_t inner = product(outShape, axis + 1, rank) * es; // bytes
  const int64_t outRow = outShape[axis] * inner;
  char *dst = static_cast<char *>(result.data);
  for (const ConstTensor &t : call.operands) {
    const int64_t bytes = t.shape[axis] * inner;
    copyRows(dst, outRow, t.data, bytes, bytes, outer, streamOf(call),
             "concat");
    dst += bytes;
  }
}

} // namespace hybrid::cuda::kernels
