// select: cond ? lhs : rhs with all three NumPy-broadcast; any dtype
// (elements move as words of their size: select never computes).
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/Select.h"

namespace hybrid::cuda::kernels {
namespace {

struct Choose {
  template <typename W>
  __device__ __forceinline__ W operator()(uint8_t c, W l, W r) const {
    return selectValue(c, l, r);
  }
};

} // namespace

void select(const CudaCall &call) {
  const SelectArgs a = SelectArgs::bind(call, "select");
  const SelectProblem p = describeSelect(a);
  const StridedPlan<3> plan = broadcastPlan<3>(
      a.out.shape, {&a.cond.shape, &a.lhs.shape, &a.rhs.shape}, "select");
  visitWord(p.elementSize, [&](auto zero) {
    using W = decltype(zero);
    launchMap(plan, static_cast<W *>(a.out.data),
              static_cast<const uint8_t *>(a.cond.data),
              static_cast<const W *>(a.lhs.data),
              static_cast<const W *>(a.rhs.data), Choose{}, streamOf(call),
              "select");
  });
}

} // namespace hybrid::cuda::kernels
