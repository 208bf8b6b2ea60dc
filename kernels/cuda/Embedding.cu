// embedding: rows of table[V, D] at i32 or i64 ids -> [..., D]; any table
// dtype (rows move in 16-byte words where aligned). An id out of [0, V)
// gives a zero row: the device cannot raise the CPU kernel's error without
// a host sync.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"

namespace hybrid::cuda::kernels {

void embedding(const CudaCall &call) {
  expectArity(call, "embedding", 2, 1);
  const ConstTensor &table = call.operands[0], &ids = call.operands[1];
  const Tensor &result = call.results[0];
  expectIndex(ids.dtype, "embedding", "ids");
  expectDType(result, table.dtype, "embedding", "result");
  expectRank(table, 2, "embedding", "table");
  const int64_t V = table.shape[0], D = table.shape[1];
  Shape outShape = ids.shape;
  outShape.push_back(D);
  expectShape(result, outShape, "embedding", "result");
  if (result.numel() == 0)
    return;
  gatherRows(result.data, table.data, ids.data, ids.dtype, 1, ids.numel(), V,
             D * dtypeSize(table.dtype), false, streamOf(call), "embedding");
}

} // namespace hybrid::cuda::kernels
