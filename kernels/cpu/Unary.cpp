// Unary elementwise kernels: float math (f32, bf16, f16; computed in f32,
// rounded once), neg/abs/sign/relu (floats and i32/i64), logical not (bool)
// and the is_nan/is_inf tests (floats to bool).
#include "Activation.h"
#include "Element.h"
#include "Kernels.h"
#include "Parallel.h"

#include <cmath>
#include <cstdint>

namespace hybrid::cpu::kernels {
namespace {

/// Rough per-element costs (relative to a load and a store) for the
/// parallel split: libm transcendental calls cost tens of nanoseconds.
constexpr int64_t kCheapOp = 1, kTranscendentalOp = 16;

/// out[i] = op(in[i]) over all elements.
template <typename T, typename R, typename Op>
void mapElements(const ConstTensor &input, const Tensor &result, Op op,
                 int64_t cost = kCheapOp) {
  const T *in = input.as<T>();
  R *out = result.as<R>();
  parallelChunks(input.numel(), cost, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = op(in[i]);
  });
}

void checkUnary(const KernelCall &call, const char *kernel, DType resultType) {
  expectArity(call, kernel, 1, 1);
  expectShape(call.results[0], call.operands[0].shape, kernel, "result");
  expectDType(call.results[0], resultType, kernel, "result");
}

/// A float-only op: S -> S for S in f32, bf16, f16, computed in f32.
template <typename Op>
void floatUnary(const KernelCall &call, const char *kernel, Op op,
                int64_t cost = kTranscendentalOp) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  checkUnary(call, kernel, input.dtype);
  visitFloat(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    mapElements<S, S>(
        input, call.results[0],
        [op](S x) { return fromFloat<S>(op(toFloat(x))); }, cost);
  });
}

/// An op on floats or integers with the same result type; `op` takes f32
/// for the float dtypes and the integer type itself for i32/i64.
template <typename Op>
void numericUnary(const KernelCall &call, const char *kernel, Op op) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  checkUnary(call, kernel, input.dtype);
  visitNumeric(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    if constexpr (kIsFloatStorage<S>)
      mapElements<S, S>(input, call.results[0],
                        [op](S x) { return fromFloat<S>(op(toFloat(x))); });
    else
      mapElements<S, S>(input, call.results[0], op);
  });
}

/// A float -> bool test.
template <typename Op>
void floatTest(const KernelCall &call, const char *kernel, Op op) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  checkUnary(call, kernel, DType::Bool);
  visitFloat(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    mapElements<S, uint8_t>(input, call.results[0],
                            [op](S x) -> uint8_t { return op(toFloat(x)); });
  });
}

template <typename T> using Unsigned = std::make_unsigned_t<T>;

struct NegOp {
  float operator()(float x) const { return -x; }
  template <typename T> T operator()(T x) const {
    return static_cast<T>(Unsigned<T>(0) - Unsigned<T>(x)); // MIN wraps
  }
};
struct AbsOp {
  float operator()(float x) const { return std::fabs(x); }
  template <typename T> T operator()(T x) const {
    return x < 0 ? static_cast<T>(Unsigned<T>(0) - Unsigned<T>(x)) : x;
  }
};
struct SignOp {
  // NaN stays NaN, as in numpy.sign (the ONNX reference).
  float operator()(float x) const {
    return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x;
  }
  template <typename T> T operator()(T x) const {
    return static_cast<T>((x > 0) - (x < 0));
  }
};
struct ReluOp {
  float operator()(float x) const { return x < 0 ? 0.0f : x; }
  template <typename T> T operator()(T x) const { return x < 0 ? 0 : x; }
};

} // namespace

void neg(const KernelCall &call) { numericUnary(call, "neg", NegOp{}); }
void abs(const KernelCall &call) { numericUnary(call, "abs", AbsOp{}); }
void sign(const KernelCall &call) { numericUnary(call, "sign", SignOp{}); }
void relu(const KernelCall &call) { numericUnary(call, "relu", ReluOp{}); }

void exp(const KernelCall &call) {
  floatUnary(call, "exp", [](float x) { return std::exp(x); });
}
void log(const KernelCall &call) {
  floatUnary(call, "log", [](float x) { return std::log(x); });
}
void sqrt(const KernelCall &call) {
  floatUnary(
      call, "sqrt", [](float x) { return std::sqrt(x); }, kCheapOp);
}
void rsqrt(const KernelCall &call) {
  floatUnary(
      call, "rsqrt", [](float x) { return 1.0f / std::sqrt(x); }, kCheapOp);
}
void reciprocal(const KernelCall &call) {
  floatUnary(
      call, "reciprocal", [](float x) { return 1.0f / x; }, kCheapOp);
}
void tanh(const KernelCall &call) {
  floatUnary(call, "tanh", [](float x) { return std::tanh(x); });
}
void sigmoid(const KernelCall &call) { floatUnary(call, "sigmoid", sigmoidOf); }
void silu(const KernelCall &call) { floatUnary(call, "silu", siluOf); }
void sin(const KernelCall &call) {
  floatUnary(call, "sin", [](float x) { return std::sin(x); });
}
void cos(const KernelCall &call) {
  floatUnary(call, "cos", [](float x) { return std::cos(x); });
}
void erf(const KernelCall &call) {
  floatUnary(call, "erf", [](float x) { return std::erf(x); });
}
void floor(const KernelCall &call) {
  floatUnary(
      call, "floor", [](float x) { return std::floor(x); }, kCheapOp);
}
void ceil(const KernelCall &call) {
  floatUnary(
      call, "ceil", [](float x) { return std::ceil(x); }, kCheapOp);
}

void geluErf(const KernelCall &call) { floatUnary(call, "gelu", geluErfOf); }
void geluTanh(const KernelCall &call) {
  floatUnary(call, "gelu_tanh", geluTanhOf);
}

void logicalNot(const KernelCall &call) {
  expectArity(call, "not", 1, 1);
  expectDType(call.operands[0], DType::Bool, "not", "input");
  checkUnary(call, "not", DType::Bool);
  mapElements<uint8_t, uint8_t>(call.operands[0], call.results[0],
                                [](uint8_t x) -> uint8_t { return !x; });
}

void isNan(const KernelCall &call) {
  floatTest(call, "is_nan", [](float x) { return x != x; });
}

void isInf(const KernelCall &call) {
  floatTest(call, "is_inf", [](float x) { return std::isinf(x); });
}

} // namespace hybrid::cpu::kernels
