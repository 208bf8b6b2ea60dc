// cumsum: running sum along `axis` (exclusive / reverse as ONNX CumSum) on
// floats (f32, bf16, f16; accumulated in double like PyTorch's CPU cumsum,
// each output rounded once) and integers (i32, i64; wrapping).
#include "common/CumSum.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"
#include "Scratch.h"

#include <algorithm>

namespace hybrid::cpu::kernels {
namespace {

/// One running sum per inner column and thread (double for floats, 64 bits
/// at most for integers).
ScratchLayout cumsumScratch(const KernelCall &call) {
  const CumSumProblem p =
      cumsumLayout(call.operands.at(0).shape, call.attrs<ops::CumSum>());
  return {0, p.inner * sizeof(double)};
}

/// Scans the [outer, n, inner] view along n, all inner columns at once.
template <typename S, typename Acc>
void scanColumns(const KernelCall &call, const S *in, S *out,
                 const CumSumProblem &s) {
  const bool exclusive = s.exclusive, reverse = s.reverse;
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

/// The scan in the input's element type.
void scan(const KernelCall &call, const CumSumArgs &a, const CumSumProblem &p) {
  visitNumeric(a.input.dtype, "cumsum", "input", [&](auto zero) {
    using S = decltype(zero);
    if (a.input.numel() > 0)
      scanColumns<S, CumSumAccumulator<S>>(call, a.input.as<S>(), a.out.as<S>(),
                                           p);
  });
}

} // namespace

void cumsum(const KernelCall &call) {
  const CumSumArgs a = CumSumArgs::bind(call, "cumsum");
  scan(call, a, describeCumSum(a));
}

size_t cumsumScratchBytes(const KernelCall &call, int threads) {
  return scratchOf<cumsumScratch>(call, threads);
}

} // namespace hybrid::cpu::kernels
