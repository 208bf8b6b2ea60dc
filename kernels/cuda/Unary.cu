// Unary elementwise kernels: float math (f32, bf16, f16; computed in f32 with
// the accurate libdevice functions, rounded once), neg/abs/sign/relu (floats
// and i32/i64), logical not (bool) and the is_nan/is_inf tests (floats to
// bool). Inputs and results are contiguous and of equal shape.
#include "Activation.cuh"
#include "Elementwise.cuh"
#include "Kernels.h"

#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

template <typename T> using Unsigned = std::make_unsigned_t<T>;

struct NegOp {
  __device__ float operator()(float x) const { return -x; }
  template <typename T> __device__ T operator()(T x) const {
    return static_cast<T>(Unsigned<T>(0) - Unsigned<T>(x)); // MIN wraps
  }
};
struct AbsOp {
  __device__ float operator()(float x) const { return fabsf(x); }
  template <typename T> __device__ T operator()(T x) const {
    return x < 0 ? static_cast<T>(Unsigned<T>(0) - Unsigned<T>(x)) : x;
  }
};
struct SignOp {
  // NaN stays NaN, as in numpy.sign.
  __device__ float operator()(float x) const {
    return x > 0 ? 1.0f : x < 0 ? -1.0f : x == 0 ? 0.0f : x;
  }
  template <typename T> __device__ T operator()(T x) const {
    return static_cast<T>((x > 0) - (x < 0));
  }
};
struct ReluOp {
  __device__ float operator()(float x) const { return x < 0 ? 0.0f : x; }
  template <typename T> __device__ T operator()(T x) const {
    return x < 0 ? 0 : x;
  }
};

struct ExpOp {
  __device__ float operator()(float x) const { return expf(x); }
};
struct LogOp {
  __device__ float operator()(float x) const { return logf(x); }
};
struct SqrtOp {
  __device__ float operator()(float x) const { return sqrtf(x); }
};
// 1 / sqrt rounds like the CPU; rsqrtf is an approximation.
struct RsqrtOp {
  __device__ float operator()(float x) const { return 1.0f / sqrtf(x); }
};
struct ReciprocalOp {
  __device__ float operator()(float x) const { return 1.0f / x; }
};
struct TanhOp {
  __device__ float operator()(float x) const { return tanhf(x); }
};
struct SigmoidOp {
  __device__ float operator()(float x) const { return sigmoidOf(x); }
};
struct SiluOp {
  __device__ float operator()(float x) const { return siluOf(x); }
};
struct GeluErfOp {
  __device__ float operator()(float x) const { return geluErfOf(x); }
};
struct GeluTanhOp {
  __device__ float operator()(float x) const { return geluTanhOf(x); }
};
struct SinOp {
  __device__ float operator()(float x) const { return sinf(x); }
};
struct CosOp {
  __device__ float operator()(float x) const { return cosf(x); }
};
struct ErfOp {
  __device__ float operator()(float x) const { return erff(x); }
};
struct FloorOp {
  __device__ float operator()(float x) const { return floorf(x); }
};
struct CeilOp {
  __device__ float operator()(float x) const { return ceilf(x); }
};

/// S -> S through the op's compute type (f32 for floats).
template <typename S, typename Op> struct Map {
  Op op;
  __device__ S operator()(S x) const { return store<S>(op(load(x))); }
};
template <typename S, typename Test> struct FloatTest {
  Test test;
  __device__ uint8_t operator()(S x) const { return test(toFloat(x)); }
};
struct IsNanTest {
  __device__ uint8_t operator()(float x) const { return x != x; }
};
struct IsInfTest {
  __device__ uint8_t operator()(float x) const { return isinf(x) ? 1 : 0; }
};
struct NotOp {
  __device__ uint8_t operator()(uint8_t x) const { return !x; }
};

StridedPlan<1> checkUnary(const CudaCall &call, const char *kernel,
                          DType resultType) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  expectShape(call.results[0], input.shape, kernel, "result");
  expectDType(call.results[0], resultType, kernel, "result");
  return broadcastPlan<1>(input.shape, {&input.shape}, kernel);
}

