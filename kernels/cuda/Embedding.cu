// embedding: rows of table[V, D] at i32 or i64 ids -> [..., D]; any table
// dtype (rows move in 16-byte words where aligned). An id out of [0, V)
// gives a zero row: the device cannot raise the CPU kernel's error without
// a host sync.
#include "Device.cuh"
#include "Kernels.h"
#include "Movement.h"
#include "common/Embedding.h"

namespace hybrid::cuda::kernels {

void embedding(const CudaCall &call) {
  const EmbeddingArgs a = EmbeddingArgs::bind(call, "embedding");
  const EmbeddingProblem p = describeEmbedding(a);
  gatherRows(a.out.data, a.table.data, a.ids.data, a.ids.dtype, 1, p.count, p.V,
             p.rowBytes, false, streamOf(call), "embedding");
}

} // namespace hybrid::cuda::kernels
