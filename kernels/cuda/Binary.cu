// Binary elementwise kernels with NumPy broadcasting: each kind's math as
// kernels/common/Binary.h defines it (the CPU kernels' math), on floats
// (f32, bf16, f16; computed in f32, rounded once) and integers (i32, i64;
// wrapping), comparisons on every dtype (to bool), logic on bool. Integer
// division by zero cannot be reported from the device without a host sync:
// it gives 0 (the CPU kernel throws); so does a negative integer exponent
// except for bases 1 and -1 (the truncated exact value).
#include "Elementwise.cuh"
#include "Kernels.h"
#include "common/Binary.h"

namespace hybrid::cuda::kernels {
namespace {

/// Loads both operands as their compute type, applies Op, stores as R.
template <typename S, typename R, typename Op> struct Elementwise {
  Op op;
  __device__ R operator()(S a, S b) const {
    return store<R>(op(load(a), load(b)));
  }
};

/// The call checked as every kind checks it (then the kind's dtypes,
/// expectBinaryTypes) and its broadcast plan.
struct BinaryLaunch {
  BinaryArgs a;
  StridedPlan<2> plan;

  BinaryLaunch(const CudaCall &call, const char *kernel, BinaryFamily family)
      : a(BinaryArgs::bind(call, kernel)) {
    const BinaryProblem p = describeBinary(a, kernel);
    plan = broadcastPlan<2>(p.shape, {&a.lhs.shape, &a.rhs.shape}, kernel);
    expectBinaryTypes(a, family, kernel);
  }
};

template <typename Op>
void arithmetic(const CudaCall &call, const char *kernel) {
  const BinaryLaunch b(call, kernel, BinaryFamily::Arithmetic);
  visitNumeric(b.a.lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    launchMap(b.plan, static_cast<S *>(b.a.out.data),
              static_cast<const S *>(b.a.lhs.data),
              static_cast<const S *>(b.a.rhs.data), Elementwise<S, S, Op>{},
              streamOf(call), kernel);
  });
}

template <typename Op>
void comparison(const CudaCall &call, const char *kernel) {
  const BinaryLaunch b(call, kernel, BinaryFamily::Comparison);
  auto *out = static_cast<uint8_t *>(b.a.out.data);
  if (b.a.lhs.dtype == DType::Bool)
    return launchMap(b.plan, out, static_cast<const uint8_t *>(b.a.lhs.data),
                     static_cast<const uint8_t *>(b.a.rhs.data),
                     binary::BoolCompare<Op>{}, streamOf(call), kernel);
  visitNumeric(b.a.lhs.dtype, kernel, "operands", [&](auto zero) {
    using S = decltype(zero);
    launchMap(b.plan, out, static_cast<const S *>(b.a.lhs.data),
              static_cast<const S *>(b.a.rhs.data),
              Elementwise<S, uint8_t, Op>{}, streamOf(call), kernel);
  });
}

template <typename Op> void logical(const CudaCall &call, const char *kernel) {
  const BinaryLaunch b(call, kernel, BinaryFamily::Logic);
  launchMap(b.plan, static_cast<uint8_t *>(b.a.out.data),
            static_cast<const uint8_t *>(b.a.lhs.data),
            static_cast<const uint8_t *>(b.a.rhs.data), Op{}, streamOf(call),
            kernel);
}

} // namespace

void add(const CudaCall &call) { arithmetic<binary::Add>(call, "add"); }
void sub(const CudaCall &call) { arithmetic<binary::Sub>(call, "sub"); }
void mul(const CudaCall &call) { arithmetic<binary::Mul>(call, "mul"); }
void div(const CudaCall &call) { arithmetic<binary::Div>(call, "div"); }
void pow(const CudaCall &call) { arithmetic<binary::Pow>(call, "pow"); }
void max(const CudaCall &call) { arithmetic<binary::Max>(call, "max"); }
void min(const CudaCall &call) { arithmetic<binary::Min>(call, "min"); }
void mod(const CudaCall &call) { arithmetic<binary::FloorMod>(call, "mod"); }
void fmod(const CudaCall &call) { arithmetic<binary::Fmod>(call, "fmod"); }

void equal(const CudaCall &call) { comparison<binary::Equal>(call, "equal"); }
void less(const CudaCall &call) { comparison<binary::Less>(call, "less"); }
void lessEqual(const CudaCall &call) {
  comparison<binary::LessEqual>(call, "less_equal");
}
void greater(const CudaCall &call) {
  comparison<binary::Greater>(call, "greater");
}
void greaterEqual(const CudaCall &call) {
  comparison<binary::GreaterEqual>(call, "greater_equal");
}

void logicalAnd(const CudaCall &call) { logical<binary::And>(call, "and"); }
void logicalOr(const CudaCall &call) { logical<binary::Or>(call, "or"); }
void logicalXor(const CudaCall &call) { logical<binary::Xor>(call, "xor"); }

} // namespace hybrid::cuda::kernels
