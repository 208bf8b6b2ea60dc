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
  for (DType dt : kFloatTypes) {
    const Tolerance tol = toleranceFor(dt, 1e-6, 2e-6);
    for (const FloatCase &c : cases)
      for (const Shape &s : kShapes) {
        HostTensor x = rng.floats(dt, s, c.lo, c.hi);
        HostTensor got = run(ops::Unary{c.kind}, {&x}, dt, s);
        expectNear(got, mapRef(x, c.ref), tol.atol, tol.rtol,
                   std::string(unaryKindName(c.kind)) + " " + dtypeName(dt) +
                       " " + shapeToString(s));
      }
    HostTensor x = rng.floats(dt, {1001}, -6, 6);
    HostTensor got = run(ops::Unary{UnaryKind::GeluTanh}, {&x}, dt, {1001});
    expectNear(got,
               mapRef(x,
                      [&](double v) {
                        return 0.5 * v *
                               (1 + std::tanh(std::sqrt(2 / kPi) *
                                              (v + 0.044715 * v * v * v)));
                      }),
               tol.atol, tol.rtol, std::string("gelu tanh ") + dtypeName(dt));
  }
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
  for (DType dt : kFloatTypes) {
    HostTensor x = tensorOf(dt, {5}, {kNan, kInf, -kInf, 0, -2});
    HostTensor isNan =
        run(ops::Unary{UnaryKind::IsNan}, {&x}, DType::Bool, {5});
    HostTensor isInf =
        run(ops::Unary{UnaryKind::IsInf}, {&x}, DType::Bool, {5});
    EXPECT_EQ(std::vector<uint8_t>(isNan.b(), isNan.b() + 5),
              (std::vector<uint8_t>{1, 0, 0, 0, 0}))
        << dtypeName(dt);
    EXPECT_EQ(std::vector<uint8_t>(isInf.b(), isInf.b() + 5),
              (std::vector<uint8_t>{0, 1, 1, 0, 0}))
        << dtypeName(dt);
    // f16 overflows to inf past 65504; exp(12) does.
    HostTensor big = tensorOf(dt, {1}, {12});
    HostTensor e = run(ops::Unary{UnaryKind::Exp}, {&big}, dt, {1});
    EXPECT_EQ(std::isinf(e.at(0)), dt == DType::F16) << dtypeName(dt);
  }
  HostTensor x = f32({5}, {kNan, kInf, -kInf, 0, -2});
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
  for (DType dt : {DType::I64, DType::I32})
    for (const Shape &s : kShapes) {
      HostTensor x = rng.integers(dt, s, -100, 100);
      expectNear(run(ops::Unary{UnaryKind::Neg}, {&x}, dt, s),
                 mapRef(x, [](double v) { return -v; }), 0, 0, "neg");
      expectNear(run(ops::Unary{UnaryKind::Abs}, {&x}, dt, s),
                 mapRef(x, [](double v) { return std::fabs(v); }), 0, 0, "abs");
      expectNear(run(ops::Unary{UnaryKind::Sign}, {&x}, dt, s),
                 mapRef(x, [](double v) { return double((v > 0) - (v < 0)); }),
                 0, 0, "sign");
      expectNear(run(ops::Unary{UnaryKind::Relu}, {&x}, dt, s),
                 mapRef(x, [](double v) { return v > 0 ? v : 0; }), 0, 0,
                 "relu");
    }
  HostTensor x = rng.i64({3});
  EXPECT_NE(
      errorOf(ops::Unary{UnaryKind::Exp}, {&x}, HostTensor(DType::I64, {3}))
          .find("exp: unsupported element type i64 for input"),
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
  for (DType dt : kFloatTypes) {
    HostTensor x = rng.floats(dt, {5, 301}, -5, 5);
    x.set(0, kNan);
    Shape s = x.shape;
    // Bounds representable in every float type: the result is exact.
    auto clipRef = [&](double lo, double hi) {
      return mapRef(x, [=](double v) {
        if (std::isnan(v))
          return v;
        v = v < lo ? lo : v;
        return v > hi ? hi : v;
      });
    };
    const std::string t = dtypeName(dt);
    expectNear(run(ops::Clip{-1.0, 2.0}, {&x}, dt, s), clipRef(-1, 2), 0, 0,
               "both " + t);
    expectNear(run(ops::Clip{0.5, std::nullopt}, {&x}, dt, s),
               clipRef(0.5, INFINITY), 0, 0, "min only " + t);
    expectNear(run(ops::Clip{std::nullopt, -0.5}, {&x}, dt, s),
               clipRef(-INFINITY, -0.5), 0, 0, "max only " + t);
    expectNear(run(ops::Clip{}, {&x}, dt, s), clipRef(-INFINITY, INFINITY), 0,
               0, "none " + t);
  }
  // min > max gives max everywhere (ONNX / numpy.clip).
  HostTensor y = f32({3}, {-5, 0, 5});
  expectNear(run(ops::Clip{2.0, 1.0}, {&y}, DType::F32, {3}), {1, 1, 1}, 0, 0,
             "min > max");
}

