// Overflow-checked size arithmetic for shapes read from files and for
// evaluated symbolic sizes (hybrid_bundle; the runtime uses it too).
#pragma once

#include "hybrid/Types.h"

#include <cstdint>
#include <string>

namespace hybrid::detail {

inline bool mulOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_mul_overflow(a, b, &out);
}
inline bool addOverflows(int64_t a, int64_t b, int64_t &out) {
  return __builtin_add_overflow(a, b, &out);
}

/// numel of `shape`, or -1 if a dim is negative or the product overflows.
inline int64_t checkedNumel(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0 || mulOverflows(n, d, n))
      return -1;
  return n;
}

/// Bytes of a tensor; throws hybrid::Error naming `what` on a negative dim
/// or an overflowing size.
inline size_t tensorBytes(DType dtype, const Shape &shape,
                          const std::string &what) {
  int64_t n = checkedNumel(shape);
  int64_t bytes;
  if (n < 0 || mulOverflows(n, static_cast<int64_t>(dtypeSize(dtype)), bytes))
    throw Error(what + ": invalid shape " + shapeToString(shape) +
                " (negative or overflowing size)");
  return static_cast<size_t>(bytes);
}

inline int64_t alignUp(int64_t v, int64_t alignment) {
  return (v + alignment - 1) / alignment * alignment;
}

} // namespace hybrid::detail
