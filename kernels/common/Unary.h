// unary (ops::Unary, one kernel per kind) as plain data both backends
// share, and each kind's per-element math: float math (computed in f32;
// the backend loads bf16/f16 and rounds the result once), neg/abs/sign/
// relu on floats and i32/i64, logical not on bool and the is_nan/is_inf
// tests (floats to bool). The math is the C library's f32 functions, the
// CPU's libm and CUDA's accurate libdevice ones.
#pragma once

#include "common/ActivationMath.h"
#include "common/Check.h"
#include "common/KernelArgs.h"
#include "hybrid/HostDevice.h"

#include <math.h>

#include <cstdint>
#include <type_traits>

namespace hybrid::kernels {

/// What a kind maps: elements to their own dtype (the math, neg, abs,
/// ...), floats to bool (is_nan, is_inf) or bool to bool (not).
enum class UnaryFamily { Map, Test, Logic };

struct UnaryProblem {
  int64_t numel = 0;
};

/// Checks the result's shape and the dtypes `family` asks for; which input
/// dtypes a kind computes on is the dispatch's check.
inline UnaryProblem describeUnary(const UnaryArgs &a, UnaryFamily family,
                                  const char *kernel) {
  if (family == UnaryFamily::Logic)
    expectDType(a.input, DType::Bool, kernel, "input");
  expectShape(a.out, a.input.shape, kernel, "result");
  expectDType(a.out, family == UnaryFamily::Map ? a.input.dtype : DType::Bool,
              kernel, "result");
  return {a.input.numel()};
}

namespace unary {

template <typename T> using Unsigned = std::make_unsigned_t<T>;

struct Neg {
  HYBRID_HOST_DEVICE float operator()(float x) const { return -x; }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T x) const {
    return static_cast<T>(Unsigned<T>(0) - Unsigned<T>(x)); // MIN wraps
  }
};
struct Abs {
  HYBRID_HOST_DEVICE float operator()(float x) const { return fabsf(x); }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T x) const {
    return x < 0 ? static_cast<T>(Unsigned<T>(0) - Unsigned<T>(x)) : x;
  }
};
struct Sign {
  // NaN stays NaN, as in numpy.sign (the ONNX reference).
  HYBRID_HOST_DEVICE float operator()(float x) const {
    return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x;
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T x) const {
    return static_cast<T>((x > 0) - (x < 0));
  }
};
struct Relu {
  HYBRID_HOST_DEVICE float operator()(float x) const {
    return x < 0 ? 0.0f : x;
  }
  template <typename T> HYBRID_HOST_DEVICE T operator()(T x) const {
    return x < 0 ? 0 : x;
  }
};

struct Exp {
  HYBRID_HOST_DEVICE float operator()(float x) const { return expf(x); }
};
struct Log {
  HYBRID_HOST_DEVICE float operator()(float x) const { return logf(x); }
};
struct Sqrt {
  HYBRID_HOST_DEVICE float operator()(float x) const { return sqrtf(x); }
};
/// 1 / sqrt rounds as the CPU does; CUDA's rsqrtf is an approximation.
struct Rsqrt {
  HYBRID_HOST_DEVICE float operator()(float x) const { return 1.0f / sqrtf(x); }
};
struct Reciprocal {
  HYBRID_HOST_DEVICE float operator()(float x) const { return 1.0f / x; }
};
struct Tanh {
  HYBRID_HOST_DEVICE float operator()(float x) const { return tanhf(x); }
};
struct Sigmoid {
  HYBRID_HOST_DEVICE float operator()(float x) const {
    return activation::sigmoidOf(x);
  }
};
struct Silu {
  HYBRID_HOST_DEVICE float operator()(float x) const {
    return activation::siluOf(x);
  }
};
struct GeluErf {
  HYBRID_HOST_DEVICE float operator()(float x) const {
    return activation::geluErfOf(x);
  }
};
struct GeluTanh {
  HYBRID_HOST_DEVICE float operator()(float x) const {
    return activation::geluTanhOf(x);
  }
};
struct Sin {
  HYBRID_HOST_DEVICE float operator()(float x) const { return sinf(x); }
};
struct Cos {
  HYBRID_HOST_DEVICE float operator()(float x) const { return cosf(x); }
};
struct Erf {
  HYBRID_HOST_DEVICE float operator()(float x) const { return erff(x); }
};
struct Floor {
  HYBRID_HOST_DEVICE float operator()(float x) const { return floorf(x); }
};
struct Ceil {
  HYBRID_HOST_DEVICE float operator()(float x) const { return ceilf(x); }
};

struct IsNan {
  HYBRID_HOST_DEVICE uint8_t operator()(float x) const { return x != x; }
};
struct IsInf {
  HYBRID_HOST_DEVICE uint8_t operator()(float x) const {
    return isinf(x) ? 1 : 0;
  }
};
struct Not {
  HYBRID_HOST_DEVICE uint8_t operator()(uint8_t x) const { return !x; }
};

} // namespace unary
} // namespace hybrid::kernels
