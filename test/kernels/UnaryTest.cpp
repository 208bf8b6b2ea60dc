// Unary elementwise kernels, clip and cast against per-element references.
#include "KernelTestSupport.h"

#include <functional>
#include <limits>

namespace hybrid::cpu::test {
namespace {

const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

const std::vector<Shape> kShapes = {{},     {1},       {7},
                                    {3, 4}, {2, 0, 3}, {64, 1025}};

std::vector<double> mapRef(const HostTensor &x,
                           const std::function<double(double)> &f) {
  std::vector<double> want(x.numel());
  for (int64_t k = 0; k < x.numel(); ++k)
    want[k] = f(x.at(k));
  return want;
}

struct FloatCase {
  UnaryKind kind;
  std::function<double(double)> ref;
  float lo, hi;
};

TEST(Unary, FloatOpsMatchReference) {
  const double kPi = 3.14159265358979323846;
  const std::vector<FloatCase> cases = {
      {UnaryKind::Neg, [](double x) { return -x; }, -5, 5},
      {UnaryKind::Abs, [](double x) { return std::fabs(x); }, -5, 5},
      {UnaryKind::Sign, [](double x) { return double((x > 0) - (x < 0)); }, -5,
       5},
      {UnaryKind::Exp, [](double x) { return std::exp(x); }, -10, 10},
      {UnaryKind::Log, [](double x) { return std::log(x); }, 0.01f, 100},
      {UnaryKind::Sqrt, [](double x) { return std::sqrt(x); }, 0, 100},
      {UnaryKind::Rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.01f, 100},
      {UnaryKind::Reciprocal, [](double x) { return 1 / x; }, 0.1f, 10},
      {UnaryKind::Tanh, [](double x) { return std::tanh(x); }, -8, 8},
      {UnaryKind::Sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -30,
       30},
      {UnaryKind::Relu, [](double x) { return x > 0 ? x : 0; }, -5, 5},
      {UnaryKind::Silu, [](double x) { return x / (1 + std::exp(-x)); }, -30,
       30},
      {UnaryKind::Sin, [](double x) { return std::sin(x); }, -10, 10},
      {UnaryKind::Cos, [](double x) { return std::cos(x); }, -10, 10},
      {UnaryKind::Erf, [](double x) { return std::erf(x); }, -4, 4},
      {UnaryKind::Floor, [](double x) { return std::floor(x); }, -5, 5},
      {UnaryKind::Ceil, [](double x) { return std::ceil(x); }, -5, 5},
      {UnaryKind::GeluErf,
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); },
       -6, 6},
  };
  Random rng(10);
  for (const FloatCase &c : cases)
    for (const Shape &s : kShapes) {
      HostTensor x = rng.f32(s, c.lo, c.hi);
      HostTensor got = run(ops::Unary{c.kind}, {&x}, DType::F32, s);
      expectNear(got, mapRef(x, c.ref), 1e-6, 2e-6,
                 std::string(unaryKindName(c.kind)) + " " + shapeToString(s));
    }
  HostTensor x = rng.f32({1000}, -6, 6);
  HostTensor got =
      run(ops::Unary{UnaryKind::GeluTanh}, {&x}, DType::F32, {1000});
  expectNear(got,
             mapRef(x,
                    [&](double v) {
                      return 0.5 * v *
                             (1 + std::tanh(std::sqrt(2 / kPi) *
                                            (v + 0.044715 * v * v * v)));
                    }),
             1e-6, 2e-6, "gelu tanh");
}

TEST(Unary, SigmoidAndSiluAreStableForLargeInputs) {
  HostTensor x = f32({6}, {-1000, -100, -88, 88, 100, 1000});
  HostTensor s = run(ops::Unary{UnaryKind::Sigmoid}, {&x}, DType::F32, {6});
  HostTensor l = run(ops::Unary{UnaryKind::Silu}, {&x}, DType::F32, {6});
  for (int k = 0; k < 6; ++k) {
    EXPECT_TRUE(std::isfinite(s.f()[k])) << k;
    EXPECT_TRUE(std::isfinite(l.f()[k])) << k;
  }
  EXPECT_EQ(s.f()[0], 0.0f);
  EXPECT_EQ(s.f()[5], 1.0f);
  EXPECT_EQ(l.f()[5], 1000.0f);
  EXPECT_EQ(l.f()[0], -0.0f);
}

