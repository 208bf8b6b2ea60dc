// cache_write: writes an update into a slice of the result (a KV cache or
// other state, updated in place) at an offset read from memory; any dtype.
#include "Element.h"
#include "KernelCheck.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void cacheWrite(const KernelCall &call) {
  expectArity(call, "cache_write", 2, 1);
  cacheWriteInto(call.operands[0], call.operands[1], call.results[0],
                 call.attrs<ops::CacheWrite>().axis);
}

void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axisAttr) {
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
  const int64_t axis = normalizeAxis(axisAttr, rank, "cache_write");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && update.shape[d] != result.shape[d])
      fail("cache_write", "update " + shapeToString(update.shape) +
                              " does not match result " +
                              shapeToString(result.shape) + " outside axis " +
                              std::to_string(axis));
  // The offset is data (the decode position), so the check is at run time:
  // a captured step serves every position, and a bad one must not write
  // past the cache.
  const int64_t start = *offset.as<int64_t>();
  const int64_t n = update.shape[axis], dim = result.shape[axis];
  if (start < 0 || start > dim - n)
    fail("cache_write",
         "slice [" + std::to_string(start) + ", " + std::to_string(start + n) +
             ") along axis " + std::to_string(axis) + " of update " +
             shapeToString(update.shape) + " does not fit in result " +
             shapeToString(result.shape) + " (" + std::to_string(dim) +
             " along that axis)");
  if (update.numel() == 0)
    return;
  // Each of the `outer` slices is one contiguous run of n * inner elements
  // in the update and in the result.
  const int64_t outer = product(update.shape, 0, axis);
  const size_t inner =
      static_cast<size_t>(product(update.shape, axis + 1, rank)) *
      dtypeSize(update.dtype);
  const size_t run = static_cast<size_t>(n) * inner;
  const auto *src = static_cast<const uint8_t *>(update.data);
  auto *dst =
      static_cast<uint8_t *>(result.data) + static_cast<size_t>(start) * inner;
  const size_t stride = static_cast<size_t>(dim) * inner;
  parallelFor(outer, static_cast<int64_t>(run / 4 + 1), [&](int64_t o) {
    std::memmove(dst + o * stride, src + o * run, run);
  });
}

} // namespace hybrid::cpu::kernels
