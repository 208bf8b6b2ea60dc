// rotary (ops::Rotary) as plain data both backends share, and its per-pair
// math: rotary position embedding of the first rotary_dim features of
// input [B, H, T, D] with cos/sin [B or 1, T, rotary_dim] of the input's
// float dtype, half-split (GPT-NeoX, Llama rotate_half) or interleaved
// (GPT-J) pairs, computed in f32. Each feature uses its own cos/sin entry,
// as HF does, so both conventions of filling the halves work.
#pragma once

#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <cstdint>

namespace hybrid::kernels {

/// Plain data: the CUDA kernel takes it by value.
struct RotaryProblem {
  int64_t B = 0, H = 0, T = 0, D = 0;
  int64_t R = 0;         ///< rotary_dim: even, at most D
  bool perBatch = false; ///< cos/sin hold B entries (else 1)
  bool interleaved = false;

  /// The element offset in cos and sin of input row `row` (of B * H * T).
  HYBRID_HOST_DEVICE int64_t tableRow(int64_t row) const {
    const int64_t t = row % T, b = row / (H * T);
    return ((perBatch ? b : 0) * T + t) * R;
  }
};

/// The rotated pair (x0, x1): x * cos + rotate(x) * sin with the cos and
/// sin entries of each one's own feature.
HYBRID_HOST_DEVICE float rotaryFirst(float x0, float x1, float c, float s) {
  return x0 * c - x1 * s;
}
HYBRID_HOST_DEVICE float rotarySecond(float x0, float x1, float c, float s) {
  return x1 * c + x0 * s;
}

/// Checks dtypes (cos and sin of the input's), the input's rank, cos/sin
/// against it ([..., T, rotary_dim] whose leading dimensions hold 1 or B
/// entries) and rotary_dim; the input's float dtype is the caller's check.
RotaryProblem describeRotary(const RotaryArgs &a);

} // namespace hybrid::kernels
