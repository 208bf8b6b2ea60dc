// Binary elementwise kernels with NumPy broadcasting: arithmetic on f32/i64,
// comparisons on f32/i64/bool (to bool) and logic on bool.
#include "Broadcast.h"
#include "KernelCheck.h"
#include "Kernels.h"

#include <cmath>
#include <cstdint>
#include <limits>

namespace hybrid::cpu::kernels {
namespace {

// Signed overflow wraps (two's complement) instead of being undefined.
inline int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }

struct AddOp {
  float operator()(float a, float b) const { return a + b; }
  int64_t operator()(int64_t a, int64_t b) const {
    return wrap(uint64_t(a) + uint64_t(b));
  }
};
struct SubOp {
  float operator()(float a, float b) const { return a - b; }
  int64_t operator()(int64_t a, int64_t b) const {
    return wrap(uint64_t(a) - uint64_t(b));
  }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
  int64_t operator()(int64_t a, int64_t b) const {
    return wrap(uint64_t(a) * uint64_t(b));
  }
};
// Integer division truncates toward zero (C, ONNX); the divisor was checked
// for zeros before the loop.
struct DivOp {
  float operator()(float a, float b) const { return a / b; }
  int64_t operator()(int64_t a, int64_t b) const {
    return b == -1 ? wrap(0 - uint64_t(a)) : a / b;
  }
};
// Exponents were checked to be non-negative for i64.
struct PowOp {
  float operator()(float a, float b) const { return std::pow(a, b); }
  int64_t operator()(int64_t a, int64_t b) const {
    uint64_t result = 1, base = uint64_t(a);
    for (uint64_t e = uint64_t(b); e; e >>= 1) {
      if (e & 1)
        result *= base;
      base *= base;
    }
    return wrap(result);
  }
};
// NaN propagates, as in torch.maximum / numpy.maximum.
struct MaxOp {
  float operator()(float a, float b) const { return (a > b || a != a) ? a : b; }
  int64_t operator()(int64_t a, int64_t b) const { return a > b ? a : b; }
};
struct MinOp {
  float operator()(float a, float b) const { return (a < b || a != a) ? a : b; }
  int64_t operator()(int64_t a, int64_t b) const { return a < b ? a : b; }
};
// C fmod: the result takes the dividend's sign.
struct FmodOp {
  float operator()(float a, float b) const { return std::fmod(a, b); }
  int64_t operator()(int64_t a, int64_t b) const { return b == -1 ? 0 : a % b; }
};
// Python %: the result takes the divisor's sign.
struct FloorModOp {
  float operator()(float a, float b) const {
    float r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  int64_t operator()(int64_t a, int64_t b) const {
    if (b == -1)
      return 0;
    int64_t r = a % b;
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

/// out = op(lhs, rhs) over the broadcast of lhs and rhs.
template <typename T, typename R, typename Op>
void broadcastBinary(const char *kernel, const ConstTensor &lhs,
                     const ConstTensor &rhs, const Tensor &result, Op op) {
  BroadcastWalk walk(result.shape, {lhs.shape, rhs.shape}, kernel);
  const T *a = lhs.as<T>();
  const T *b = rhs.as<T>();
  R *out = result.as<R>();
  const bool sa = walk.rowStride(0) != 0, sb = walk.rowStride(1) != 0;
  walk.parallelForSpans(2,
                        [&](int64_t first, const int64_t *offsets, int64_t n) {
                          const T *pa = a + offsets[0];
                          const T *pb = b + offsets[1];
                          R *po = out + first;
                          if (sa && sb) {
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = op(pa[i], pb[i]);
                          } else if (sa) {
                            const T y = *pb;
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = op(pa[i], y);
                          } else if (sb) {
                            const T x = *pa;
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = op(x, pb[i]);
                          } else {
                            const R v = op(*pa, *pb);
                            for (int64_t i = 0; i < n; ++i)
                              po[i] = v;
                          }
                        });
}

/// Checks operand/result counts and that the result has the broadcast shape.
void checkBinary(const KernelCall &call, const char *kernel) {
  expectArity(call, kernel, 2, 1);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  expectSameDType(lhs, rhs, kernel, "lhs", "rhs");
  expectShape(call.results[0], broadcastShapes({lhs.shape, rhs.shape}, kernel),
              kernel, "result");
}

template <typename Op>
void arithmetic(const KernelCall &call, const char *kernel, Op op) {
  checkBinary(call, kernel);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(result, lhs.dtype, kernel, "result");
  switch (lhs.dtype) {
  case DType::F32:
    return broadcastBinary<float, float>(kernel, lhs, rhs, result, op);
  case DType::I64:
    return broadcastBinary<int64_t, int64_t>(kernel, lhs, rhs, result, op);
  default:
    break;
  }
  fail(kernel, std::string("unsupported element type ") + dtypeName(lhs.dtype) +
                   " (expected f32 or i64)");
}

template <typename Op>
void comparison(const KernelCall &call, const char *kernel, Op op) {
  checkBinary(call, kernel);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(result, DType::Bool, kernel, "result");
  switch (lhs.dtype) {
  case DType::F32:
    return broadcastBinary<float, uint8_t>(kernel, lhs, rhs, result, op);
  case DType::I64:
    return broadcastBinary<int64_t, uint8_t>(kernel, lhs, rhs, result, op);
  case DType::Bool:
    return broadcastBinary<uint8_t, uint8_t>(
        kernel, lhs, rhs, result,
        [op](uint8_t a, uint8_t b) { return op(a != 0, b != 0); });
  default:
    break;
  }
  fail(kernel, std::string("unsupported element type ") + dtypeName(lhs.dtype) +
                   " (expected f32, i64 or bool)");
}

template <typename Op>
void logical(const KernelCall &call, const char *kernel, Op op) {
  checkBinary(call, kernel);
  expectDType(call.operands[0], DType::Bool, kernel, "lhs");
  expectDType(call.results[0], DType::Bool, kernel, "result");
  broadcastBinary<uint8_t, uint8_t>(kernel, call.operands[0], call.operands[1],
                                    call.results[0], op);
}

/// Throws when an i64 divisor holds a zero (the division would trap).
void checkNoZeroDivisor(const ConstTensor &rhs, const char *kernel) {
  if (rhs.dtype != DType::I64)
    return;
  const int64_t *b = rhs.as<int64_t>();
  for (int64_t i = 0, n = rhs.numel(); i < n; ++i)
    if (b[i] == 0)
      fail(kernel, "integer division by zero (divisor element " +
                       std::to_string(i) + ")");
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
  if (rhs.dtype == DType::I64) {
    const int64_t *b = rhs.as<int64_t>();
    for (int64_t i = 0, n = rhs.numel(); i < n; ++i)
      if (b[i] < 0)
        fail("pow", "negative integer exponent " + std::to_string(b[i]) +
                        " (element " + std::to_string(i) +
                        "); integers to negative powers are not supported");
  }
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
