// gather: ONNX Gather, slices of data along `axis` at i32 or i64 indices
// (negative indices count from the end); any data dtype.
#include "common/Gather.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void gather(const KernelCall &call) {
  const GatherArgs a = GatherArgs::bind(call, "gather");
  const GatherProblem p = describeGather(a);
  // Validate every index before the (parallel) copy, which cannot throw.
  for (int64_t i = 0; i < p.count; ++i) {
    const int64_t v = indexAt(a.indices, i);
    if (v < -p.dim || v >= p.dim)
      fail("gather", "index " + std::to_string(v) + " (element " +
                         std::to_string(i) + ") is out of range for axis " +
                         std::to_string(p.axis) + " of size " +
                         std::to_string(p.dim));
  }
  if (a.out.numel() == 0)
    return;
  const int64_t count = p.count, dim = p.dim, inner = p.rowBytes;
  const char *src = static_cast<const char *>(a.data.data);
  char *out = static_cast<char *>(a.out.data);
  parallelFor(p.outer * count, inner, [&](int64_t k) {
    const int64_t o = k / count, v = indexAt(a.indices, k % count);
    const int64_t row = v < 0 ? v + dim : v;
    std::memcpy(out + k * inner, src + (o * dim + row) * inner, inner);
  });
}

} // namespace hybrid::cpu::kernels
