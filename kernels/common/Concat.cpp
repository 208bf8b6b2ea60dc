// concat's checks and row layout (see Concat.h).
#include "common/Concat.h"

#include "common/Check.h"

namespace hybrid::kernels {

ConcatProblem describeConcat(const Call &call) {
  if (call.operands.empty())
    fail("concat", "needs at least one input");
  expectArity(call, "concat", call.operands.size(), 1);
  const ConstTensor &first = call.operands[0];
  const Tensor &result = call.results[0];
  const int64_t rank = first.rank();
  if (rank == 0)
    fail("concat", "inputs must have rank >= 1");
  ConcatProblem p;
  p.axis = normalizeAxis(call.attrs<ops::Concat>().axis, rank, "concat");
  Shape outShape = first.shape;
  outShape[p.axis] = 0;
  for (const ConstTensor &t : call.operands) {
    expectSameDType(t, first, "concat", "input", "the first input");
    bool compatible = t.rank() == rank;
    for (int64_t d = 0; compatible && d < rank; ++d)
      compatible = d == p.axis || t.shape[d] == first.shape[d];
    if (!compatible)
      fail("concat", "input " + shapeToString(t.shape) + " does not match " +
                         shapeToString(first.shape) + " outside axis " +
                         std::to_string(p.axis));
    outShape[p.axis] += t.shape[p.axis];
  }
  expectDType(result, first.dtype, "concat", "result");
  expectShape(result, outShape, "concat", "result");
  const int64_t es = static_cast<int64_t>(dtypeSize(first.dtype));
  p.outer = product(outShape, 0, p.axis);
  p.inner = product(outShape, p.axis + 1, rank) * es;
  p.outRow = outShape[p.axis] * p.inner;
  return p;
}

} // namespace hybrid::kernels
