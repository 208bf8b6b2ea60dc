// cumsum: running sum along `axis` (exclusive / reverse as ONNX CumSum) on
// floats (f32, bf16, f16; accumulated in double like PyTorch's CPU cumsum,
// each output rounded once) and integers (i32, i64; wrapping).
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>
#include <type_traits>

namespace hybrid::cpu::kernels {
namespace {

struct ScanShape {
  int64_t outer = 1, n = 1, inner = 1;
};

/// The input as [outer, n, inner] around the scanned axis; a scalar scans
/// as a one-element vector.
ScanShape scanShape(const KernelCall &call) {
  const ConstTensor &input = call.operands.at(0);
  const int64_t rank = input.rank();
  ScanShape s;
  if (rank == 0)
    return s;
  const int64_t axis =
      normalizeAxis(call.attrs<ops::CumSum>().axis, rank, "cumsum");
  s.outer = product(input.shape, 0, axis);
  s.n = input.shape[axis];
  s.inner = product(input.shape, axis + 1, rank);
  return s;
}

/// One running sum per inner column and thread (double for floats, 64 bits
/// at most for integers).
ScratchLayout cumsumScratch(const KernelCall &call) {
  return {0, scanShape(call).inner * sizeof(double)};
}

/// Scans the [outer, n, inner] view along n, all inner columns at once.
template <typename S, typename Acc>
void scan(const KernelCall &call, const S *in, S *out, const ScanShape &s,
          bool exclusive, bool reverse) {
  const int64_t n = s.n, inner = s.inner;
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
  const ScratchLayout layout = cumsumScratch(call);
  const int threads = scratchThreads(call, layout, "cumsum");
  parallelFor(
      s.outer, n * inner,
      [&](int64_t o) {
        Acc *acc =
            static_cast<Acc *>(threadScratch(call, layout, workerSlot()));
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
      },
      threads);
}

} // namespace

void cumsum(const KernelCall &call) {
  expectArity(call, "cumsum", 1, 1);
  const ConstTensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectShape(result, input.shape, "cumsum", "result");
  expectDType(result, input.dtype, "cumsum", "result");
  const ops::CumSum &attrs = call.attrs<ops::CumSum>();
  const ScanShape shape = scanShape(call);
  visitNumeric(input.dtype, "cumsum", "input", [&](auto zero) {
    using S = decltype(zero);
    if (input.numel() == 0)
      return;
    // Integers accumulate unsigned: overflow wraps instead of being undefined.
    using Acc = std::conditional_t<
        kIsFloatStorage<S>, double,
        std::make_unsigned_t<std::conditional_t<kIsFloatStorage<S>, int, S>>>;
    scan<S, Acc>(call, input.as<S>(), result.as<S>(), shape, attrs.exclusive,
                 attrs.reverse);
  });
}

size_t cumsumScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<cumsumScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
