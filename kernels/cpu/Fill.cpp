// fill: every element of the result set to one value, converted to the
// result's dtype once (kernels/common/Fill.h), for any dtype.
#include "common/Fill.h"
#include "Kernels.h"
#include "Parallel.h"
#include "common/Dispatch.h"

#include <algorithm>

namespace hybrid::cpu::kernels {

void fill(const KernelCall &call) {
  const FillArgs a = FillArgs::bind(call, "fill");
  const FillProblem p = describeFill(a);
  visitWord(p.elementSize, [&](auto zero) {
    using W = decltype(zero);
    const W value = p.word<W>();
    W *out = a.out.as<W>();
    parallelChunks(p.n, 1, [&](int64_t begin, int64_t end) {
      std::fill(out + begin, out + end, value);
    });
  });
}

} // namespace hybrid::cpu::kernels
