// copy and reshape: the same bytes in a new buffer (reshape only relabels the
// shape, so both are a byte copy of equal element counts).
#include "KernelCheck.h"
#include "Kernels.h"

#include <cstring>

namespace hybrid::cpu::kernels {
namespace {

void copyBytes(const KernelCall &call, const char *kernel) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, kernel, "result");
  if (input.numel() != result.numel())
    fail(kernel, "input " + shapeToString(input.shape) + " and result " +
                     shapeToString(result.shape) +
                     " have different element counts");
  if (input.numel() > 0 && input.data != result.data)
    std::memmove(result.data, input.data,
                 input.numel() * dtypeSize(input.dtype));
}

} // namespace

void copy(const KernelCall &call) { copyBytes(call, "copy"); }

} // namespace hybrid::cpu::kernels
