// select: cond ? lhs : rhs with all three NumPy-broadcast; any dtype
// (elements move as words of their size: select never computes).
#include "Elementwise.cuh"
#include "Kernels.h"

namespace hybrid::cuda::kernels {
namespace {

struct Choose {
  template <typename W>
  __device__ __forceinline__ W operator()(uint8_t c, W l, W r) const {
    return c ? l : r;
  }
};

} // namespace

void select(const CudaCall &call) {
  expectArity(call, "select", 3, 1);
  const ConstTensor &cond = call.operands[0], &lhs = call.operands[1],
                    &rhs = call.operands[2];
  const Tensor &result = call.results[0];
  expectDType(cond, DType::Bool, "select", "cond");
  expectSameDType(lhs, rhs, "select", "lhs", "rhs");
  expectDType(result, lhs.dtype, "select", "result");
  const Shape out =
      broadcastShapes({&cond.shape, &lhs.shape, &rhs.shape}, "select");
  expectShape(result, out, "select", "result");
  const StridedPlan<3> plan =
      broadcastPlan<3>(out, {&cond.shape, &lhs.shape, &rhs.shape}, "select");
  visitWord(dtypeSize(lhs.dtype), [&](auto zero) {
    using W = decltype(zero);
    launchMap(plan, static_cast<W *>(result.data),
              static_cast<const uint8_t *>(cond.data),
              static_cast<const W *>(lhs.data),
              static_cast<const W *>(rhs.data), Choose{}, streamOf(call),
              "select");
  });
}

} // namespace hybrid::cuda::kernels
