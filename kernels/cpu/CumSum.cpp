// cumsum: running sum along `axis` (exclusive / reverse as ONNX CumSum) on
// floats (f32, bf16, f16; accumulated in double like PyTorch's CPU cumsum,
// each output rounded once) and integers (i32, i64; wrapping).
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <algorithm>
#include <type_traits>
#include <vector>

namespace hybrid::cpu::kernels {
namespace {

/// Scans the [outer, n, inner] view along n, all inner columns at once.
template <typename S, typename Acc>
void scan(const S *in, S *out, int64_t outer, int64_t n, int64_t inner,
          bool exclusive, bool reverse) {
  auto load = [](S x) -> Acc {
    if constexpr (kIsFloatStorage<S>)
      return toFloat(x);
    else
      return static_cast<Acc>(x);
  };
  auto store = [](Acc a) -> S {
    if constexpr (kIsFloatStorage<S>)
      return fromFloat<S>(static_cast<float>(a));
    else
      return static_cast<S>(a);
  };
  PerThreadScratch<Acc> scratch(inner);
  parallelFor(outer, n * inner, [&](int64_t o) {
    Acc *acc = scratch.get();
    std::fill(acc, acc + inner, Acc(0));
    const S *src = in + o * n * inner;
    S *dst = out + o * n * inner;
    for (int64_t step = 0; step < n; ++step) {
      int64_t i = reverse ? n - 1 - step : step;
      const S *x = src + i * inner;
      S *y = dst + i * inner;
      for (int64_t j = 0; j < inner; ++j) {
        if (exclusive) {
          y[j] = store(acc[j]);
          acc[j] += load(x[j]);
        } else {
          acc[j] += load(x[j]);
          y[j] = store(acc[j]);
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
  visitNumeric(input.dtype, "cumsum", "input", [&](auto zero) {
    using S = decltype(zero);
    if (input.numel() == 0)
      return;
    // Integers accumulate unsigned: overflow wraps instead of being undefined.
    using Acc = std::conditional_t<
        kIsFloatStorage<S>, double,
        std::make_unsigned_t<std::conditional_t<kIsFloatStorage<S>, int, S>>>;
    scan<S, Acc>(input.as<S>(), result.as<S>(), outer, n, inner,
                 attrs.exclusive, attrs.reverse);
  });
}

} // namespace hybrid::cpu::kernels
