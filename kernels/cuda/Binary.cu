// Binary elementwise kernels with NumPy broadcasting: arithmetic on floats
// (f32, bf16, f16; computed in f32, rounded once) and integers (i32, i64;
// wrapping), comparisons on every dtype (to bool), logic on bool. Integer
// division by zero cannot be reported from the device without a host sync:
// it gives 0 (the CPU kernel throws); so does a negative integer exponent
// except for bases 1 and -1 (the truncated exact value).
#include "Elementwise.cuh"
#include "Kernels.h"

#include <type_traits>

namespace hybrid::cuda::kernels {
namespace {

template <typename T> using Unsigned = std::make_unsigned_t<T>;

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
  template <typename T> __device__ T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) + Unsigned<T>(b));
  }
};
struct SubOp {
  __device__ float operator()(float a, float b) const { return a - b; }
  template <typename T> __device__ T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) - Unsigned<T>(b));
  }
};
struct MulOp {
  __device__ float operator()(float a, float b) const { return a * b; }
  template <typename T> __device__ T operator()(T a, T b) const {
    return static_cast<T>(Unsigned<T>(a) * Unsigned<T>(b));
  }
};
struct DivOp {
  __device__ float operator()(float a, float b) const { return a / b; }
  template <typename T> __device__ T operator()(T a, T b) const {
    if (b == 0)
      return 0;
    return b == -1 ? static_cast<T>(Unsigned<T>(0) - Unsigned<T>(a)) : a / b;
  }
};
struct PowOp {
  __device__ float operator()(float a, float b) const { return powf(a, b); }
  template <typename T> __device__ T operator()(T a, T b) const {
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
struct MaxOp {
  __device__ float operator()(float a, float b) const {
    return (a > b || a != a) ? a : b;
  }
  template <typename T> __device__ T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};
struct MinOp {
  __device__ float operator()(float a, float b) const {
    return (a < b || a != a) ? a : b;
  }
  template <typename T> __device__ T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};
// C fmod: the result takes the dividend's sign.
struct FmodOp {
  __device__ float operator()(float a, float b) const { return fmodf(a, b); }
  template <typename T> __device__ T operator()(T a, T b) const {
    return b == 0 || b == -1 ? 0 : a % b;
  }
};
// Python %: the result takes the divisor's sign.
struct FloorModOp {
  __device__ float operator()(float a, float b) const {
    float r = fmodf(a, b);
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
  template <typename T> __device__ T operator()(T a, T b) const {
    if (b == 0 || b == -1)
      return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0)))
      r += b;
    return r;
  }
};

struct EqualOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
struct LessOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualOp {
  template <typename T> __device__ uint8_t operator()(T a, T b) const {
    return a >= b;
  }
};

// Logic reads any non-zero byte as true.
struct AndOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return a && b; }
};
struct OrOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return a || b; }
};
struct XorOp {
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const { return !a != !b; }
};

/// Loads both operands as their compute type, applies Op, stores as R.
template <typename S, typename R, typename Op> struct Elementwise {
  Op op;
  __device__ R operator()(S a, S b) const {
    return store<R>(op(load(a), load(b)));
  }
};
/// Comparisons of bool operands compare truth values.
template <typename Op> struct BoolCompare {
  Op op;
  __device__ uint8_t operator()(uint8_t a, uint8_t b) const {
    return op(static_cast<uint8_t>(a != 0), static_cast<uint8_t>(b != 0));
  }
};

/// Checks counts, equal operand dtypes and the broadcast result shape;
/// returns the plan.
StridedPlan<2> checkBinary(const CudaCall &call, const char *kernel) {
  expectArity(call, kernel, 2, 1);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  expectSameDType(lhs, rhs, kernel, "lhs", "rhs");
  const Shape out = broadcastShapes({&lhs.shape, &rhs.shape}, kernel);
  expectShape(call.results[0], out, kernel, "result");
  return broadcastPlan<2>(out, {&lhs.shape, &rhs.shape}, kernel);
}

template <typename Op>
void arithmetic(const CudaCall &call, const char *kernel) {
  const StridedPlan<2> plan = checkBinary(call, kernel);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(result, lhs.dtype, kernel, "result");
  visitNumeric(lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    launchMap(plan, static_cast<S *>(result.data),
              static_cast<const S *>(lhs.data),
              static_cast<const S *>(rhs.data), Elementwise<S, S, Op>{},
              streamOf(call), kernel);
  });
}

template <typename Op>
void comparison(const CudaCall &call, const char *kernel) {
  const StridedPlan<2> plan = checkBinary(call, kernel);
  const ConstTensor &lhs = call.operands[0], &rhs = call.operands[1];
  const Tensor &result = call.results[0];
  expectDType(result, DType::Bool, kernel, "result");
  auto *out = static_cast<uint8_t *>(result.data);
  if (lhs.dtype == DType::Bool)
    return launchMap(plan, out, static_cast<const uint8_t *>(lhs.data),
                     static_cast<const uint8_t *>(rhs.data), BoolCompare<Op>{},
                     streamOf(call), kernel);
  visitNumeric(lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    launchMap(plan, out, static_cast<const S *>(lhs.data),
              static_cast<const S *>(rhs.data), Elementwise<S, uint8_t, Op>{},
              streamOf(call), kernel);
  });
}

template <typename Op> void logical(const CudaCall &call, const char *kernel) {
  const StridedPlan<2> plan = checkBinary(call, kernel);
  expectDType(call.operands[0], DType::Bool, kernel, "lhs");
  expectDType(call.results[0], DType::Bool, kernel, "result");
  launchMap(plan, static_cast<uint8_t *>(call.results[0].data),
            static_cast<const uint8_t *>(call.operands[0].data),
            static_cast<const uint8_t *>(call.operands[1].data), Op{},
            streamOf(call), kernel);
}

} // namespace

void add(const CudaCall &call) { arithmetic<AddOp>(call, "add"); }
void sub(const CudaCall &call) { arithmetic<SubOp>(call, "sub"); }
void mul(const CudaCall &call) { arithmetic<MulOp>(call, "mul"); }
void div(const CudaCall &call) { arithmetic<DivOp>(call, "div"); }
void pow(const CudaCall &call) { arithmetic<PowOp>(call, "pow"); }
void max(const CudaCall &call) { arithmetic<MaxOp>(call, "max"); }
void min(const CudaCall &call) { arithmetic<MinOp>(call, "min"); }
void mod(const CudaCall &call) { arithmetic<FloorModOp>(call, "mod"); }
void fmod(const CudaCall &call) { arithmetic<FmodOp>(call, "fmod"); }

void equal(const CudaCall &call) { comparison<EqualOp>(call, "equal"); }
void less(const CudaCall &call) { comparison<LessOp>(call, "less"); }
void lessEqual(const CudaCall &call) {
  comparison<LessEqualOp>(call, "less_equal");
}
void greater(const CudaCall &call) { comparison<GreaterOp>(call, "greater"); }
void greaterEqual(const CudaCall &call) {
  comparison<GreaterEqualOp>(call, "greater_equal");
}

void logicalAnd(const CudaCall &call) { logical<AndOp>(call, "and"); }
void logicalOr(const CudaCall &call) { logical<OrOp>(call, "or"); }
void logicalXor(const CudaCall &call) { logical<XorOp>(call, "xor"); }

} // namespace hybrid::cuda::kernels
