// concat: join inputs along `axis`; any dtype.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void concat(const KernelCall &call) {
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

  const size_t elementSize = dtypeSize(first.dtype);
  const int64_t outer = product(outShape, 0, axis);
  const int64_t inner = product(outShape, axis + 1, rank) * elementSize;
  const int64_t outRow = outShape[axis] * inner; // bytes per outer index
  char *out = static_cast<char *>(result.data);
  parallelFor(outer, outRow, [&](int64_t o) {
    char *dst = out + o * outRow;
    for (const ConstTensor &t : call.operands) {
      int64_t bytes = t.shape[axis] * inner;
      if (bytes)
        std::memcpy(dst, static_cast<const char *>(t.data) + o * bytes, bytes);
      dst += bytes;
    }
  });
}

} // namespace hybrid::cpu::kernels
