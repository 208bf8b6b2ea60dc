// copy: the same bytes in another buffer of the same dtype and element count,
// any dtype (a reshape is a copy into a result of another shape).
#include "KernelCheck.h"
#include "Kernels.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void copy(const KernelCall &call) {
  expectArity(call, "copy", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "copy", "result");
  if (input.numel() != result.numel())
    fail("copy", "input " + shapeToString(input.shape) + " and result " +
                     shapeToString(result.shape) +
                     " have different element counts");
  if (input.numel() > 0 && input.data != result.data)
    std::memmove(result.data, input.data,
                 input.numel() * dtypeSize(input.dtype));
}

} // namespace hybrid::cpu::kernels
