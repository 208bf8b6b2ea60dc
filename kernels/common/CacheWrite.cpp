// cache_write's checks and layout (see CacheWrite.h).
#include "common/CacheWrite.h"

#include "common/Check.h"

namespace hybrid::kernels {

CacheWriteProblem describeCacheWrite(const ConstTensor &update,
                                     const ConstTensor &offset,
                                     const Tensor &result, int64_t axis) {
  expectSameDType(update, result, "cache_write", "update", "result");
  expectDType(offset, DType::I64, "cache_write", "offset");
  if (offset.numel() != 1)
    fail("cache_write",
         "offset " + shapeToString(offset.shape) + " must hold one element");
  if (update.rank() != result.rank())
    fail("cache_write", "update " + shapeToString(update.shape) +
                            " and result " + shapeToString(result.shape) +
                            " have different ranks");
  const int64_t rank = result.rank();
  CacheWriteProblem p;
  p.axis = normalizeAxis(axis, rank, "cache_write");
  for (int64_t d = 0; d < rank; ++d)
    if (d != p.axis && update.shape[d] != result.shape[d])
      fail("cache_write", "update " + shapeToString(update.shape) +
                              " does not match result " +
                              shapeToString(result.shape) + " outside axis " +
                              std::to_string(p.axis));
  p.n = update.shape[p.axis];
  p.dim = result.shape[p.axis];
  p.rows = product(update.shape, 0, p.axis);
  p.innerBytes = product(update.shape, p.axis + 1, rank) *
                 static_cast<int64_t>(dtypeSize(update.dtype));
  return p;
}

} // namespace hybrid::kernels
