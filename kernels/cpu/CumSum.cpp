// cumsum: running sum along `axis` (exclusive / reverse as ONNX CumSum) on
// f32 (accumulated in double, like PyTorch's CPU cumsum) and i64.
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <vector>

namespace hybrid::cpu::kernels {
namespace {

/// Scans the [outer, n, inner] view along n, all inner columns at once.
template <typename T, typename Acc>
void scan(const T *in, T *out, int64_t outer, int64_t n, int64_t inner,
          bool exclusive, bool reverse) {
  PerThreadScratch<Acc> scratch(inner);
  parallelFor(outer, n * inner, [&](int64_t o) {
    Acc *acc = scratch.get();
    std::fill(acc, acc + inner, Acc(0));
    const T *src = in + o * n * inner;
    T *dst = out + o * n * inner;
    for (int64_t step = 0; step < n; ++step) {
      int64_t i = reverse ? n - 1 - step : step;
      const T *x = src + i * inner;
      T *y = dst + i * inner;
      for (int64_t j = 0; j < inner; ++j) {
        if (exclusive) {
          y[j] = static_cast<T>(acc[j]);
          acc[j] += x[j];
        } else {
          acc[j] += x[j];
          y[j] = static_cast<T>(acc[j]);
        }
      }
    }
  });
}

} // namespace

void cumsum(const KernelCall &call) {
  expectArity(call, "cumsum", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "cumsum", "result");
  expectDType(result, input.dtype, "cumsum", "result");
  const ops::CumSum &attrs = call.attrs<ops::CumSum>();
  const int64_t rank = input.rank();
  // A scalar scans as a one-element vector.
  const int64_t axis =
      rank == 0 ? 0 : normalizeAxis(attrs.axis, rank, "cumsum");
  const int64_t outer = rank == 0 ? 1 : product(input.shape, 0, axis);
  const int64_t n = rank == 0 ? 1 : input.shape[axis];
  const int64_t inner = rank == 0 ? 1 : product(input.shape, axis + 1, rank);
  const bool exclusive = attrs.exclusive, reverse = attrs.reverse;
  if (input.numel() == 0)
    return;
  if (input.dtype == DType::F32)
    return scan<float, double>(input.as<float>(), result.as<float>(), outer, n,
                               inner, exclusive, reverse);
  if (input.dtype == DType::I64)
    return scan<int64_t, uint64_t>(input.as<int64_t>(), result.as<int64_t>(),
                                   outer, n, inner, exclusive, reverse);
  fail("cumsum", std::string("unsupported element type ") +
                     dtypeName(input.dtype) + " (expected f32 or i64)");
}

} // namespace hybrid::cpu::kernels