template <typename Op>
void floatUnary(const CudaCall &call, const char *kernel) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const StridedPlan<1> plan = checkUnary(call, kernel, input.dtype);
  visitFloat(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(plan, static_cast<S *>(call.results[0].data),
              static_cast<const S *>(input.data), Map<S, Op>{}, streamOf(call),
              kernel);
  });
}

template <typename Op>
void numericUnary(const CudaCall &call, const char *kernel) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const StridedPlan<1> plan = checkUnary(call, kernel, input.dtype);
  visitNumeric(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(plan, static_cast<S *>(call.results[0].data),
              static_cast<const S *>(input.data), Map<S, Op>{}, streamOf(call),
              kernel);
  });
}

template <typename Test>
void floatTest(const CudaCall &call, const char *kernel) {
  expectArity(call, kernel, 1, 1);
  const ConstTensor &input = call.operands[0];
  const StridedPlan<1> plan = checkUnary(call, kernel, DType::Bool);
  visitFloat(input.dtype, kernel, "input", [&](auto zero) {
    using S = decltype(zero);
    launchMap(plan, static_cast<uint8_t *>(call.results[0].data),
              static_cast<const S *>(input.data), FloatTest<S, Test>{},
              streamOf(call), kernel);
  });
}

} // namespace

void neg(const CudaCall &call) { numericUnary<NegOp>(call, "neg"); }
void abs(const CudaCall &call) { numericUnary<AbsOp>(call, "abs"); }
void sign(const CudaCall &call) { numericUnary<SignOp>(call, "sign"); }
void relu(const CudaCall &call) { numericUnary<ReluOp>(call, "relu"); }

void exp(const CudaCall &call) { floatUnary<ExpOp>(call, "exp"); }
void log(const CudaCall &call) { floatUnary<LogOp>(call, "log"); }
void sqrt(const CudaCall &call) { floatUnary<SqrtOp>(call, "sqrt"); }
void rsqrt(const CudaCall &call) { floatUnary<RsqrtOp>(call, "rsqrt"); }
void reciprocal(const CudaCall &call) {
  floatUnary<ReciprocalOp>(call, "reciprocal");
}
void tanh(const CudaCall &call) { floatUnary<TanhOp>(call, "tanh"); }
void sigmoid(const CudaCall &call) { floatUnary<SigmoidOp>(call, "sigmoid"); }
void silu(const CudaCall &call) { floatUnary<SiluOp>(call, "silu"); }
void geluErf(const CudaCall &call) { floatUnary<GeluErfOp>(call, "gelu"); }
void geluTanh(const CudaCall &call) {
  floatUnary<GeluTanhOp>(call, "gelu_tanh");
}
void sin(const CudaCall &call) { floatUnary<SinOp>(call, "sin"); }
void cos(const CudaCall &call) { floatUnary<CosOp>(call, "cos"); }
void erf(const CudaCall &call) { floatUnary<ErfOp>(call, "erf"); }
void floor(const CudaCall &call) { floatUnary<FloorOp>(call, "floor"); }
void ceil(const CudaCall &call) { floatUnary<CeilOp>(call, "ceil"); }

void logicalNot(const CudaCall &call) {
  expectArity(call, "not", 1, 1);
  expectDType(call.operands[0], DType::Bool, "not", "input");
  const StridedPlan<1> plan = checkUnary(call, "not", DType::Bool);
  launchMap(plan, static_cast<uint8_t *>(call.results[0].data),
            static_cast<const uint8_t *>(call.operands[0].data), NotOp{},
            streamOf(call), "not");
}

void isNan(const CudaCall &call) { floatTest<IsNanTest>(call, "is_nan"); }
void isInf(const CudaCall &call) { floatTest<IsInfTest>(call, "is_inf"); }

} // namespace hybrid::cuda::kernels
