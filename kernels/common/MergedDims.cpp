// Merging a strided walk's dimensions (see MergedDims.h).
#include "common/MergedDims.h"

#include "common/Check.h"

#include <algorithm>

namespace hybrid::kernels {

void broadcastStrides(const Shape &out,
                      std::initializer_list<const Shape *> shapes,
                      int64_t *strides, const char *kernel) {
  const size_t rank = out.size(), n = shapes.size();
  std::fill(strides, strides + rank * n, int64_t(0));
  size_t k = 0;
  for (const Shape *s : shapes) {
    if (s->size() > rank)
      fail(kernel, "operand of shape " + shapeToString(*s) +
                       " cannot broadcast to " + shapeToString(out));
    const size_t lead = rank - s->size();
    int64_t stride = 1;
    for (size_t i = s->size(); i-- > 0;) {
      const int64_t d = (*s)[i];
      if (d == out[lead + i])
        strides[(lead + i) * n + k] = d == 1 ? 0 : stride;
      else if (d != 1)
        fail(kernel, "operand of shape " + shapeToString(*s) +
                         " cannot broadcast to " + shapeToString(out));
      stride *= d;
    }
    ++k;
  }
}

bool mergeDims(const Shape &out, const int64_t *strides, size_t operands,
               MergedDims &merged) {
  const size_t n = operands;
  size_t count = 0;
  // From the innermost dimension out: two dimensions merge when every
  // operand steps over the inner one exactly.
  for (size_t d = out.size(); d-- > 0;) {
    if (out[d] == 1)
      continue;
    const int64_t *sd = strides + d * n;
    if (count > 0) {
      bool mergeable = true;
      for (size_t k = 0; k < n; ++k)
        mergeable &=
            sd[k] == merged.strides[count - 1][k] * merged.dims[count - 1];
      if (mergeable) {
        merged.dims[count - 1] *= out[d];
        continue;
      }
    }
    if (count == MergedDims::kMaxRank)
      return false;
    merged.dims[count] = out[d];
    std::copy(sd, sd + n, merged.strides[count]);
    ++count;
  }
  merged.rank = count;
  return true;
}

} // namespace hybrid::kernels