TEST(Unary, SpecialValues) {
  HostTensor x = f32({5}, {kNan, kInf, -kInf, 0, -2});
  HostTensor isNan = run(ops::Unary{UnaryKind::IsNan}, {&x}, DType::Bool, {5});
  HostTensor isInf = run(ops::Unary{UnaryKind::IsInf}, {&x}, DType::Bool, {5});
  EXPECT_EQ(std::vector<uint8_t>(isNan.b(), isNan.b() + 5),
            (std::vector<uint8_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(std::vector<uint8_t>(isInf.b(), isInf.b() + 5),
            (std::vector<uint8_t>{0, 1, 1, 0, 0}));
  HostTensor sign = run(ops::Unary{UnaryKind::Sign}, {&x}, DType::F32, {5});
  EXPECT_TRUE(std::isnan(sign.f()[0]));
  EXPECT_EQ(sign.f()[1], 1);
  EXPECT_EQ(sign.f()[2], -1);
  EXPECT_EQ(sign.f()[3], 0);
  HostTensor relu = run(ops::Unary{UnaryKind::Relu}, {&x}, DType::F32, {5});
  EXPECT_TRUE(std::isnan(relu.f()[0]));
  EXPECT_EQ(relu.f()[2], 0);
}

TEST(Unary, IntegerOps) {
  Random rng(11);
  for (const Shape &s : kShapes) {
    HostTensor x = rng.i64(s, -100, 100);
    expectNear(run(ops::Unary{UnaryKind::Neg}, {&x}, DType::I64, s),
               mapRef(x, [](double v) { return -v; }), 0, 0, "neg");
    expectNear(run(ops::Unary{UnaryKind::Abs}, {&x}, DType::I64, s),
               mapRef(x, [](double v) { return std::fabs(v); }), 0, 0, "abs");
    expectNear(run(ops::Unary{UnaryKind::Sign}, {&x}, DType::I64, s),
               mapRef(x, [](double v) { return double((v > 0) - (v < 0)); }), 0,
               0, "sign");
    expectNear(run(ops::Unary{UnaryKind::Relu}, {&x}, DType::I64, s),
               mapRef(x, [](double v) { return v > 0 ? v : 0; }), 0, 0, "relu");
  }
  HostTensor x = rng.i64({3});
  EXPECT_NE(
      errorOf(ops::Unary{UnaryKind::Exp}, {&x}, HostTensor(DType::I64, {3}))
          .find("must be f32"),
      std::string::npos);
  HostTensor b = rng.boolean({3});
  EXPECT_NE(
      errorOf(ops::Unary{UnaryKind::Neg}, {&b}, HostTensor(DType::Bool, {3})),
      "");
}

TEST(Unary, LogicalNot) {
  Random rng(12);
  for (const Shape &s : kShapes) {
    HostTensor x = rng.boolean(s);
    expectNear(run(ops::Unary{UnaryKind::Not}, {&x}, DType::Bool, s),
               mapRef(x, [](double v) { return v ? 0.0 : 1.0; }), 0, 0, "not");
  }
  HostTensor f = rng.f32({2});
  EXPECT_NE(
      errorOf(ops::Unary{UnaryKind::Not}, {&f}, HostTensor(DType::Bool, {2})),
      "");
}

TEST(Unary, RejectsShapeMismatch) {
  HostTensor x = f32({2}, {1, 2});
  EXPECT_NE(
      errorOf(ops::Unary{UnaryKind::Exp}, {&x}, HostTensor(DType::F32, {3}))
          .find("expected [2]"),
      std::string::npos);
  EXPECT_NE(
      errorOf(ops::Unary{UnaryKind::Exp}, {&x}, HostTensor(DType::I64, {2})),
      "");
}

TEST(Clip, FloatWithAndWithoutBounds) {
  Random rng(13);
  HostTensor x = rng.f32({5, 301}, -5, 5);
  x.f()[0] = kNan;
  Shape s = x.shape;
  auto clipRef = [&](double lo, double hi) {
    return mapRef(x, [=](double v) {
      if (std::isnan(v))
        return v;
      v = v < lo ? lo : v;
      return v > hi ? hi : v;
    });
  };
  expectNear(run(ops::Clip{-1.0, 2.0}, {&x}, DType::F32, s), clipRef(-1, 2), 0,
             0, "both");
  expectNear(run(ops::Clip{0.5, std::nullopt}, {&x}, DType::F32, s),
             clipRef(0.5, INFINITY), 0, 0, "min only");
  expectNear(run(ops::Clip{std::nullopt, -0.5}, {&x}, DType::F32, s),
             clipRef(-INFINITY, -0.5), 0, 0, "max only");
  expectNear(run(ops::Clip{}, {&x}, DType::F32, s),
             clipRef(-INFINITY, INFINITY), 0, 0, "none");
  // min > max gives max everywhere (ONNX / numpy.clip).
  HostTensor y = f32({3}, {-5, 0, 5});
  expectNear(run(ops::Clip{2.0, 1.0}, {&y}, DType::F32, {3}), {1, 1, 1}, 0, 0,
             "min > max");
}

TEST(Clip, Integer) {
  HostTensor x = i64({6}, {-10, -3, 0, 2, 3, 10});
  expectNear(run(ops::Clip{-2.5, 2.5}, {&x}, DType::I64, {6}),
             {-2, -2, 0, 2, 2, 2}, 0, 0, "fractional bounds");
  expectNear(run(ops::Clip{0.0, std::nullopt}, {&x}, DType::I64, {6}),
             {0, 0, 0, 2, 3, 10}, 0, 0, "min only");
}

TEST(Cast, AllConversions) {
  HostTensor f = f32({8}, {1.7f, -1.7f, 0.0f, -0.0f, 2.5f, 1e20f, kNan, 3});
  HostTensor i = run(ops::Cast{}, {&f}, DType::I64, {8});
  EXPECT_EQ(std::vector<int64_t>(i.i(), i.i() + 8),
            (std::vector<int64_t>{1, -1, 0, 0, 2,
                                  std::numeric_limits<int64_t>::max(), 0, 3}));
  HostTensor fb = run(ops::Cast{}, {&f}, DType::Bool, {8});
  EXPECT_EQ(std::vector<uint8_t>(fb.b(), fb.b() + 8),
            (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 1, 1}));
  HostTensor n = i64({4}, {-3, 0, 16777217, 5});
  HostTensor nf = run(ops::Cast{}, {&n}, DType::F32, {4});
  EXPECT_EQ(nf.f()[0], -3.0f);
  EXPECT_EQ(nf.f()[2], 16777216.0f);
  HostTensor nb = run(ops::Cast{}, {&n}, DType::Bool, {4});
  EXPECT_EQ(std::vector<uint8_t>(nb.b(), nb.b() + 4),
            (std::vector<uint8_t>{1, 0, 1, 1}));
  HostTensor b = boolean({3}, {1, 0, 1});
  HostTensor bf = run(ops::Cast{}, {&b}, DType::F32, {3});
  HostTensor bi = run(ops::Cast{}, {&b}, DType::I64, {3});
  HostTensor bb = run(ops::Cast{}, {&b}, DType::Bool, {3});
  EXPECT_EQ(std::vector<float>(bf.f(), bf.f() + 3),
            (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(std::vector<int64_t>(bi.i(), bi.i() + 3),
            (std::vector<int64_t>{1, 0, 1}));
  expectEqual(bb, b, "bool -> bool");
  HostTensor ff = run(ops::Cast{}, {&f}, DType::F32, {8});
  expectEqual(ff, f, "f32 -> f32");
  HostTensor big = f32({2}, {-1e30f, -9.2233720e18f});
  HostTensor bigI = run(ops::Cast{}, {&big}, DType::I64, {2});
  EXPECT_EQ(bigI.i()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(bigI.i()[1], std::numeric_limits<int64_t>::min());
  EXPECT_NE(errorOf(ops::Cast{}, {&f}, HostTensor(DType::I64, {7})), "");
}

} // namespace
} // namespace hybrid::cpu::test
