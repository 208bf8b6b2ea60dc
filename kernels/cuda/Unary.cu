// Unary elementwise kernels: each kind's math as kernels/common/Unary.h
// defines it (the CPU kernels' math, with the accurate libdevice
// functions): float math (f32, bf16, f16; computed in f32, rounded once),
// neg/abs/sign/relu (floats and i32/i64), logical not (bool) and the
// is_nan/is_inf tests (floats to bool). Inputs and results are contiguous
// and of equal shape.
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/Unary.h"

namespace hybrid::cuda::kernels {
namespace {

/// S -> S through the op's compute type (f32 for floats).
template <typename S, typename Op> struct Map {
  Op op;
  __device__ S operator()(S x) const { return store<S>(op(load(x))); }
};
template <typename S, typename Test> struct FloatTest {
  Test test;
  __device__ uint8_t operator()(S x) const { return test(toFloat(x)); }
};

/// The call checked for `family`, and its plan (one contiguous run).
struct UnaryLaunch {
  UnaryArgs a;
  StridedPlan<1> plan;

  UnaryLaunch(const CudaCall &call, const char *kernel, UnaryFamily family)
      : a(UnaryArgs::bind(call, kernel)) {
    describeUnary(a, family, kernel);
    plan = broadcastPlan<1>(a.input.shape, {&a.input.shape}, kernel);
  }
};

template <typename Op>
void floatUnary(const CudaCall &call, const char *kernel) {
  const UnaryLaunch u(call, kernel, UnaryFamily::Map);
  visitFloat(u.a.input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(u.plan, static_cast<S *>(u.a.out.data),
              static_cast<const S *>(u.a.input.data), Map<S, Op>{},
              streamOf(call), kernel);
  });
}

template <typename Op>
void numericUnary(const CudaCall &call, const char *kernel) {
  const UnaryLaunch u(call, kernel, UnaryFamily::Map);
  visitNumeric(u.a.input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(u.plan, static_cast<S *>(u.a.out.data),
              static_cast<const S *>(u.a.input.data), Map<S, Op>{},
              streamOf(call), kernel);
  });
}

template <typename Test>
void floatTest(const CudaCall &call, const char *kernel) {
  const UnaryLaunch u(call, kernel, UnaryFamily::Test);
  visitFloat(u.a.input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(u.plan, static_cast<uint8_t *>(u.a.out.data),
              static_cast<const S *>(u.a.input.data), FloatTest<S, Test>{},
              streamOf(call), kernel);
  });
}

} // namespace

void neg(const CudaCall &call) { numericUnary<unary::Neg>(call, "neg"); }
void abs(const CudaCall &call) { numericUnary<unary::Abs>(call, "abs"); }
void sign(const CudaCall &call) { numericUnary<unary::Sign>(call, "sign"); }
void relu(const CudaCall &call) { numericUnary<unary::Relu>(call, "relu"); }

void exp(const CudaCall &call) { floatUnary<unary::Exp>(call, "exp"); }
void log(const CudaCall &call) { floatUnary<unary::Log>(call, "log"); }
void sqrt(const CudaCall &call) { floatUnary<unary::Sqrt>(call, "sqrt"); }
void rsqrt(const CudaCall &call) { floatUnary<unary::Rsqrt>(call, "rsqrt"); }
void reciprocal(const CudaCall &call) {
  floatUnary<unary::Reciprocal>(call, "reciprocal");
}
void tanh(const CudaCall &call) { floatUnary<unary::Tanh>(call, "tanh"); }
void sigmoid(const CudaCall &call) {
  floatUnary<unary::Sigmoid>(call, "sigmoid");
}
void silu(const CudaCall &call) { floatUnary<unary::Silu>(call, "silu"); }
void geluErf(const CudaCall &call) { floatUnary<unary::GeluErf>(call, "gelu"); }
void geluTanh(const CudaCall &call) {
  floatUnary<unary::GeluTanh>(call, "gelu_tanh");
}
void sin(const CudaCall &call) { floatUnary<unary::Sin>(call, "sin"); }
void cos(const CudaCall &call) { floatUnary<unary::Cos>(call, "cos"); }
void erf(const CudaCall &call) { floatUnary<unary::Erf>(call, "erf"); }
void floor(const CudaCall &call) { floatUnary<unary::Floor>(call, "floor"); }
void ceil(const CudaCall &call) { floatUnary<unary::Ceil>(call, "ceil"); }

void logicalNot(const CudaCall &call) {
  const UnaryLaunch u(call, "not", UnaryFamily::Logic);
  launchMap(u.plan, static_cast<uint8_t *>(u.a.out.data),
            static_cast<const uint8_t *>(u.a.input.data), unary::Not{},
            streamOf(call), "not");
}

void isNan(const CudaCall &call) { floatTest<unary::IsNan>(call, "is_nan"); }
void isInf(const CudaCall &call) { floatTest<unary::IsInf>(call, "is_inf"); }

} // namespace hybrid::cuda::kernels
