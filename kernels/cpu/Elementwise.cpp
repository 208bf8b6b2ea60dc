// Binary elementwise kernels with NumPy broadcasting: arithmetic on floats
// (f32, bf16, f16; computed in f32, rounded once) and integers (i32, i64;
// wrapping), comparisons on every dtype (to bool) and logic on bool.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace hybrid::cpu::kernels {
namespace {

// Signed integer overflow wraps (two's complement) instead of being
// undefined: arithmetic goes through the unsigned type of the same width.
template <typename T> using Unsigned = std::make_unsigned_t<T>;

struct AddOp {
  float operator()(float a, float b) const { return a + b; }
  template <typename T> T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) + Unsigned<T>(b));
  }
};
struct SubOp {
  float operator()(float a, float b) const { return a - b; }
  template <typename T> T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) - Unsigned<T>(b));
  }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
  template <typename T> T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) * Unsigned<T>(b));
  }
};
// Integer division truncates toward zero (C, ONNX); the divisor was checked
// for zeros before the loop, and MIN / -1 wraps.
struct DivOp {
  float operator()(float a, float b) const { return a / b; }
  template <typename T> T operator()(T a, T b) const {
    return b == -1 ? static_cast<T>(Unsigned<T>(0) - Unsigned<T>(a)) : a / b;
  }
};
// Integer exponents were checked to be non-negative.
struct PowOp {
  float operator()(float a, float b) const { return std::pow(a, b); }
  template <typename T> T operator()(T a, T b) const {
    Unsigned<T> result = 1, base = Unsigned<T>(a);
    for (Unsigned<T> e = Unsigned<T>(b); e; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return static_cast<T>(result);
  }
};
// NaN propagates, as in torch.maximum / numpy.maximum.
struct MaxOp {
  float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
  template <typename T> T operator()(T a, T b) const { return a > b ? a : b; }
};
struct MinOp {
  float operator()(float a, float b) const { return (a < b || a != a) ? a : b; }
  template <typename T> T operator()(T a, T b) const { return a < b ? a : b; }
};
// C fmod: the result takes the dividend's sign.
struct FmodOp {
  float operator()(float a, float b) const { return std::fmod(a, b); }
  template <typename T> T operator()(T a, T b) const {
    return b == -1 ? 0 : a % b;
  }
};
// Python %: the result takes the divisor's sign.
struct FloorModOp {
  float operator()(float a, float b) const {
    float r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  template <typename T> T operator()(T a, T b) const {
    if (b == -1)
      return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
};

struct EqualOp {
  template <typename T> uint8_t operator()(T a, T b) const { return a == b; }
};
struct LessOp {
  template <typename T> uint8_t operator()(T a, T b) const { return a < b; }
};
struct LessEqualOp {
  template <typename T> uint8_t operator()(T a, T b) const { return a <= b; }
};
struct GreaterOp {
  template <typename T> uint8_t operator()(T a, T b) const { return a > b; }
};
struct GreaterEqualOp {
  template <typename T> uint8_t operator()(T a, T b) const { return a >= b; }
};

// Logic reads any non-zero byte as true.
struct AndOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a && b; }
};
struct OrOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return a || b; }
};
struct XorOp {
  uint8_t operator()(uint8_t a, uint8_t b) const { return !a != !b; }
};

/// An element as the ops see it: floats widen to f32, others stay.
template <typename S> auto load(S x) {
  if constexpr (kIsFloatStorage<S>)
    return toFloat(x);
  else
    return x;
}
/// An op's value stored as R (floats round once).
template <typename R, typename V> R store(V v) {
  if constexpr (kIsFloatStorage<R>)
    return fromFloat<R>(v);
  else
    return static_cast<R>(v);
}

/// out = op(lhs, rhs) over the broadcast of lhs and rhs; S is the operands'
/// storage type, R the result's.
template <typename S, typename R, typename Op>
void broadcastBinary(const char *kernel, const ConstTensor &lhs,
                     const ConstTensor &rhs, const Tensor &result, Op op) {
  BroadcastWalk walk(result.shape, {&lhs.shape, &rhs.shape}, kernel);
  const S *a = lhs.as<S>();
  const S *b = rhs.as<S>();
  R *out = result.as<R>();
  const bool sa = walk.rowStride(0) != 0, sb = walk.rowStride(1) != 0;
  walk.parallelForSpans(2,
                        [&](int64_t first, const int64_t *offsets, int64_t n) {
                          const S *pa = a + offsets[0];
                          const S *pb = b + offsets[1];
                          R *po = out + first;
                          if (sa && sb) {
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = store<R>(op(load(pa[i]), load(pb[i])));
                          } else if (sa) {
                            const auto y = load(*pb);
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = store<R>(op(load(pa[i]), y));
                          } else if (sb) {
                            const auto x = load(*pa);
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = store<R>(op(x, load(pb[i])));
                          } else {
                            const R v = store<R>(op(load(*pa), load(*pb)));
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = v;
                          }
                        });
}

