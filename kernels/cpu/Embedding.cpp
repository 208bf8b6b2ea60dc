// embedding: rows of table[V, D] at i64 ids -> [..., D].
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void embedding(const KernelCall &call) {
  expectArity(call, "embedding", 2, 1);
  const ConstTensor &table = call.operands[0], &ids = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(table, DType::F32, "embedding", "table");
  expectDType(ids, DType::I64, "embedding", "ids");
  expectDType(result, DType::F32, "embedding", "result");
  expectRank(table, 2, "embedding", "table");
  const int64_t V = table.shape[0], D = table.shape[1];
  Shape outShape = ids.shape;
  outShape.push_back(D);
  expectShape(result, outShape, "embedding", "result");
  const int64_t *id = ids.as<int64_t>();
  const int64_t count = ids.numel();
  for (int64_t i = 0; i < count; ++i)
    if (id[i] < 0 || id[i] >= V)
      fail("embedding", "id " + std::to_string(id[i]) + " at position " +
                            std::to_string(i) + " is out of range for a " +
                            "table of " + std::to_string(V) + " rows");
  const float *src = table.as<float>();
  float *out = result.as<float>();
  parallelFor(count, D, [&](int64_t i) {
    std::memcpy(out + i * D, src + id[i] * D, D * sizeof(float));
  });
}

} // namespace hybrid::cpu::kernels
