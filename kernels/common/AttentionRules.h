// Attention's rules every kernel shares, forward and backward, CPU and CUDA:
// which keys a query row sees (causal and sliding-window limits aligned to
// the end of the keys that exist, and key padding), ALiBi's bias, and the
// online softmax's step (how a running sum carries over to a new maximum), each
// defined once and usable in host and device code.
#pragma once

#include "hybrid/HostDevice.h"
#include <cmath>
#include <cstdint>

namespace hybrid::kernels {

/// Which keys a query row sees: T query rows aligned to the end of the
/// keys, S the key buffers' length, and an optional [B, S] key mask (i32 or
/// i64, 0 = padding). Kernels' problem structures derive from it.
struct AttentionLimits {
  int64_t T = 0, S = 0;
  bool causal = false;
  int64_t window = 0; ///< sliding window (0: none)
  const void *keyMask = nullptr;
  bool keyMask64 = false;

  /// Visible keys [begin, end) of query row i among the first `keys` keys
  /// (a KV cache's filled slots, else S), before the key mask: the causal
  /// and sliding-window limits aligned to the end of those keys.
  HYBRID_HOST_DEVICE void keyRange(int64_t i, int64_t keys, int64_t &begin,
                                   int64_t &end) const {
    const int64_t last = i + keys - T; // the key aligned with query i
    begin = 0;
    end = keys;
    if (causal)
      end = last + 1 < 0 ? 0 : last + 1 > keys ? keys : last + 1;
    if (window > 0 && last + 1 > window) // (no overflow for huge windows)
      begin = last - window + 1 < keys ? last - window + 1 : keys;
  }

  /// Whether key j of batch row b is a token (not padding).
  HYBRID_HOST_DEVICE bool keyVisible(int64_t b, int64_t j) const {
    if (!keyMask)
      return true;
    const int64_t e = b * S + j;
    return keyMask64 ? static_cast<const int64_t *>(keyMask)[e] != 0
                     : static_cast<const int32_t *>(keyMask)[e] != 0;
  }
};

/// ALiBi's bias of query row i (of T) against key j for a head of slope
/// `slope`: slope (j - i). BLOOM adds slope * key position; the two differ
/// by a constant per row, which the softmax ignores. Forward and backward
/// add it after the additive mask.
HYBRID_HOST_DEVICE float alibiBias(float slope, int64_t i, int64_t j) {
  return slope * static_cast<float>(j - i);
}

/// The online softmax's step: what a sum of exp(x - m) becomes when its
/// maximum rises to mNew, exp(m - mNew), and 0 while nothing was summed
/// (m = -inf; never NaN). exp2Carry is the same in base-2 score units.
HYBRID_HOST_DEVICE float softmaxCarry(float m, float mNew) {
#if defined(__CUDA_ARCH__)
  return m == -INFINITY ? 0.0f : expf(m - mNew);
#else
  return m == -INFINITY ? 0.0f : std::exp(m - mNew);
#endif
}
HYBRID_HOST_DEVICE float softmaxCarry2(float m, float mNew) {
#if defined(__CUDA_ARCH__)
  return m == -INFINITY ? 0.0f : exp2f(m - mNew);
#else
  return m == -INFINITY ? 0.0f : std::exp2(m - mNew);
#endif
}

} // namespace hybrid::kernels
