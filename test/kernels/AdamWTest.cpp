// adamw_update: the fused AdamW step against torch.optim.AdamW's formula in
// double, and bit for bit against the elementwise kernels hg-adamw composed
// it from before; in mixed precision (a bf16/f16 gradient, the working
// parameter as a fourth result) bit for bit against the casts that stood
// around it; odd sizes, random non-zero inputs, in and out of place.
#include "KernelTestSupport.h"

#include <cstring>

namespace hybrid::cpu::test {
namespace {

/// torch.optim.AdamW's hyperparameters and step count.
struct Hyper {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0.01;
  int step = 3; ///< t, after this step
};

/// An update's operands (Ops.h's AdamWUpdate order).
struct Update {
  HostTensor param, grad, expAvg, expAvgSq;
  HostTensor beta1, beta2, eps, stepSize, rootBc2, decayFactor;

  std::vector<const HostTensor *> operands() const {
    return {&param, &grad, &expAvg,   &expAvgSq, &beta1,
            &beta2, &eps,  &stepSize, &rootBc2,  &decayFactor};
  }
};

HostTensor scalar(float v) { return f32({1}, {v}); }

/// Random tensors (never zero: a gradient or moment of 0 would hide a
/// missing term) and the scalars as hg-adamw computes them, in f32.
Update randomUpdate(Random &r, int64_t n, const Hyper &h) {
  auto nonZero = [&](float lo, float hi) {
    HostTensor t = r.f32({n}, lo, hi);
    for (int64_t k = 0; k < n; ++k)
      if (std::abs(t.f()[k]) < 1e-3f)
        t.f()[k] = 1e-3f;
    return t;
  };
  Update u;
  u.param = nonZero(-1, 1);
  u.grad = nonZero(-0.1f, 0.1f);
  u.expAvg = nonZero(-0.05f, 0.05f);
  u.expAvgSq = r.f32({n}, 1e-6f, 1e-2f);
  const float lr = static_cast<float>(h.lr), b1 = static_cast<float>(h.beta1),
              b2 = static_cast<float>(h.beta2),
              wd = static_cast<float>(h.weightDecay),
              t = static_cast<float>(h.step);
  u.beta1 = scalar(b1);
  u.beta2 = scalar(b2);
  u.eps = scalar(static_cast<float>(h.eps));
  u.stepSize = scalar(lr / (1.0f - std::pow(b1, t)));
  u.rootBc2 = scalar(std::sqrt(1.0f - std::pow(b2, t)));
  u.decayFactor = scalar(1.0f - lr * wd);
  return u;
}

struct Result {
  HostTensor param, expAvg, expAvgSq;
};

Result fused(const Update &u) {
  const Shape shape = u.param.shape;
  Result out{HostTensor(DType::F32, shape), HostTensor(DType::F32, shape),
             HostTensor(DType::F32, shape)};
  runKernelOnResults(ops::AdamWUpdate{}, u.operands(),
                     {&out.param, &out.expAvg, &out.expAvgSq});
  return out;
}

/// The update as hg-adamw built it before hg.adamw_update, op by op.
Result composed(const Update &u) {
  const Shape shape = u.param.shape;
  auto binary = [&](BinaryKind kind, const HostTensor &a, const HostTensor &b) {
    return run(ops::Binary{kind}, {&a, &b}, DType::F32,
               a.numel() == 1 ? b.shape : a.shape);
  };
  auto sqrt = [&](const HostTensor &a) {
    return run(ops::Unary{UnaryKind::Sqrt}, {&a}, DType::F32, a.shape);
  };
  const HostTensor unit = scalar(1);
  const HostTensor oneMinusB1 = binary(BinaryKind::Sub, unit, u.beta1);
  const HostTensor oneMinusB2 = binary(BinaryKind::Sub, unit, u.beta2);
  Result out;
  out.expAvg =
      binary(BinaryKind::Add, binary(BinaryKind::Mul, u.beta1, u.expAvg),
             binary(BinaryKind::Mul, oneMinusB1, u.grad));
  out.expAvgSq =
      binary(BinaryKind::Add, binary(BinaryKind::Mul, u.beta2, u.expAvgSq),
             binary(BinaryKind::Mul, oneMinusB2,
                    binary(BinaryKind::Mul, u.grad, u.grad)));
  const HostTensor denom =
      binary(BinaryKind::Add,
             binary(BinaryKind::Div, sqrt(out.expAvgSq), u.rootBc2), u.eps);
  const HostTensor decayed = binary(BinaryKind::Mul, u.param, u.decayFactor);
  out.param = binary(BinaryKind::Sub, decayed,
                     binary(BinaryKind::Mul, u.stepSize,
                            binary(BinaryKind::Div, out.expAvg, denom)));
  return out;
}

void expectBitsEqual(const HostTensor &got, const HostTensor &want,
                     const std::string &what) {
  ASSERT_EQ(got.shape, want.shape) << what;
  for (int64_t k = 0; k < got.numel(); ++k)
    ASSERT_EQ(got.f()[k], want.f()[k]) << what << " element " << k;
}

TEST(AdamWUpdate, FollowsTorchsFormulaInDouble) {
  Random r(7);
  for (const Hyper &h : {Hyper{}, Hyper{3e-4, 0.8, 0.95, 1e-6, 0.1, 1},
                         Hyper{1e-2, 0.9, 0.999, 1e-8, 0.0, 1000}})
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(1023), int64_t(40961)}) {
      const Update u = randomUpdate(r, n, h);
      const Result got = fused(u);
      // torch's arithmetic in double on the hyperparameters the kernel
      // got (the executables' inputs are f32).
      const double lr = static_cast<float>(h.lr), b1 = u.beta1.f()[0],
                   b2 = u.beta2.f()[0], eps = u.eps.f()[0],
                   wd = static_cast<float>(h.weightDecay);
      const double bc1 = 1 - std::pow(b1, h.step),
                   bc2 = 1 - std::pow(b2, h.step);
      for (int64_t k = 0; k < n; ++k) {
        const double g = u.grad.f()[k];
        const double p = u.param.f()[k] * (1 - lr * wd);
        const double m = b1 * u.expAvg.f()[k] + (1 - b1) * g;
        const double v = b2 * u.expAvgSq.f()[k] + (1 - b2) * g * g;
        const double step =
            lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + eps);
        const std::string at =
            "n " + std::to_string(n) + " element " + std::to_string(k);
        // Three roundings of terms that may cancel.
        const double terms =
            std::abs(b1 * u.expAvg.f()[k]) + std::abs((1 - b1) * g);
        ASSERT_NEAR(got.expAvg.f()[k], m, 2e-7 * terms) << at;
        ASSERT_NEAR(got.expAvgSq.f()[k], v, 1e-6 * v) << at;
        // A few roundings of p, and of the step, whose bias corrections
        // the executables compute in f32 (1 - beta2^t loses digits).
        ASSERT_NEAR(got.param.f()[k], p - step,
                    4e-7 * std::abs(p) + 1e-4 * std::abs(step))
            << at;
      }
    }
}

