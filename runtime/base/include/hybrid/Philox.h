// The counter-based random numbers of sampling: Philox4x32-10 (Salmon et
// al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), one uniform
// float per (seed, counter, row). Header-only and usable in CUDA device
// code, so every backend draws the same numbers.
#pragma once

#include "hybrid/HostDevice.h"

#include <cstdint>

namespace hybrid {

/// Philox4x32 with 10 rounds on counter (c0..c3) and key (k0, k1).
HYBRID_HOST_DEVICE void philox4x32(uint32_t c[4], uint32_t k0,
                                          uint32_t k1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
    const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = uint32_t(p1);
    const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
}

/// A uniform float in [0, 1) for sampling row `row` at step `counter` under
/// `seed`: the top 24 bits of the first Philox output word.
HYBRID_HOST_DEVICE float philoxUniform(uint64_t seed, uint64_t counter,
                                              uint64_t row) {
  uint32_t c[4] = {
      static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32),
      static_cast<uint32_t>(row), static_cast<uint32_t>(row >> 32)};
  philox4x32(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return static_cast<float>(c[0] >> 8) * (1.0f / 16777216.0f);
}

} // namespace hybrid
