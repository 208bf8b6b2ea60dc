// Binary elementwise kernels against per-element references with explicit
// NumPy broadcasting.
#include "KernelTestSupport.h"

#include <functional>
#include <limits>

namespace hybrid::cpu::test {
namespace {

// Shape pairs covering equal shapes, scalars, rank-0, one-sided and two-sided
// broadcasting, and empty tensors.
const std::vector<std::pair<Shape, Shape>> kShapePairs = {
    {{2, 3}, {2, 3}},
    {{}, {}},
    {{4}, {}},
    {{}, {3, 2}},
    {{2, 1, 4}, {3, 1}},
    {{4}, {2, 3, 4}},
    {{5, 1}, {1, 6}},
    {{2, 3, 1}, {1}},
    {{0, 3}, {3}},
    {{2, 1, 3, 1}, {4, 1, 5}},
    {{1}, {7}},
    {{300, 257}, {257}},
    {{3, 1, 300}, {3, 70, 1}},
};

/// The reference: result[idx] = ref(lhs[bcast], rhs[bcast]) in double.
template <typename Ref>
std::vector<double> reference(const HostTensor &a, const HostTensor &b,
                              const Shape &out, Ref ref) {
  std::vector<double> want(numElements(out));
  for (int64_t k = 0; k < numElements(out); ++k) {
    auto idx = unravel(k, out);
    want[k] = ref(a.at(broadcastIndex(idx, a.shape)),
                  b.at(broadcastIndex(idx, b.shape)));
  }
  return want;
}

Shape broadcastOf(const Shape &a, const Shape &b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

struct FloatCase {
  BinaryKind kind;
  std::function<double(double, double)> ref;
  float lo, hi; // operand range
};

TEST(Elementwise, FloatArithmeticMatchesReference) {
  const std::vector<FloatCase> cases = {
      {BinaryKind::Add, [](double a, double b) { return a + b; }, -3, 3},
      {BinaryKind::Sub, [](double a, double b) { return a - b; }, -3, 3},
      {BinaryKind::Mul, [](double a, double b) { return a * b; }, -3, 3},
      {BinaryKind::Div, [](double a, double b) { return a / b; }, 0.5, 3},
      {BinaryKind::Pow, [](double a, double b) { return std::pow(a, b); }, 0.1,
       2},
      {BinaryKind::Max, [](double a, double b) { return a > b ? a : b; }, -3,
       3},
      {BinaryKind::Min, [](double a, double b) { return a < b ? a : b; }, -3,
       3},
  };
  Random rng(1);
  for (DType dt : kFloatTypes)
    for (const FloatCase &c : cases)
      for (auto &[sa, sb] : kShapePairs) {
        HostTensor a = rng.floats(dt, sa, c.lo, c.hi),
                   b = rng.floats(dt, sb, c.lo, c.hi);
        Shape out = broadcastOf(sa, sb);
        HostTensor got = run(ops::Binary{c.kind}, {&a, &b}, dt, out);
        const Tolerance tol = toleranceFor(dt, 1e-6, 1e-5);
        expectNear(got, reference(a, b, out, c.ref), tol.atol, tol.rtol,
                   std::string(binaryKindName(c.kind)) + " " + dtypeName(dt) +
                       " " + shapeToString(sa) + " " + shapeToString(sb));
      }
}

TEST(Elementwise, FloatModFollowsDivisorOrDividendSign) {
  Random rng(2);
  for (DType dt : kFloatTypes)
    for (auto &[sa, sb] : kShapePairs) {
      HostTensor a = rng.floats(dt, sa, -10, 10), b = rng.floats(dt, sb, -4, 4);
      for (int64_t k = 0; k < b.numel(); ++k)
        if (std::fabs(b.at(k)) < 0.25)
          b.set(k, 1.5);
      Shape out = broadcastOf(sa, sb);
      const std::string where = std::string(dtypeName(dt)) + " " +
                                shapeToString(sa) + " " + shapeToString(sb);
      const Tolerance tol = toleranceFor(dt, 1e-4, 1e-4);
      HostTensor fm = run(ops::Binary{BinaryKind::FMod}, {&a, &b}, dt, out);
      expectNear(fm,
                 reference(a, b, out,
                           [](double x, double y) { return std::fmod(x, y); }),
                 tol.atol, tol.rtol, "fmod " + where);
      HostTensor pm = run(ops::Binary{BinaryKind::Mod}, {&a, &b}, dt, out);
      expectNear(pm,
                 reference(a, b, out,
                           [](double x, double y) {
                             return x - std::floor(x / y) * y; // Python %
                           }),
                 tol.atol, tol.rtol, "python mod " + where);
    }
}

TEST(Elementwise, IntegerArithmeticMatchesReference) {
  Random rng(3);
  auto truncDiv = [](double a, double b) { return std::trunc(a / b); };
  auto pyMod = [](double a, double b) { return a - std::floor(a / b) * b; };
  auto cMod = [](double a, double b) { return std::fmod(a, b); };
  auto ipow = [](double a, double b) { return std::pow(a, b); };
  for (DType dt : {DType::I64, DType::I32})
    for (auto &[sa, sb] : kShapePairs) {
      Shape out = broadcastOf(sa, sb);
      HostTensor a = rng.integers(dt, sa, -50, 50),
                 b = rng.integers(dt, sb, -9, 9);
      for (int64_t k = 0; k < b.numel(); ++k)
        if (b.at(k) == 0)
          b.set(k, 3);
      std::string where = std::string(dtypeName(dt)) + " " + shapeToString(sa) +
                          " " + shapeToString(sb);
      auto check = [&](BinaryKind kind, const HostTensor &x,
                       const HostTensor &y,
                       const std::function<double(double, double)> &ref) {
        expectNear(run(ops::Binary{kind}, {&x, &y}, dt, out),
                   reference(x, y, out, ref), 0, 0,
                   std::string(binaryKindName(kind)) + " " + where);
      };
      check(BinaryKind::Add, a, b, std::plus<double>());
      check(BinaryKind::Sub, a, b, std::minus<double>());
      check(BinaryKind::Mul, a, b, std::multiplies<double>());
      check(BinaryKind::Div, a, b, truncDiv);
      check(BinaryKind::Mod, a, b, pyMod);
      check(BinaryKind::FMod, a, b, cMod);
      check(BinaryKind::Max, a, b,
            [](double x, double y) { return std::max(x, y); });
      check(BinaryKind::Min, a, b,
            [](double x, double y) { return std::min(x, y); });
      HostTensor e = rng.integers(dt, sb, 0, 5);
      check(BinaryKind::Pow, a, e, ipow);
    }
}

TEST(Elementwise, Int32WrapsLikeInt64) {
  const int32_t kMin = std::numeric_limits<int32_t>::min();
  const int32_t kMax = std::numeric_limits<int32_t>::max();
  HostTensor a = tensorOf(DType::I32, {3}, {double(kMin), double(kMax), 7});
  HostTensor b = tensorOf(DType::I32, {3}, {-1, 1, -2});
  HostTensor q = run(ops::Binary{BinaryKind::Div}, {&a, &b}, DType::I32, {3});
  EXPECT_EQ(q.i32()[0], kMin);
  EXPECT_EQ(q.i32()[2], -3);
  HostTensor s = run(ops::Binary{BinaryKind::Add}, {&a, &b}, DType::I32, {3});
  EXPECT_EQ(s.i32()[1], kMin);
  HostTensor zero = tensorOf(DType::I32, {3}, {1, 0, 1});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Mod}, {&a, &zero},
                    HostTensor(DType::I32, {3}))
                .find("division by zero"),
            std::string::npos);
}

