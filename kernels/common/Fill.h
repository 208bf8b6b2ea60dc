// fill (ops::Fill) as plain data both backends share: one value converted
// to the result's dtype once, on the host, as cast would convert it; the
// kernels then only copy its bytes.
#pragma once

#include "common/KernelArgs.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hybrid::kernels {

struct FillProblem {
  int64_t n = 0;
  size_t elementSize = 0;
  /// The value's bytes in the result's dtype (the low elementSize bytes);
  /// zero exactly when every byte of the result becomes zero.
  uint64_t bits = 0;

  /// The value as the word W of elementSize bytes (Dispatch.h's visitWord).
  template <typename W> W word() const {
    W w;
    std::memcpy(&w, &bits, sizeof(W));
    return w;
  }
};

/// The value in the result's dtype (floats rounded to nearest even; for
/// integers truncated toward zero, NaN -> 0, saturated at the limits).
FillProblem describeFill(const FillArgs &a);

} // namespace hybrid::kernels
