// copy: the same bytes in another buffer of the same dtype and element count,
// any dtype (a reshape is a copy into a result of another shape).
#include "common/Copy.h"
#include "Kernels.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void copy(const KernelCall &call) {
  const CopyArgs a = CopyArgs::bind(call, "copy");
  if (const CopyProblem p = describeCopy(a); p.bytes > 0)
    std::memmove(a.out.data, a.input.data, p.bytes);
}

} // namespace hybrid::cpu::kernels