TEST(AdamWUpdate, EqualsTheComposedUpdateBitForBit) {
  Random r(11);
  for (int64_t n : {int64_t(1), int64_t(5), int64_t(999), int64_t(65537)}) {
    const Update u = randomUpdate(r, n, Hyper{});
    const Result got = fused(u), want = composed(u);
    const std::string what = "n " + std::to_string(n);
    expectBitsEqual(got.param, want.param, what + " param");
    expectBitsEqual(got.expAvg, want.expAvg, what + " exp_avg");
    expectBitsEqual(got.expAvgSq, want.expAvgSq, what + " exp_avg_sq");
  }
}

TEST(AdamWUpdate, InPlaceEqualsOutOfPlace) {
  Random r(13);
  Update u = randomUpdate(r, 333, Hyper{});
  const Result want = fused(u);
  runKernelOnResults(ops::AdamWUpdate{}, u.operands(),
                     {&u.param, &u.expAvg, &u.expAvgSq});
  expectBitsEqual(u.param, want.param, "param");
  expectBitsEqual(u.expAvg, want.expAvg, "exp_avg");
  expectBitsEqual(u.expAvgSq, want.expAvgSq, "exp_avg_sq");
}

/// The bits of every element (bf16/f16 as their 16 bits, f32 as 32).
void expectSameBits(const HostTensor &got, const HostTensor &want,
                    const std::string &what) {
  ASSERT_EQ(got.dtype, want.dtype) << what;
  ASSERT_EQ(got.shape, want.shape) << what;
  const size_t size = dtypeSize(got.dtype);
  for (int64_t k = 0; k < got.numel(); ++k)
    ASSERT_EQ(std::memcmp(got.b() + k * size, want.b() + k * size, size), 0)
        << what << " element " << k << ": " << got.at(k) << " vs "
        << want.at(k);
}

/// The mixed-precision update as it ran before the op absorbed its casts:
/// cast the gradient to f32, update, cast the new master to `working`
/// (F32: no cast after).
struct MixedResult {
  Result f32;
  HostTensor working;
};

MixedResult castUpdateCast(const Update &u, DType working) {
  Update f32Grad = u;
  f32Grad.grad = run(ops::Cast{}, {&u.grad}, DType::F32, u.grad.shape);
  MixedResult out{fused(f32Grad), {}};
  if (working != DType::F32)
    out.working = run(ops::Cast{}, {&out.f32.param}, working, u.param.shape);
  return out;
}

/// The same update in one adamw_update: the gradient as it is, the working
/// parameter (unless `working` is F32) its fourth result.
MixedResult fusedMixed(const Update &u, DType working) {
  const Shape shape = u.param.shape;
  MixedResult out{{HostTensor(DType::F32, shape), HostTensor(DType::F32, shape),
                   HostTensor(DType::F32, shape)},
                  {}};
  std::vector<HostTensor *> results = {&out.f32.param, &out.f32.expAvg,
                                       &out.f32.expAvgSq};
  if (working != DType::F32) {
    out.working = HostTensor(working, shape);
    results.push_back(&out.working);
  }
  runKernelOnResults(ops::AdamWUpdate{working != DType::F32}, u.operands(),
                     results);
  return out;
}

