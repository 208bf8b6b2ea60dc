// select: cond ? lhs : rhs with all three broadcast (NumPy rules); any dtype.
#include "Broadcast.h"
#include "Element.h"
#include "KernelCheck.h"
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
  walk.parallelForSpans(1,
                        [&](int64_t first, const int64_t *offsets, int64_t n) {
                          const uint8_t *c = cond + offsets[0];
                          const W *l = lhs + offsets[1];
                          const W *r = rhs + offsets[2];
                          W *o = out + first;
                          if (sc && sl && sr) {
                            for (int64_t i = 0; i < n; ++i)
                              o[i] = c[i] ? l[i] : r[i];
                          } else {
                            for (int64_t i = 0; i < n; ++i)
                              o[i] = c[i * sc] ? l[i * sl] : r[i * sr];
                          }
                        });
}

} // namespace

void select(const KernelCall &call) {
  expectArity(call, "select", 3, 1);
  const ConstTensor &cond = call.operands[0], &lhs = call.operands[1],
                    &rhs = call.operands[2];
  const Tensor &result = call.results[0];
  expectDType(cond, DType::Bool, "select", "cond");
  expectSameDType(lhs, rhs, "select", "lhs", "rhs");
  expectDType(result, lhs.dtype, "select", "result");
  expectShape(result,
              broadcastShapes({&cond.shape, &lhs.shape, &rhs.shape}, "select"),
              "select", "result");
  BroadcastWalk walk(result.shape, {&cond.shape, &lhs.shape, &rhs.shape},
                     "select");
  const uint8_t *c = cond.as<uint8_t>();
  visitWord(dtypeSize(lhs.dtype), [&](auto zero) {
    using W = decltype(zero);
    selectWords(walk, c, lhs.as<W>(), rhs.as<W>(), result.as<W>());
  });
}

} // namespace hybrid::cpu::kernels