/// Checks operand/result counts, equal operand dtypes and that the result
/// has the broadcast shape.
void checkBinary(const KernelCall &call, const char *kernel) {
  expectArity(call, kernel, 2, 1);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  expectSameDType(lhs, rhs, kernel, "lhs", "rhs");
  expectShape(call.results[0],
              broadcastShapes({&lhs.shape, &rhs.shape}, kernel), kernel,
              "result");
}

template <typename Op>
void arithmetic(const KernelCall &call, const char *kernel, Op op) {
  checkBinary(call, kernel);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(result, lhs.dtype, kernel, "result");
  visitNumeric(lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    broadcastBinary<S, S>(kernel, lhs, rhs, result, op);
  });
}

template <typename Op>
void comparison(const KernelCall &call, const char *kernel, Op op) {
  checkBinary(call, kernel);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(result, DType::Bool, kernel, "result");
  if (lhs.dtype == DType::Bool)
    return broadcastBinary<uint8_t, uint8_t>(
        kernel, lhs, rhs, result,
        [op](uint8_t a, uint8_t b) { return op(a != 0, b != 0); });
  visitNumeric(lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    broadcastBinary<S, uint8_t>(kernel, lhs, rhs, result, op);
  });
}

template <typename Op>
void logical(const KernelCall &call, const char *kernel, Op op) {
  checkBinary(call, kernel);
  expectDType(call.operands[0], DType::Bool, kernel, "lhs");
  expectDType(call.results[0], DType::Bool, kernel, "result");
  broadcastBinary<uint8_t, uint8_t>(kernel, call.operands[0], call.operands[1],
                                    call.results[0], op);
}

/// Throws when an integer divisor holds a zero (the division would trap).
void checkNoZeroDivisor(const ConstTensor &rhs, const char *kernel) {
  if (!isIntegerDType(rhs.dtype))
    return;
  visitInteger(rhs.dtype, kernel, "divisor", [&](auto zero) {
    using T = decltype(zero);
    const T *b = rhs.as<T>();
    for (int64_t i = 0, n = rhs.numel(); i < n; ++i)
      if (b[i] == 0)
        fail(kernel, "integer division by zero (divisor element " +
                         std::to_string(i) + ")");
  });
}

} // namespace

void add(const KernelCall &call) { arithmetic(call, "add", AddOp{}); }
void sub(const KernelCall &call) { arithmetic(call, "sub", SubOp{}); }
void mul(const KernelCall &call) { arithmetic(call, "mul", MulOp{}); }
void max(const KernelCall &call) { arithmetic(call, "max", MaxOp{}); }
void min(const KernelCall &call) { arithmetic(call, "min", MinOp{}); }

void div(const KernelCall &call) {
  checkBinary(call, "div");
  checkNoZeroDivisor(call.operands[1], "div");
  arithmetic(call, "div", DivOp{});
}

void mod(const KernelCall &call) {
  checkBinary(call, "mod");
  checkNoZeroDivisor(call.operands[1], "mod");
  arithmetic(call, "mod", FloorModOp{});
}

void fmod(const KernelCall &call) {
  checkBinary(call, "fmod");
  checkNoZeroDivisor(call.operands[1], "fmod");
  arithmetic(call, "fmod", FmodOp{});
}

void pow(const KernelCall &call) {
  checkBinary(call, "pow");
  const ConstTensor &rhs = call.operands[1];
  if (isIntegerDType(rhs.dtype))
    visitInteger(rhs.dtype, "pow", "exponent", [&](auto zero) {
      using T = decltype(zero);
      const T *b = rhs.as<T>();
      for (int64_t i = 0, n = rhs.numel(); i < n; ++i)
        if (b[i] < 0)
          fail("pow", "negative integer exponent " + std::to_string(b[i]) +
                          " (element " + std::to_string(i) +
                          "); integers to negative powers are not supported");
    });
  arithmetic(call, "pow", PowOp{});
}

void equal(const KernelCall &call) { comparison(call, "equal", EqualOp{}); }
void less(const KernelCall &call) { comparison(call, "less", LessOp{}); }
void lessEqual(const KernelCall &call) {
  comparison(call, "less_equal", LessEqualOp{});
}
void greater(const KernelCall &call) {
  comparison(call, "greater", GreaterOp{});
}
void greaterEqual(const KernelCall &call) {
  comparison(call, "greater_equal", GreaterEqualOp{});
}

void logicalAnd(const KernelCall &call) { logical(call, "and", AndOp{}); }
void logicalOr(const KernelCall &call) { logical(call, "or", OrOp{}); }
void logicalXor(const KernelCall &call) { logical(call, "xor", XorOp{}); }

} // namespace hybrid::cpu::kernels
