// Unary elementwise kernels: each kind's math as kernels/common/Unary.h
// defines it: float math (f32, bf16, f16; computed in f32, rounded once),
// neg/abs/sign/relu (floats and i32/i64), logical not (bool) and the
// is_nan/is_inf tests (floats to bool).
#include "common/Unary.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cstdint>

namespace hybrid::cpu::kernels {
namespace {

/// Rough per-element costs (relative to a load and a store) for the
/// parallel split: libm transcendental calls cost tens of nanoseconds.
constexpr int64_t kCheapOp = 1, kTranscendentalOp = 16;

/// out[i] = op(in[i]) over all elements.
template <typename T, typename R, typename Op>
void mapElements(const UnaryArgs &a, Op op, int64_t cost = kCheapOp) {
  const T *in = a.input.as<T>();
  R *out = a.out.as<R>();
  parallelChunks(a.input.numel(), cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = op(in[i]);
  });
}

UnaryArgs bindUnary(const KernelCall &call, const char *kernel,
                    UnaryFamily family) {
  const UnaryArgs a = UnaryArgs::bind(call, kernel);
  describeUnary(a, family, kernel);
  return a;
}

/// A float-only op: S -> S for S in f32, bf16, f16, computed in f32.
template <typename Op>
void floatUnary(const KernelCall &call, const char *kernel, Op op,
                int64_t cost = kTranscendentalOp) {
  const UnaryArgs a = bindUnary(call, kernel, UnaryFamily::Map);
  visitFloat(a.input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    mapElements<S, S>(
        a, [op](S x) { return fromFloat<S>(op(toFloat(x))); }, cost);
  });
}

/// An op on floats or integers with the same result type; `op` takes f32
/// for the float dtypes and the integer type itself for i32/i64.
template <typename Op>
void numericUnary(const KernelCall &call, const char *kernel, Op op) {
  const UnaryArgs a = bindUnary(call, kernel, UnaryFamily::Map);
  visitNumeric(a.input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    mapElements<S, S>(a, [op](S x) { return store<S>(op(load(x))); });
  });
}

/// A float -> bool test.
template <typename Op>
void floatTest(const KernelCall &call, const char *kernel, Op op) {
  const UnaryArgs a = bindUnary(call, kernel, UnaryFamily::Test);
  visitFloat(a.input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    mapElements<S, uint8_t>(a, [op](S x) { return op(toFloat(x)); });
  });
}

} // namespace

void neg(const KernelCall &call) { numericUnary(call, "neg", unary::Neg{}); }
void abs(const KernelCall &call) { numericUnary(call, "abs", unary::Abs{}); }
void sign(const KernelCall &call) { numericUnary(call, "sign", unary::Sign{}); }
void relu(const KernelCall &call) { numericUnary(call, "relu", unary::Relu{}); }

void exp(const KernelCall &call) { floatUnary(call, "exp", unary::Exp{}); }
void log(const KernelCall &call) { floatUnary(call, "log", unary::Log{}); }
void sqrt(const KernelCall &call) {
  floatUnary(call, "sqrt", unary::Sqrt{}, kCheapOp);
}
void rsqrt(const KernelCall &call) {
  floatUnary(call, "rsqrt", unary::Rsqrt{}, kCheapOp);
}
void reciprocal(const KernelCall &call) {
  floatUnary(call, "reciprocal", unary::Reciprocal{}, kCheapOp);
}
void tanh(const KernelCall &call) { floatUnary(call, "tanh", unary::Tanh{}); }
void sigmoid(const KernelCall &call) {
  floatUnary(call, "sigmoid", unary::Sigmoid{});
}
void silu(const KernelCall &call) { floatUnary(call, "silu", unary::Silu{}); }
void sin(const KernelCall &call) { floatUnary(call, "sin", unary::Sin{}); }
void cos(const KernelCall &call) { floatUnary(call, "cos", unary::Cos{}); }
void erf(const KernelCall &call) { floatUnary(call, "erf", unary::Erf{}); }
void floor(const KernelCall &call) {
  floatUnary(call, "floor", unary::Floor{}, kCheapOp);
}
void ceil(const KernelCall &call) {
  floatUnary(call, "ceil", unary::Ceil{}, kCheapOp);
}

void geluErf(const KernelCall &call) {
  floatUnary(call, "gelu", unary::GeluErf{});
}
void geluTanh(const KernelCall &call) {
  floatUnary(call, "gelu_tanh", unary::GeluTanh{});
}

void logicalNot(const KernelCall &call) {
  const UnaryArgs a = bindUnary(call, "not", UnaryFamily::Logic);
  mapElements<uint8_t, uint8_t>(a, unary::Not{});
}

void isNan(const KernelCall &call) {
  floatTest(call, "is_nan", unary::IsNan{});
}
void isInf(const KernelCall &call) {
  floatTest(call, "is_inf", unary::IsInf{});
}

} // namespace hybrid::cpu::kernels
