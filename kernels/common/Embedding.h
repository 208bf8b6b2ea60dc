// embedding (ops::Embedding) as plain data both backends share: rows of
// table[V, D] at i32 or i64 ids -> [..., D], any table dtype.
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"

#include <cstdint>

namespace hybrid::kernels {

struct EmbeddingProblem {
  int64_t V = 0, D = 0;
  int64_t count = 0;    ///< ids
  int64_t rowBytes = 0; ///< bytes of a table row
};

/// Checks the dtypes, the table's rank and the result's shape (the ids'
/// values are the CPU kernel's to check).
inline EmbeddingProblem describeEmbedding(const EmbeddingArgs &a) {
  expectIndex(a.ids.dtype, "embedding", "ids");
  expectDType(a.out, a.table.dtype, "embedding", "result");
  expectRank(a.table, 2, "embedding", "table");
  EmbeddingProblem p;
  p.V = a.table.shape[0];
  p.D = a.table.shape[1];
  Shape outShape = a.ids.shape;
  outShape.push_back(p.D);
  expectShape(a.out, outShape, "embedding", "result");
  p.count = a.ids.numel();
  p.rowBytes = p.D * static_cast<int64_t>(dtypeSize(a.table.dtype));
  return p;
}

} // namespace hybrid::kernels
