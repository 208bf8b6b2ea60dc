// trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two dimensions and zero the rest; any dtype.
#include "common/Trilu.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu::kernels {

void trilu(const KernelCall &call) {
  const TriluArgs a = TriluArgs::bind(call, "trilu");
  const TriluProblem p = describeTrilu(a);
  const bool upper = p.upper;
  const int64_t k = p.k, rows = p.rows, cols = p.cols;
  const int64_t es = static_cast<int64_t>(p.elementSize);
  const char *in = static_cast<const char *>(a.input.data);
  char *out = static_cast<char *>(a.out.data);
  parallelFor(p.matrices * rows, cols, [&](int64_t r) {
    const int64_t i = r % rows;
    // Kept columns [begin, end); k may be far outside the matrix.
    int64_t begin = 0, end = cols;
    if (upper)
      begin = std::clamp<int64_t>(k > cols ? cols : i + k, 0, cols);
    else
      end = std::clamp<int64_t>(k >= cols ? cols : i + k + 1, 0, cols);
    const char *src = in + r * cols * es;
    char *dst = out + r * cols * es;
    if (begin > 0)
      std::memset(dst, 0, std::min(begin, cols) * es);
    if (end > begin)
      std::memcpy(dst + begin * es, src + begin * es, (end - begin) * es);
    if (end < cols)
      std::memset(dst + std::max(end, begin) * es, 0,
                  (cols - std::max(end, begin)) * es);
  });
}

} // namespace hybrid::cpu::kernels