TEST(Elementwise, IntegerEdgeCases) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  HostTensor a = i64({4}, {kMin, 7, -7, kMin});
  HostTensor b = i64({4}, {-1, -2, 2, 1});
  HostTensor q = run(ops::Binary{BinaryKind::Div}, {&a, &b}, DType::I64, {4});
  EXPECT_EQ(q.i()[0], kMin); // wraps instead of trapping
  EXPECT_EQ(q.i()[1], -3);
  EXPECT_EQ(q.i()[2], -3);
  HostTensor r = run(ops::Binary{BinaryKind::Mod}, {&a, &b}, DType::I64, {4});
  EXPECT_EQ(r.i()[0], 0);
  EXPECT_EQ(r.i()[1], -1); // Python: 7 % -2 == -1
  EXPECT_EQ(r.i()[2], 1);  // Python: -7 % 2 == 1
  HostTensor zero = i64({4}, {1, 0, 1, 1});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Div}, {&a, &zero},
                    HostTensor(DType::I64, {4}))
                .find("division by zero"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Mod}, {&a, &zero},
                    HostTensor(DType::I64, {4}))
                .find("division by zero"),
            std::string::npos);
  HostTensor negExp = i64({4}, {1, -1, 1, 1});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Pow}, {&a, &negExp},
                    HostTensor(DType::I64, {4})),
            "");
  HostTensor big = i64({1}, {std::numeric_limits<int64_t>::max()});
  HostTensor one = i64({1}, {1});
  EXPECT_EQ(
      run(ops::Binary{BinaryKind::Add}, {&big, &one}, DType::I64, {1}).i()[0],
      kMin);
}