TEST(Clip, Integer) {
  for (DType dt : {DType::I64, DType::I32}) {
    HostTensor x = tensorOf(dt, {6}, {-10, -3, 0, 2, 3, 10});
    expectNear(run(ops::Clip{-2.5, 2.5}, {&x}, dt, {6}), {-2, -2, 0, 2, 2, 2},
               0, 0, "fractional bounds");
    expectNear(run(ops::Clip{0.0, std::nullopt}, {&x}, dt, {6}),
               {0, 0, 0, 2, 3, 10}, 0, 0, "min only");
  }
  // Bounds beyond i32 saturate.
  HostTensor y = tensorOf(DType::I32, {2}, {-5, 5});
  expectNear(run(ops::Clip{-1e12, 1e12}, {&y}, DType::I32, {2}), {-5, 5}, 0, 0,
             "wide bounds");
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

/// What cast of value v to dtype `to` gives: floats round to nearest even,
/// float -> integer truncates toward zero (NaN -> 0, saturating), integer
/// narrowing keeps the low bits, anything -> bool is v != 0.
double castReference(double v, DType from, DType to) {
  if (to == DType::Bool)
    return v != 0;
  if (isFloatDType(to)) {
    HostTensor t(to, {1});
    t.set(0, static_cast<float>(v)); // integers round to f32 first
    return t.at(0);
  }
  if (isFloatDType(from)) {
    if (std::isnan(v))
      return 0;
    const double lo = to == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
    if (v <= lo)
      return lo;
    if (v >= -lo)
      return to == DType::I32 ? 2147483647.0 : 9223372036854775807.0;
    return std::trunc(v);
  }
  if (to == DType::I32)
    return static_cast<int32_t>(static_cast<int64_t>(v));
  return v;
}

TEST(Cast, EveryPairOfDtypes) {
  Random rng(14);
  for (DType from : kAllTypes)
    for (DType to : kAllTypes) {
      HostTensor x(from, {7, 13});
      if (isFloatDType(from))
        x = rng.floats(from, x.shape, -300, 300);
      else if (isIntegerDType(from))
        x = rng.integers(from, x.shape, -100000, 100000);
      else
        x = rng.boolean(x.shape);
      if (isFloatDType(from)) { // special values
        x.set(0, kNan);
        x.set(1, kInf);
        x.set(2, -kInf);
        x.set(3, -0.0);
        x.set(4, 2.5);
        x.set(5, -2.5);
      }
      std::vector<double> want(x.numel());
      for (int64_t k = 0; k < x.numel(); ++k)
        want[k] = castReference(x.at(k), from, to);
      HostTensor got = run(ops::Cast{}, {&x}, to, x.shape);
      expectNear(got, want, 0, 0,
                 std::string(dtypeName(from)) + " -> " + dtypeName(to));
    }
  // Wide integers narrow by their low bits; big floats saturate i32.
  HostTensor wide = i64({2}, {(int64_t(1) << 32) + 5, -(int64_t(1) << 33) - 1});
  HostTensor narrow = run(ops::Cast{}, {&wide}, DType::I32, {2});
  EXPECT_EQ(narrow.i32()[0], 5);
  EXPECT_EQ(narrow.i32()[1], -1);
  HostTensor big = tensorOf(DType::BF16, {2}, {3e9, -3e9});
  HostTensor saturated = run(ops::Cast{}, {&big}, DType::I32, {2});
  EXPECT_EQ(saturated.i32()[0], std::numeric_limits<int32_t>::max());
  EXPECT_EQ(saturated.i32()[1], std::numeric_limits<int32_t>::min());
  // f32 -> bf16 -> f32 is Float16.h's round to nearest even.
  HostTensor f = f32({3}, {1.00390625f, 1.01171875f, 65520.0f});
  HostTensor h = run(ops::Cast{}, {&f}, DType::BF16, {3});
  HostTensor g = run(ops::Cast{}, {&f}, DType::F16, {3});
  EXPECT_EQ(h.h()[0], floatToBf16(1.00390625f));
  EXPECT_EQ(h.at(0), 1.0); // a tie rounds to even
  EXPECT_EQ(h.at(1), 1.015625);
  EXPECT_TRUE(std::isinf(g.at(2)));
}

} // namespace
} // namespace hybrid::cpu::test