/// An update whose gradient is of dtype `grad` (random values rounded to
/// it, never zero).
Update randomMixedUpdate(Random &r, int64_t n, DType grad) {
  Update u = randomUpdate(r, n, Hyper{});
  HostTensor g(grad, {n});
  for (int64_t k = 0; k < n; ++k)
    g.set(k, u.grad.f()[k]);
  u.grad = std::move(g);
  return u;
}

TEST(AdamWUpdate, MixedPrecisionEqualsCastUpdateCastBitForBit) {
  Random r(19);
  for (DType grad : {DType::F32, DType::BF16, DType::F16})
    for (DType working : {DType::F32, DType::BF16, DType::F16})
      for (int64_t n : {int64_t(1), int64_t(3), int64_t(4), int64_t(7),
                        int64_t(1029), int64_t(65539)}) {
        const Update u = randomMixedUpdate(r, n, grad);
        const MixedResult got = fusedMixed(u, working),
                          want = castUpdateCast(u, working);
        const std::string what =
            std::string("grad ") + dtypeName(grad) + ", working " +
            (working == DType::F32 ? "none" : dtypeName(working)) + ", n " +
            std::to_string(n);
        expectSameBits(got.f32.param, want.f32.param, what + " param");
        expectSameBits(got.f32.expAvg, want.f32.expAvg, what + " exp_avg");
        expectSameBits(got.f32.expAvgSq, want.f32.expAvgSq,
                       what + " exp_avg_sq");
        if (working != DType::F32)
          expectSameBits(got.working, want.working, what + " working param");
      }
}

TEST(AdamWUpdate, MixedPrecisionInPlaceEqualsOutOfPlace) {
  Random r(23);
  Update u = randomMixedUpdate(r, 517, DType::BF16);
  const MixedResult want = fusedMixed(u, DType::BF16);
  HostTensor working(DType::BF16, {517});
  runKernelOnResults(ops::AdamWUpdate{true}, u.operands(),
                     {&u.param, &u.expAvg, &u.expAvgSq, &working});
  expectSameBits(u.param, want.f32.param, "param");
  expectSameBits(u.expAvg, want.f32.expAvg, "exp_avg");
  expectSameBits(u.expAvgSq, want.f32.expAvgSq, "exp_avg_sq");
  expectSameBits(working, want.working, "working param");
}

TEST(AdamWUpdate, RejectsOtherDTypes) {
  Random r(29);
  Update u = randomUpdate(r, 6, Hyper{});
  HostTensor p(DType::F32, {6}), m(DType::F32, {6}), v(DType::F32, {6});
  auto errorOf = [&](const Op &op, std::vector<HostTensor *> results) {
    try {
      runKernelOnResults(op, u.operands(), results);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  HostTensor f32Working(DType::F32, {6}), i32Working(DType::I32, {6});
  EXPECT_EQ(errorOf(ops::AdamWUpdate{true}, {&p, &m, &v, &f32Working}),
            "adamw_update: working param result must be bf16 or f16, got f32");
  EXPECT_EQ(errorOf(ops::AdamWUpdate{true}, {&p, &m, &v, &i32Working}),
            "adamw_update: working param result must be bf16 or f16, got i32");
  HostTensor bf16Working(DType::BF16, {2, 3});
  EXPECT_EQ(errorOf(ops::AdamWUpdate{true}, {&p, &m, &v, &bf16Working}),
            "adamw_update: working param result has shape [2,3], expected "
            "[6]");
  // Without its working parameter, a command that says it writes one.
  EXPECT_NE(errorOf(ops::AdamWUpdate{true}, {&p, &m, &v}), "no error");
  u.grad = r.integers(DType::I32, {6}, 1, 5);
  EXPECT_EQ(errorOf(ops::AdamWUpdate{}, {&p, &m, &v}),
            "adamw_update: grad must be f32, bf16 or f16, got i32");
  u.grad = HostTensor(DType::BF16, {6});
  u.param = HostTensor(DType::BF16, {6});
  EXPECT_EQ(errorOf(ops::AdamWUpdate{}, {&p, &m, &v}),
            "adamw_update: param must be f32, got bf16");
}

TEST(AdamWUpdate, RejectsMismatchedOperands) {
  Random r(17);
  Update u = randomUpdate(r, 6, Hyper{});
  HostTensor p(DType::F32, {6}), m(DType::F32, {6}), v(DType::F32, {6});
  u.expAvgSq = r.f32({2, 3});
  try {
    runKernelOnResults(ops::AdamWUpdate{}, u.operands(), {&p, &m, &v});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "adamw_update: exp_avg_sq has shape [2,3], "
                           "expected [6]");
  }
  u.expAvgSq = r.f32({6});
  u.eps = f32({2}, {1e-8f, 1e-8f});
  try {
    runKernelOnResults(ops::AdamWUpdate{}, u.operands(), {&p, &m, &v});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "adamw_update: eps [2] must hold one element");
  }
}

} // namespace
} // namespace hybrid::cpu::test
