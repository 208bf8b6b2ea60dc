// Unary elementwise kernels: float math (f32), neg/abs/sign/relu (f32 and
// i64), logical not (bool) and the is_nan/is_inf tests (f32 to bool).
#include "KernelCheck.h"
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

/// A float-only op: f32 -> f32.
template <typename Op>
void floatUnary(const KernelCall &call, const char *kernel, Op op,
                int64_t cost = kTranscendentalOp) {
  expectArity(call, kernel, 1, 1);
  expectDType(call.operands[0], DType::F32, kernel, "input");
  checkUnary(call, kernel, DType::F32);
  mapElements<float, float>(call.operands[0], call.results[0], op, cost);
}

/// An op on f32 or i64 with the same result type; `op` overloads both.
template <typename Op>
void numericUnary(const KernelCall &call, const char *kernel, Op op) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  checkUnary(call, kernel, input.dtype);
  if (input.dtype == DType::F32)
    return mapElements<float, float>(input, call.results[0], op);
  if (input.dtype == DType::I64)
    return mapElements<int64_t, int64_t>(input, call.results[0], op);
  fail(kernel, std::string("unsupported element type ") +
                   dtypeName(input.dtype) + " (expected f32 or i64)");
}

struct NegOp {
  float operator()(float x) const { return -x; }
  int64_t operator()(int64_t x) const {
    return static_cast<int64_t>(0 - static_cast<uint64_t>(x));
  }
};
struct AbsOp {
  float operator()(float x) const { return std::fabs(x); }
  int64_t operator()(int64_t x) const {
    return x < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x)) : x;
  }
};
struct SignOp {
  // NaN stays NaN, as in numpy.sign (the ONNX reference).
  float operator()(float x) const {
    return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x;
  }
  int64_t operator()(int64_t x) const { return (x > 0) - (x < 0); }
};
struct ReluOp {
  float operator()(float x) const { return x < 0 ? 0.0f : x; }
  int64_t operator()(int64_t x) const { return x < 0 ? 0 : x; }
};

// Stable for large |x|: exp never overflows.
inline float sigmoidOf(float x) {
  if (x >= 0)
    return 1.0f / (1.0f + std::exp(-x));
  float e = std::exp(x);
  return e / (1.0f + e);
}

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
void silu(const KernelCall &call) {
  floatUnary(call, "silu", [](float x) { return x * sigmoidOf(x); });
}
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

void geluErf(const KernelCall &call) {
  floatUnary(call, "gelu", [](float x) {
    const float kInvSqrt2 = 0.7071067811865476f;
    return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
  });
}

void geluTanh(const KernelCall &call) {
  floatUnary(call, "gelu_tanh", [](float x) {
    const float kAlpha = 0.7978845608028654f; // sqrt(2 / pi)
    return 0.5f * x * (1.0f + std::tanh(kAlpha * (x + 0.044715f * x * x * x)));
  });
}

void logicalNot(const KernelCall &call) {
  expectArity(call, "not", 1, 1);
  expectDType(call.operands[0], DType::Bool, "not", "input");
  checkUnary(call, "not", DType::Bool);
  mapElements<uint8_t, uint8_t>(call.operands[0], call.results[0],
                                [](uint8_t x) -> uint8_t { return !x; });
}

void isNan(const KernelCall &call) {
  expectArity(call, "is_nan", 1, 1);
  expectDType(call.operands[0], DType::F32, "is_nan", "input");
  checkUnary(call, "is_nan", DType::Bool);
  mapElements<float, uint8_t>(call.operands[0], call.results[0],
                              [](float x) -> uint8_t { return x != x; });
}

void isInf(const KernelCall &call) {
  expectArity(call, "is_inf", 1, 1);
  expectDType(call.operands[0], DType::F32, "is_inf", "input");
  checkUnary(call, "is_inf", DType::Bool);
  mapElements<float, uint8_t>(call.operands[0], call.results[0],
                              [](float x) -> uint8_t { return std::isinf(x); });
}

} // namespace hybrid::cpu::kernels
