// trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the
// last two dimensions and zero the rest; any dtype.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <cstring>

namespace hybrid::cpu::kernels {

void trilu(const KernelCall &call) {
  expectArity(call, "trilu", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "trilu", "result");
  expectDType(result, input.dtype, "trilu", "result");
  const int64_t rank = input.rank();
  if (rank < 2)
    fail("trilu",
         "input must have rank >= 2, got " + shapeToString(input.shape));
  const ops::Trilu &attrs = call.attrs<ops::Trilu>();
  const bool upper = attrs.upper;
  const int64_t k = attrs.k;
  const int64_t rows = input.shape[rank - 2], cols = input.shape[rank - 1];
  const int64_t matrices = product(input.shape, 0, rank - 2);
  const int64_t es = dtypeSize(input.dtype);
  const char *in = static_cast<const char *>(input.data);
  char *out = static_cast<char *>(result.data);
  parallelFor(matrices * rows, cols, [&](int64_t r) {
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
