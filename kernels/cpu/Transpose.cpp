// transpose: permute dimensions (result dim i = input dim perm[i]); any dtype.
#include "Broadcast.h"
#include "KernelCheck.h"
#include "Kernels.h"

namespace hybrid::cpu::kernels {

void transpose(const KernelCall &call) {
  expectArity(call, "transpose", 1, 1);
  const Tensor &input = call.operands[0];
  const Tensor &result = call.results[0];
  expectDType(result, input.dtype, "transpose", "result");
  std::vector<int64_t> perm = attrsOf(call).getInts("perm");
  const int64_t rank = input.rank();
  if (static_cast<int64_t>(perm.size()) != rank)
    fail("transpose", "perm has " + std::to_string(perm.size()) +
                          " entries for an input of rank " +
                          std::to_string(rank));
  std::vector<bool> seen(rank, false);
  for (int64_t &p : perm) {
    p = normalizeAxis(p, rank, "transpose");
    if (seen[p])
      fail("transpose", "perm repeats dimension " + std::to_string(p));
    seen[p] = true;
  }
  std::vector<int64_t> inStrides = contiguousStrides(input.shape);
  Shape outShape(rank);
  std::vector<int64_t> strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    outShape[i] = input.shape[perm[i]];
    strides[i] = inStrides[perm[i]];
  }
  expectShape(result, outShape, "transpose", "result");
  BroadcastWalk walk =
      BroadcastWalk::fromStrides(outShape, {strides}, "transpose");
  copyStrided(walk, input.data, 0, result.data, dtypeSize(input.dtype));
}

} // namespace hybrid::cpu::kernels
