// bfloat16 and IEEE half conversions to and from float, bit-exact with
// PyTorch and CUDA: round to nearest even, NaN stays NaN, overflow to inf,
// half subnormals kept. Header-only; used by kernels, the weight store and
// the checkpoint readers.
#pragma once

#include <cstdint>
#include <cstring>

namespace hybrid {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16ToFloat(uint16_t h) {
  return bitsFloat(static_cast<uint32_t>(h) << 16);
}

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and signed
    return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1); // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

inline float f16ToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) // inf or NaN
    return bitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp != 0)
    return bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0)
    return bitsFloat(sign);
  // Subnormal: normalise.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while (!(mant & 0x400u));
  return bitsFloat(sign | static_cast<uint32_t>(112 - e) << 23 |
                   ((mant & 0x3ffu) << 13));
}

inline uint16_t floatToF16(float f) {
  const uint32_t u = floatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // rounds to >= 65520: inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) { // normal half
    uint32_t r = a - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1);
    return static_cast<uint16_t>(sign | (r >> 13));
  }
  if (a < 0x33000000u) // below half the smallest subnormal: zero
    return sign;
  // Subnormal half: shift the full mantissa, round to nearest even.
  const uint32_t exp = a >> 23;
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - exp; // 14..24
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1)))
    ++r;
  return static_cast<uint16_t>(sign | r);
}

} // namespace hybrid
