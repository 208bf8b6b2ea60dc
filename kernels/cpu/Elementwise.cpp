// Binary elementwise kernels with NumPy broadcasting: each kind's math as
// kernels/common/Binary.h defines it, on floats (f32, bf16, f16; computed in
// f32, rounded once) and integers (i32, i64; wrapping), comparisons on every
// dtype (to bool) and logic on bool. Integer division by zero and negative
// integer exponents are errors, checked before the loop.
#include "Broadcast.h"
#include "Element.h"
#include "Kernels.h"
#include "common/Binary.h"

#include <cstdint>

namespace hybrid::cpu::kernels {
namespace {

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

/// The call's operands, checked as every kind checks them.
BinaryArgs bindBinary(const KernelCall &call, const char *kernel) {
  const BinaryArgs a = BinaryArgs::bind(call, kernel);
  describeBinary(a, kernel);
  return a;
}

template <typename Op>
void arithmetic(const BinaryArgs &a, const char *kernel, Op op) {
  expectBinaryTypes(a, BinaryFamily::Arithmetic, kernel);
  visitNumeric(a.lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    broadcastBinary<S, S>(kernel, a.lhs, a.rhs, a.out, op);
  });
}
template <typename Op>
void arithmetic(const KernelCall &call, const char *kernel, Op op) {
  arithmetic(bindBinary(call, kernel), kernel, op);
}

template <typename Op>
void comparison(const KernelCall &call, const char *kernel, Op op) {
  const BinaryArgs a = bindBinary(call, kernel);
  expectBinaryTypes(a, BinaryFamily::Comparison, kernel);
  if (a.lhs.dtype == DType::Bool)
    return broadcastBinary<uint8_t, uint8_t>(kernel, a.lhs, a.rhs, a.out,
                                             binary::BoolCompare<Op>{op});
  visitNumeric(a.lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    broadcastBinary<S, uint8_t>(kernel, a.lhs, a.rhs, a.out, op);
  });
}

template <typename Op>
void logical(const KernelCall &call, const char *kernel, Op op) {
  const BinaryArgs a = bindBinary(call, kernel);
  expectBinaryTypes(a, BinaryFamily::Logic, kernel);
  broadcastBinary<uint8_t, uint8_t>(kernel, a.lhs, a.rhs, a.out, op);
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

void add(const KernelCall &call) { arithmetic(call, "add", binary::Add{}); }
void sub(const KernelCall &call) { arithmetic(call, "sub", binary::Sub{}); }
void mul(const KernelCall &call) { arithmetic(call, "mul", binary::Mul{}); }
void max(const KernelCall &call) { arithmetic(call, "max", binary::Max{}); }
void min(const KernelCall &call) { arithmetic(call, "min", binary::Min{}); }

void div(const KernelCall &call) {
  const BinaryArgs a = bindBinary(call, "div");
  checkNoZeroDivisor(a.rhs, "div");
  arithmetic(a, "div", binary::Div{});
}

void mod(const KernelCall &call) {
  const BinaryArgs a = bindBinary(call, "mod");
  checkNoZeroDivisor(a.rhs, "mod");
  arithmetic(a, "mod", binary::FloorMod{});
}

void fmod(const KernelCall &call) {
  const BinaryArgs a = bindBinary(call, "fmod");
  checkNoZeroDivisor(a.rhs, "fmod");
  arithmetic(a, "fmod", binary::Fmod{});
}

void pow(const KernelCall &call) {
  const BinaryArgs a = bindBinary(call, "pow");
  const ConstTensor &rhs = a.rhs;
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
  arithmetic(a, "pow", binary::Pow{});
}

void equal(const KernelCall &call) {
  comparison(call, "equal", binary::Equal{});
}
void less(const KernelCall &call) { comparison(call, "less", binary::Less{}); }
void lessEqual(const KernelCall &call) {
  comparison(call, "less_equal", binary::LessEqual{});
}
void greater(const KernelCall &call) {
  comparison(call, "greater", binary::Greater{});
}
void greaterEqual(const KernelCall &call) {
  comparison(call, "greater_equal", binary::GreaterEqual{});
}

void logicalAnd(const KernelCall &call) { logical(call, "and", binary::And{}); }
void logicalOr(const KernelCall &call) { logical(call, "or", binary::Or{}); }
void logicalXor(const KernelCall &call) { logical(call, "xor", binary::Xor{}); }

} // namespace hybrid::cpu::kernels
