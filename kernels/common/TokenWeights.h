// The token weights of sampling, shared by the CPU and CUDA sample kernels:
// an integer per token, floor(2^q * exp((l - max) / T)), computed with the
// same IEEE operations on the host and the device (explicit fused
// multiply-adds, exact power-of-two scalings, no library exp), so both
// backends give every token the same weight bit for bit. Integer weights
// make every sum of them exact, whatever order a backend adds them in:
// the CPU walks the ranking one token at a time, the GPU finds the same
// token with parallel histograms, and they agree exactly.
#pragma once

#include "hybrid/HostDevice.h"
#include "hybrid/Philox.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace hybrid::sampling {

/// The weight bits q of a vocabulary of V tokens. A weight is at most 2^q
/// (the likeliest token's), so a sum of up to V of them stays below 2^53:
/// exact as an integer and as a double. At most 40, so a weight fits in 41
/// bits. A token whose probability is below 2^-q of the likeliest one gets
/// weight 0 and is never drawn (2^-36 ~ 1.5e-11 for V = 128,256).
HYBRID_HOST_DEVICE int weightBits(int64_t V) {
  int width = 0; // the bit width of V
  for (uint64_t v = static_cast<uint64_t>(V); v != 0; v >>= 1)
    ++width;
  return width >= 13 ? 53 - width : 40;
}

/// a * b + c rounded once (IEEE fma): the same bits on every compiler and
/// device, where a separate multiply and add could be contracted or not.
HYBRID_HOST_DEVICE double fusedMulAdd(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

/// 2^e exactly, for e in the normal range.
HYBRID_HOST_DEVICE double powerOfTwo(int e) {
  const uint64_t bits = static_cast<uint64_t>(1023 + e) << 52;
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
#endif
}

/// floor(2^q * e^x) for x <= 0 (2^q for x = 0; 0 for NaN and wherever it
/// is below 1), to about 1e-13 relative: e^x = 2^-n e^r with n = round(x /
/// -ln 2) and |r| <= ln 2 / 2 (ln 2 in two parts, Cody and Waite), e^r by
/// its Taylor polynomial of degree 10 in Horner form, then an exact scaling.
/// Every step is one correctly rounded IEEE operation (fma, conversion,
/// multiplication by a power of two), so host and device agree bit for bit.
HYBRID_HOST_DEVICE uint64_t scaledExp(float x, int q) {
  constexpr double kLn2 = 0x1.62e42fefa39efp-1;
  constexpr double kInvLn2 = 0x1.71547652b82fep+0;
  constexpr double kLn2Hi = 0x1.62e42feep-1;       // 32 bits of ln 2
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33; // ln 2 - kLn2Hi
  // Below -(q + 1) ln 2 the scaled value is under 1/2 (NaN fails too).
  if (!(static_cast<double>(x) > -(q + 1) * kLn2))
    return 0;
  const uint64_t one = uint64_t{1} << q;
  if (x >= 0)
    return one;
  const double a = -static_cast<double>(x); // in (0, (q + 1) ln 2)
  // n = floor(a / ln 2 + 1/2) <= q + 1 (truncation of a positive value).
  const int64_t n = static_cast<int64_t>(fusedMulAdd(a, kInvLn2, 0.5));
  const double nd = static_cast<double>(n);
  double r = fusedMulAdd(nd, kLn2Hi, -a); // n ln 2 - a, exactly rounded
  r = fusedMulAdd(nd, kLn2Lo, r);
  // The coefficients 1/k! (k = 10 .. 0), as exact hexadecimal literals.
  double p = 0x1.27e4fb7789f5cp-22;
  p = fusedMulAdd(p, r, 0x1.71de3a556c734p-19);
  p = fusedMulAdd(p, r, 0x1.a01a01a01a01ap-16);
  p = fusedMulAdd(p, r, 0x1.a01a01a01a01ap-13);
  p = fusedMulAdd(p, r, 0x1.6c16c16c16c17p-10);
  p = fusedMulAdd(p, r, 0x1.1111111111111p-7);
  p = fusedMulAdd(p, r, 0x1.5555555555555p-5);
  p = fusedMulAdd(p, r, 0x1.5555555555555p-3);
  p = fusedMulAdd(p, r, 0x1.0p-1);
  p = fusedMulAdd(p, r, 1.0);
  p = fusedMulAdd(p, r, 1.0);
  // q - n >= -1; the product is exact and its truncation is the floor.
  const uint64_t w =
      static_cast<uint64_t>(p * powerOfTwo(q - static_cast<int>(n)));
  return w < one ? w : one;
}

/// The weight of a token of logit `l` in a row whose largest logit is `top`
/// (not NaN, above -inf) at temperature T > 0: floor(2^q * exp((l - top) /
/// T)), softmax(l / T) up to its normaliser without the overflow of l / T
/// for tiny T. (l - top) / T is computed in f32, as IEEE requires on both
/// backends. With top = +inf the +inf logits share everything (2^q each).
/// NaN and -inf logits weigh 0.
HYBRID_HOST_DEVICE uint64_t tokenWeight(float l, float top, float temperature,
                                        int q) {
  if (top == INFINITY)
    return l == INFINITY ? uint64_t{1} << q : 0;
  return scaledExp((l - top) / temperature, q);
}

} // namespace hybrid::sampling
