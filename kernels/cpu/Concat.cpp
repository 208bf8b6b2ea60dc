// concat: join inputs along `axis`; any dtype.
#include "common/Concat.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void concat(const KernelCall &call) {
  const ConcatProblem p = describeConcat(call);
  if (call.results[0].numel() == 0)
    return;
  char *out = static_cast<char *>(call.results[0].data);
  parallelFor(p.outer, p.outRow, [&](int64_t o) {
    char *dst = out + o * p.outRow;
    for (const ConstTensor &t : call.operands) {
      int64_t bytes = t.shape[p.axis] * p.inner;
      if (bytes)
        std::memcpy(dst, static_cast<const char *>(t.data) + o * bytes, bytes);
      dst += bytes;
    }
  });
}

} // namespace hybrid::cpu::kernels
