// The activation_grad kernel against the derivatives hg's VJP rules wrote
// out before it existed (VjpRules.cpp), evaluated in double.
#include "KernelTestSupport.h"

#include <cmath>
#include <functional>
#include <limits>

namespace hybrid::cpu::test {
namespace {

const double kPi = 3.14159265358979323846;

/// act'(x) as the composed rules computed it, term by term.
double slopeRef(Activation a, double x) {
  switch (a) {
  case Activation::Relu:
    return x > 0 ? 1 : 0;
  case Activation::Silu: {
    const double s = 1 / (1 + std::exp(-x));
    return s * (1 + x * (1 - s));
  }
  case Activation::GeluErf: {
    const double cdf = 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
    const double pdf = std::exp(-0.5 * x * x) / std::sqrt(2 * kPi);
    return cdf + x * pdf;
  }
  case Activation::GeluTanh: {
    const double k = std::sqrt(2 / kPi), c = 0.044715;
    const double th = std::tanh(k * (x + c * x * x * x));
    const double du = k * (1 + 3 * c * x * x);
    return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * du;
  }
  case Activation::None:
    break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::vector<double> gradRef(Activation a, const HostTensor &x,
                            const HostTensor &g) {
  std::vector<double> want(x.numel());
  for (int64_t k = 0; k < x.numel(); ++k)
    want[k] = a == Activation::Relu ? (x.at(k) > 0 ? g.at(k) : 0)
                                    : g.at(k) * slopeRef(a, x.at(k));
  return want;
}

const Activation kActivationsWithGrad[] = {
    Activation::Relu, Activation::GeluErf, Activation::GeluTanh,
    Activation::Silu};

TEST(ActivationGrad, MatchesTheComposedRuleInDouble) {
  const std::vector<Shape> shapes = {{},     {1},       {7},
                                     {3, 4}, {2, 0, 3}, {64, 1025}};
  Random rng(21);
  for (DType dt : kFloatTypes) {
    const Tolerance tol = toleranceFor(dt, 2e-6, 2e-6);
    for (Activation a : kActivationsWithGrad)
      for (const Shape &s : shapes) {
        HostTensor x = rng.floats(dt, s, -6, 6);
        HostTensor g = rng.floats(dt, s, -2, 2);
        HostTensor got = run(ops::ActivationGrad{a}, {&x, &g}, dt, s);
        expectNear(got, gradRef(a, x, g), tol.atol, tol.rtol,
                   std::string(activationName(a)) + " " + dtypeName(dt) + " " +
                       shapeToString(s));
      }
  }
}

TEST(ActivationGrad, TailsStayAccurate) {
  // Where 1 - s, 1 + tanh u and 1 + erf would cancel in f32 the slopes are
  // tiny (or 1 plus a tiny bit), and still right to 3e-5 relative; the
  // ranges end where the double reference starts cancelling itself. Near
  // the slopes' roots (|x| < 3) the error is absolute.
  struct Case {
    Activation a;
    float lo, hi;
  };
  const Case cases[] = {{Activation::Relu, -30, 30},
                        {Activation::Silu, -30, 30},
                        {Activation::GeluErf, -6, 6},
                        {Activation::GeluTanh, -5.5f, 5.5f}};
  Random rng(22);
  for (const Case &c : cases) {
    HostTensor x = rng.floats(DType::F32, {4097}, c.lo, c.hi);
    HostTensor g = rng.floats(DType::F32, {4097}, -2, 2);
    HostTensor got =
        run(ops::ActivationGrad{c.a}, {&x, &g}, DType::F32, {4097});
    const std::vector<double> want = gradRef(c.a, x, g);
    for (int64_t k = 0; k < x.numel(); ++k) {
      const double atol =
          std::fabs(x.at(k)) < 3 ? 1e-6 * std::fabs(g.at(k)) : 0;
      EXPECT_NEAR(got.at(k), want[k], 3e-5 * std::fabs(want[k]) + atol)
          << activationName(c.a) << " x = " << x.at(k);
    }
  }
  // Far out, the slopes are their limits, 0 below and 1 above, without
  // NaN from an overflowing exp (silu's at -100 is -99 e^-100, a
  // denormal) or from gelu_tanh's x^3 overflowing (-3e13, +-1e20).
  HostTensor x = f32({7}, {-1e20f, -3e13f, -1000, -100, 100, 1000, 1e20f});
  HostTensor g = f32({7}, {3, 3, 3, 3, 3, 3, 3});
  for (Activation a : kActivationsWithGrad) {
    HostTensor got = run(ops::ActivationGrad{a}, {&x, &g}, DType::F32, {7});
    for (int k : {0, 1, 2})
      EXPECT_EQ(got.f()[k], 0.0f) << activationName(a) << " x = " << x.at(k);
    EXPECT_LE(std::fabs(got.f()[3]), 1e-40f) << activationName(a);
    for (int k : {4, 5, 6})
      EXPECT_EQ(got.f()[k], 3.0f) << activationName(a) << " x = " << x.at(k);
  }
}

TEST(ActivationGrad, ReluSelectsTheGradient) {
  // 0 at x = 0 and for NaN x (x > 0 is false), and an infinite gradient
  // passes where x > 0 and is 0 elsewhere (never inf * 0).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType dt : kFloatTypes) {
    HostTensor x = tensorOf(dt, {5}, {0, -0.0, nan, 2, -2});
    HostTensor g = tensorOf(dt, {5}, {1.5, 1.5, 1.5, inf, inf});
    HostTensor got =
        run(ops::ActivationGrad{Activation::Relu}, {&x, &g}, dt, {5});
    EXPECT_EQ(got.at(0), 0) << dtypeName(dt);
    EXPECT_EQ(got.at(1), 0) << dtypeName(dt);
    EXPECT_EQ(got.at(2), 0) << dtypeName(dt);
    EXPECT_EQ(got.at(3), inf) << dtypeName(dt);
    EXPECT_EQ(got.at(4), 0) << dtypeName(dt);
  }
}

TEST(ActivationGrad, KnownValues) {
  // act'(0): relu 0, gelu and silu 1/2; and gelu's slope at 1, exactly
  // Phi(1) + phi(1).
  HostTensor x = f32({2}, {0, 1});
  HostTensor g = f32({2}, {2, 1});
  EXPECT_EQ(
      run(ops::ActivationGrad{Activation::Relu}, {&x, &g}, DType::F32, {2})
          .f()[0],
      0.0f);
  for (Activation a :
       {Activation::GeluErf, Activation::GeluTanh, Activation::Silu})
    EXPECT_FLOAT_EQ(
        run(ops::ActivationGrad{a}, {&x, &g}, DType::F32, {2}).f()[0], 1.0f)
        << activationName(a);
  EXPECT_NEAR(
      run(ops::ActivationGrad{Activation::GeluErf}, {&x, &g}, DType::F32, {2})
          .f()[1],
      0.8413447460685429 + 0.24197072451914337, 1e-6);
}

TEST(ActivationGrad, RejectsBadCalls) {
  HostTensor x = f32({3}, {1, 2, 3});
  HostTensor g = f32({3}, {1, 2, 3});
  HostTensor g2 = f32({2}, {1, 2});
  HostTensor gb = tensorOf(DType::BF16, {3}, {1, 2, 3});
  HostTensor xi = i64({3}, {1, 2, 3});
  const Op gelu = ops::ActivationGrad{Activation::GeluTanh};
  EXPECT_NE(errorOf(gelu, {&x, &g2}, HostTensor(DType::F32, {3}))
                .find("activation_grad"),
            std::string::npos);
  EXPECT_NE(errorOf(gelu, {&x, &gb}, HostTensor(DType::F32, {3})), "");
  EXPECT_NE(errorOf(gelu, {&x, &g}, HostTensor(DType::BF16, {3})), "");
  EXPECT_NE(errorOf(gelu, {&x, &g}, HostTensor(DType::F32, {4})), "");
  EXPECT_NE(errorOf(gelu, {&x}, HostTensor(DType::F32, {3})), "");
  EXPECT_NE(errorOf(gelu, {&xi, &xi}, HostTensor(DType::I64, {3}))
                .find("unsupported element type i64"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::ActivationGrad{Activation::None}, {&x, &g},
                    HostTensor(DType::F32, {3}))
                .find("invalid activation 0"),
            std::string::npos);
  EXPECT_EQ(errorOf(gelu, {&x, &g}, HostTensor(DType::F32, {3})), "");
}

} // namespace
} // namespace hybrid::cpu::test
