// binary (ops::Binary, one kernel per kind) as plain data both backends
// share, and each kind's per-element math: arithmetic on floats (computed
// in f32; the backend loads bf16/f16 and rounds the result once) and
// integers (i32, i64; wrapping), comparisons on every dtype (to bool) and
// logic on bool, with NumPy broadcasting.
#pragma once

#include "common/Check.h"
#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <math.h>

#include <cstdint>
#include <type_traits>

namespace hybrid::kernels {

/// What a kind computes on and gives: numeric operands to a result of their
/// dtype, any operands to bool, or bool to bool.
enum class BinaryFamily { Arithmetic, Comparison, Logic };

struct BinaryProblem {
  Shape shape; ///< the broadcast of lhs and rhs: the result's
};

/// Checks equal operand dtypes and that the result has the broadcast shape.
inline BinaryProblem describeBinary(const BinaryArgs &a, const char *kernel) {
  expectSameDType(a.lhs, a.rhs, kernel, "lhs", "rhs");
  BinaryProblem p{broadcastShapes({&a.lhs.shape, &a.rhs.shape}, kernel)};
  expectShape(a.out, p.shape, kernel, "result");
  return p;
}

/// Checks the dtypes `family` asks for (after describeBinary, and after
/// whatever a backend checks of the operands' values).
inline void expectBinaryTypes(const BinaryArgs &a, BinaryFamily family,
                              const char *kernel) {
  switch (family) {
  case BinaryFamily::Arithmetic:
    return expectDType(a.out, a.lhs.dtype, kernel, "result");
  case BinaryFamily::Comparison:
    return expectDType(a.out, DType::Bool, kernel, "result");
  case BinaryFamily::Logic:
    expectDType(a.lhs, DType::Bool, kernel, "lhs");
    return expectDType(a.out, DType::Bool, kernel, "result");
  }
}

namespace binary {

// Signed integer overflow wraps (two's complement) instead of being
// undefined: arithmetic goes through the unsigned type of the same width.
template <typename T> using Unsigned = std::make_unsigned_t<T>;

struct Add {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) + Unsigned<T>(b));
  }
};
struct Sub {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const { return a - b; }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) - Unsigned<T>(b));
  }
};
struct Mul {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const { return a * b; }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) * Unsigned<T>(b));
  }
};

// Integer division by zero and negative integer exponents: the CPU kernel
// rejects them before its loop; the device cannot report them without a
// host sync, so there they give 0 (a negative exponent: the truncated
// exact value, which is 0 but for bases 1 and -1).

/// Integer division truncates toward zero (C, ONNX); MIN / -1 wraps.
struct Div {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const { return a / b; }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    if (b == 0)
      return 0;
    return b == -1 ? static_cast<T>(Unsigned<T>(0) - Unsigned<T>(a)) : a / b;
  }
};
struct Pow {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const {
    return powf(a, b);
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    if (b < 0) // 1 / a^|b| truncated toward zero
      return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    Unsigned<T> result = 1, base = Unsigned<T>(a);
    for (Unsigned<T> e = Unsigned<T>(b); e; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return static_cast<T>(result);
  }
};
/// NaN propagates, as in torch.maximum / numpy.maximum.
struct Max {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const {
    return (a > b || a != a) ? a : b;
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct Min {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const {
    return (a < b || a != a) ? a : b;
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
/// C fmod: the result takes the dividend's sign.
struct Fmod {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const {
    return fmodf(a, b);
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    return b == 0 || b == -1 ? 0 : a % b;
  }
};
/// Python %: the result takes the divisor's sign.
struct FloorMod {
  HYBRID_HOST_DEVICE float operator()(float a, float b) const {
    float r = fmodf(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T a, T b) const {
    if (b == 0 || b == -1)
      return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
};

struct Equal {
  template <typename T> HYBRID_HOST_DEVICE uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
struct Less {
  template <typename T> HYBRID_HOST_DEVICE uint8_t operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqual {
  template <typename T> HYBRID_HOST_DEVICE uint8_t operator()(T a, T b) const {
    return a <= b;
  }
};
struct Greater {
  template <typename T> HYBRID_HOST_DEVICE uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqual {
  template <typename T> HYBRID_HOST_DEVICE uint8_t operator()(T a, T b) const {
    return a >= b;
  }
};

/// Comparisons of bool operands compare truth values.
template <typename Op> struct BoolCompare {
  Op op;
  HYBRID_HOST_DEVICE uint8_t operator()(uint8_t a, uint8_t b) const {
    return op(static_cast<uint8_t>(a != 0), static_cast<uint8_t>(b != 0));
  }
};

// Logic reads any non-zero byte as true.
struct And {
  HYBRID_HOST_DEVICE uint8_t operator()(uint8_t a, uint8_t b) const {
    return a && b;
  }
};
struct Or {
  HYBRID_HOST_DEVICE uint8_t operator()(uint8_t a, uint8_t b) const {
    return a || b;
  }
};
struct Xor {
  HYBRID_HOST_DEVICE uint8_t operator()(uint8_t a, uint8_t b) const {
    return !a != !b;
  }
};

} // namespace binary
} // namespace hybrid::kernels