TEST(Elementwise, FloatMaxMinPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor a = f32({3}, {nan, 1, 2});
  HostTensor b = f32({3}, {1, nan, 3});
  HostTensor mx = run(ops::Binary{BinaryKind::Max}, {&a, &b}, DType::F32, {3});
  HostTensor mn = run(ops::Binary{BinaryKind::Min}, {&a, &b}, DType::F32, {3});
  EXPECT_TRUE(std::isnan(mx.f()[0]) && std::isnan(mx.f()[1]));
  EXPECT_TRUE(std::isnan(mn.f()[0]) && std::isnan(mn.f()[1]));
  EXPECT_EQ(mx.f()[2], 3);
  EXPECT_EQ(mn.f()[2], 2);
}

TEST(Elementwise, ComparisonsOnEveryDtype) {
  struct Cmp {
    BinaryKind kind;
    std::function<bool(double, double)> ref;
  };
  const std::vector<Cmp> cmps = {
      {BinaryKind::Equal, std::equal_to<double>()},
      {BinaryKind::Less, std::less<double>()},
      {BinaryKind::LessEqual, std::less_equal<double>()},
      {BinaryKind::Greater, std::greater<double>()},
      {BinaryKind::GreaterEqual, std::greater_equal<double>()},
  };
  Random rng(4);
  for (DType dt : kAllTypes)
    for (auto &[sa, sb] : kShapePairs)
      for (const Cmp &c : cmps) {
        HostTensor a = rng.of(dt, sa), b = rng.of(dt, sb);
        if (isFloatDType(dt)) // make ties likely
          for (int64_t k = 0; k < b.numel(); ++k)
            if (k % 3 == 0)
              b.set(k, a.numel() ? a.at(k % a.numel()) : 1);
        if (isIntegerDType(dt))
          b = rng.integers(dt, sb, -3, 3), a = rng.integers(dt, sa, -3, 3);
        Shape out = broadcastOf(sa, sb);
        HostTensor got = run(ops::Binary{c.kind}, {&a, &b}, DType::Bool, out);
        expectNear(got,
                   reference(a, b, out,
                             [&](double x, double y) {
                               return c.ref(x, y) ? 1.0 : 0.0;
                             }),
                   0, 0,
                   std::string(binaryKindName(c.kind)) + " " + dtypeName(dt) +
                       " " + shapeToString(sa) + " " + shapeToString(sb));
      }
}

TEST(Elementwise, LogicalOps) {
  Random rng(5);
  for (auto &[sa, sb] : kShapePairs) {
    HostTensor a = rng.boolean(sa), b = rng.boolean(sb);
    Shape out = broadcastOf(sa, sb);
    expectNear(
        run(ops::Binary{BinaryKind::And}, {&a, &b}, DType::Bool, out),
        reference(a, b, out, [](double x, double y) { return double(x && y); }),
        0, 0, "and");
    expectNear(
        run(ops::Binary{BinaryKind::Or}, {&a, &b}, DType::Bool, out),
        reference(a, b, out, [](double x, double y) { return double(x || y); }),
        0, 0, "or");
    expectNear(run(ops::Binary{BinaryKind::Xor}, {&a, &b}, DType::Bool, out),
               reference(a, b, out,
                         [](double x, double y) {
                           return double((x != 0) != (y != 0));
                         }),
               0, 0, "xor");
  }
}

TEST(Elementwise, RejectsBadCalls) {
  Random rng(6);
  HostTensor a = rng.f32({2, 3}), b = rng.f32({4});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Add}, {&a, &b},
                    HostTensor(DType::F32, {2, 3}))
                .find("do not broadcast"),
            std::string::npos);
  HostTensor c = rng.f32({3});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Add}, {&a, &c},
                    HostTensor(DType::F32, {3, 3})),
            "");
  HostTensor i = rng.i64({3});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Add}, {&a, &i},
                    HostTensor(DType::F32, {2, 3}))
                .find("same element type"),
            std::string::npos);
  HostTensor p = rng.boolean({3}), q = rng.boolean({3});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Add}, {&p, &q},
                    HostTensor(DType::Bool, {3}))
                .find("add: unsupported element type bool"),
            std::string::npos);
  // Float dtypes do not mix (only cast converts).
  HostTensor h = rng.floats(DType::BF16, {3});
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Mul}, {&c, &h},
                    HostTensor(DType::F32, {3}))
                .find("same element type"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Mul}, {&h, &h},
                    HostTensor(DType::F32, {3}))
                .find("result must be bf16"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::And}, {&c, &c},
                    HostTensor(DType::Bool, {3})),
            "");
  EXPECT_NE(errorOf(ops::Binary{BinaryKind::Less}, {&c, &c},
                    HostTensor(DType::F32, {3})),
            "");
  EXPECT_NE(
      errorOf(ops::Binary{BinaryKind::Add}, {&c}, HostTensor(DType::F32, {3}))
          .find("expected 2 operand"),
      std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
