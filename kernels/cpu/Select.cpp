// select: cond ? lhs : rhs with all three broadcast (NumPy rules); any dtype.
#include "common/Select.h"
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"

#include <cstdint>

namespace hybrid::cpu::kernels {
namespace {

/// Moves elements as unsigned words of their size: select never computes.
template <typename W>
void selectWords(const BroadcastWalk &walk, const uint8_t *cond, const W *lhs,
                 const W *rhs, W *out) {
  const int64_t sc = walk.rowStride(0), sl = walk.rowStride(1),
                sr = walk.rowStride(2);
  walk.parallelForSpans(
      1, [&](int64_t first, const int64_t *offsets, int64_t n) {
        const uint8_t *c = cond + offsets[0];
        const W *l = lhs + offsets[1];
        const W *r = rhs + offsets[2];
        W *o = out + first;
        if (sc && sl && sr) {
          for (int64_t i = 0; i < n; ++i)
            o[i] = selectValue(c[i], l[i], r[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            o[i] = selectValue(c[i * sc], l[i * sl], r[i * sr]);
        }
      });
}

} // namespace

void select(const KernelCall &call) {
  const SelectArgs a = SelectArgs::bind(call, "select");
  const SelectProblem p = describeSelect(a);
  const BroadcastWalk walk(
      a.out.shape, {&a.cond.shape, &a.lhs.shape, &a.rhs.shape}, "select");
  visitWord(p.elementSize, [&](auto zero) {
    using W = decltype(zero);
    selectWords(walk, a.cond.as<uint8_t>(), a.lhs.as<W>(), a.rhs.as<W>(),
                a.out.as<W>());
  });
}

} // namespace hybrid::cpu::kernels
