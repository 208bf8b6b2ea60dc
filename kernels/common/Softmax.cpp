// softmax's host-side checks and shape, shared by every backend.
#include "common/Softmax.h"

#include "common/Check.h"

namespace hybrid::kernels {

SoftmaxProblem softmaxShape(const Shape &input, int64_t axis,
                            const char *kernel) {
  const int64_t rank = static_cast<int64_t>(input.size());
  SoftmaxProblem p;
  if (rank == 0)
    return p;
  const int64_t a = normalizeAxis(axis, rank, kernel);
  p.outer = product(input, 0, a);
  p.n = input[a];
  p.inner = product(input, a + 1, rank);
  return p;
}

SoftmaxProblem describeSoftmax(const SoftmaxArgs &a) {
  const char *kernel = softmaxKernel(a.attrs);
  expectDType(a.out, a.input.dtype, kernel, "result");
  expectShape(a.out, a.input.shape, kernel, "result");
  SoftmaxProblem p = softmaxShape(a.input.shape, a.attrs.axis, kernel);
  p.dtype = a.input.dtype;
  p.log = a.attrs.log;
  expectFloat(a.input.dtype, kernel, "input");
  return p;
}

} // namespace hybrid::kernels
