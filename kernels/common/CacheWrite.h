// cache_write (ops::CacheWrite) as plain data both backends share: an
// update written into the result (a KV cache or other state, updated in
// place) along one axis at an offset read from memory, so that one
// captured step serves every position.
#pragma once

#include "common/Call.h"

#include <cstdint>

namespace hybrid::kernels {

/// The update as `rows` runs of n * innerBytes bytes; run r goes to byte
/// (r * dim + start) * innerBytes of the result, start = *offset.
struct CacheWriteProblem {
  int64_t axis = 0;
  int64_t n = 0;   ///< the update's length along axis
  int64_t dim = 0; ///< the result's
  int64_t rows = 0;
  int64_t innerBytes = 0;

  /// Whether the slice [start, start + n) lies in the result.
  bool fits(int64_t start) const { return start >= 0 && start <= dim - n; }
};

/// Checks the dtypes, the offset (one i64), and that update and result
/// agree outside axis. The offset's value is data: the kernels check it
/// when they read it.
CacheWriteProblem describeCacheWrite(const ConstTensor &update,
                                     const ConstTensor &offset,
                                     const Tensor &result, int64_t axis);

} // namespace hybrid::kernels
