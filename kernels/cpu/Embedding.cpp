// embedding: rows of table[V, D] at i32 or i64 ids -> [..., D]; the table
// may hold any dtype (rows are copied as bytes).
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void embedding(const KernelCall &call) {
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
  const int64_t count = ids.numel();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t id = indexAt(ids, i);
    if (id < 0 || id >= V)
      fail("embedding", "id " + std::to_string(id) + " at position " +
                            std::to_string(i) + " is out of range for a " +
                            "table of " + std::to_string(V) + " rows");
  }
  const size_t row = D * dtypeSize(table.dtype);
  const char *src = static_cast<const char *>(table.data);
  char *out = static_cast<char *>(result.data);
  parallelFor(count, D, [&](int64_t i) {
    std::memcpy(out + i * row, src + indexAt(ids, i) * row, row);
  });
}

} // namespace hybrid::cpu::kernels
