// embedding: rows of table[V, D] at i32 or i64 ids -> [..., D]; the table
// may hold any dtype (rows are copied as bytes).
#include "common/Embedding.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void embedding(const KernelCall &call) {
  const EmbeddingArgs a = EmbeddingArgs::bind(call, "embedding");
  const EmbeddingProblem p = describeEmbedding(a);
  for (int64_t i = 0; i < p.count; ++i) {
    const int64_t id = indexAt(a.ids, i);
    if (id < 0 || id >= p.V)
      fail("embedding", "id " + std::to_string(id) + " at position " +
                            std::to_string(i) + " is out of range for a " +
                            "table of " + std::to_string(p.V) + " rows");
  }
  const size_t row = static_cast<size_t>(p.rowBytes);
  const char *src = static_cast<const char *>(a.table.data);
  char *out = static_cast<char *>(a.out.data);
  parallelFor(p.count, p.D, [&](int64_t i) {
    std::memcpy(out + i * row, src + indexAt(a.ids, i) * row, row);
  });
}

} // namespace hybrid::cpu::kernels
