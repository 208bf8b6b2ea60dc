// cache_write: writes an update into a slice of the result (a KV cache or
// other state, updated in place) at an offset read from memory; any dtype.
#include "common/CacheWrite.h"
#include "Kernels.h"
#include "Parallel.h"
#include "common/Check.h"

#include <cstring>

namespace hybrid::cpu::kernels {

void cacheWrite(const KernelCall &call) {
  const CacheWriteArgs a = CacheWriteArgs::bind(call, "cache_write");
  cacheWriteInto(a.update, a.offset, a.out, a.attrs.axis);
}

void cacheWriteInto(const ConstTensor &update, const ConstTensor &offset,
                    const Tensor &result, int64_t axis) {
  const CacheWriteProblem p = describeCacheWrite(update, offset, result, axis);
  // The offset is data (the decode position), so the check is at run time:
  // a captured step serves every position, and a bad one must not write
  // past the cache.
  const int64_t start = *offset.as<int64_t>();
  if (!p.fits(start))
    fail("cache_write", "slice [" + std::to_string(start) + ", " +
                            std::to_string(start + p.n) + ") along axis " +
                            std::to_string(p.axis) + " of update " +
                            shapeToString(update.shape) +
                            " does not fit in result " +
                            shapeToString(result.shape) + " (" +
                            std::to_string(p.dim) + " along that axis)");
  if (update.numel() == 0)
    return;
  // Each of the rows is one contiguous run of n * inner bytes in the update
  // and in the result.
  const size_t inner = static_cast<size_t>(p.innerBytes);
  const size_t run = static_cast<size_t>(p.n) * inner;
  const auto *src = static_cast<const uint8_t *>(update.data);
  auto *dst =
      static_cast<uint8_t *>(result.data) + static_cast<size_t>(start) * inner;
  const size_t stride = static_cast<size_t>(p.dim) * inner;
  parallelFor(p.rows, static_cast<int64_t>(run / 4 + 1), [&](int64_t o) {
    std::memmove(dst + o * stride, src + o * run, run);
  });
}

} // namespace hybrid::cpu::kernels
