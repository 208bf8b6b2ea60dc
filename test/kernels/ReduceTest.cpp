// Reductions over every axis subset, with and without keepdims, on f32 and
// i64, against a reference that visits each input element once.
#include "KernelTestSupport.h"

#include <limits>

namespace hybrid::cpu::test {
namespace {

struct Reduction {
  ReduceKind kind;
  double init;
  double (*fold)(double, double);
  bool mean;
};

const Reduction kReductions[] = {
    {ReduceKind::Sum, 0, [](double a, double x) { return a + x; }, false},
    {ReduceKind::Mean, 0, [](double a, double x) { return a + x; }, true},
    {ReduceKind::Prod, 1, [](double a, double x) { return a * x; }, false},
    {ReduceKind::Max, -INFINITY,
     [](double a, double x) {
       return std::isnan(a) ? a : std::isnan(x) ? x : std::max(a, x);
     },
     false},
    {ReduceKind::Min, INFINITY,
     [](double a, double x) {
       return std::isnan(a) ? a : std::isnan(x) ? x : std::min(a, x);
     },
     false},
};

/// Reduces `x` over the axes flagged in `mask` and returns the output shape
/// (with keepdims) and values.
std::vector<double> reference(const HostTensor &x,
                              const std::vector<bool> &mask, const Reduction &r,
                              Shape &keptShape) {
  const Shape &s = x.shape;
  keptShape = s;
  for (size_t d = 0; d < s.size(); ++d)
    if (mask[d])
      keptShape[d] = 1;
  std::vector<double> acc(numElements(keptShape), r.init);
  for (int64_t k = 0; k < x.numel(); ++k) {
    auto idx = unravel(k, s);
    for (size_t d = 0; d < s.size(); ++d)
      if (mask[d])
        idx[d] = 0;
    int64_t o = ravel(idx, keptShape);
    acc[o] = r.fold(acc[o], x.at(k));
  }
  if (r.mean) {
    double count = double(x.numel()) / std::max<double>(1, acc.size());
    for (double &a : acc)
      a = isIntegerDType(x.dtype) ? std::trunc(a / count) : a / count;
  }
  return acc;
}

TEST(Reduce, EveryAxisSubsetEveryNumericDtype) {
  Random rng(30);
  const std::vector<Shape> shapes = {
      {5}, {3, 4}, {2, 3, 4}, {2, 1, 3, 5}, {40, 700}, {700, 40}, {6, 50, 70}};
  for (const Reduction &r : kReductions)
    for (DType dt :
         {DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32})
      for (const Shape &s : shapes) {
        const int64_t rank = s.size();
        // Products stay in range: factors near 1, or in {-1, 0, 1}.
        const bool prod = r.kind == ReduceKind::Prod;
        HostTensor x =
            isFloatDType(dt)
                ? rng.floats(dt, s, prod ? 0.9f : -3.0f, prod ? 1.1f : 3.0f)
                : rng.integers(dt, s, prod ? -1 : -100, prod ? 1 : 100);
        const Tolerance tol =
            isFloatDType(dt) ? toleranceFor(dt, 1e-4, 1e-5) : Tolerance{0, 0};
        for (int64_t m = 0; m < (int64_t(1) << rank); ++m) {
          if (numElements(s) > 10000 && m % 3 != 1 && m != (1 << rank) - 1)
            continue; // keep the large cases quick
          std::vector<bool> mask(rank);
          std::vector<int64_t> axes;
          for (int64_t d = 0; d < rank; ++d)
            if ((m >> d) & 1) {
              mask[d] = true;
              axes.push_back(d % 2 ? d - rank : d); // mix negative axes
            }
          if (axes.empty())
            mask.assign(rank, true); // empty axes reduce everything
          Shape kept;
          std::vector<double> want = reference(x, mask, r, kept);
          for (int keepdims = 0; keepdims <= 1; ++keepdims) {
            Shape out;
            for (int64_t d = 0; d < rank; ++d)
              if (!mask[d] || keepdims)
                out.push_back(kept[d]);
            HostTensor got =
                run(ops::Reduce{r.kind, axes, keepdims != 0}, {&x}, dt, out);
            expectNear(got, want, tol.atol, tol.rtol,
                       std::string(reduceKindName(r.kind)) + " " +
                           dtypeName(dt) + " " + shapeToString(s) + " mask " +
                           std::to_string(m));
          }
        }
      }
}

TEST(Reduce, KeepdimsDefaultsToTrue) {
  HostTensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor got =
      run(ops::Reduce{ReduceKind::Sum, {1}}, {&x}, DType::F32, {2, 1});
  expectNear(got, {6, 15}, 0, 0);
  EXPECT_NE(errorOf(ops::Reduce{ReduceKind::Sum, {1}}, {&x},
                    HostTensor(DType::F32, {2})),
            "");
}

TEST(Reduce, EmptyReductionsGiveIdentities) {
  HostTensor x(DType::F32, {2, 0});
  auto reduceEmpty = [&](ReduceKind kind) {
    return run(ops::Reduce{kind, {1}, false}, {&x}, DType::F32, {2});
  };
  expectNear(reduceEmpty(ReduceKind::Sum), {0, 0}, 0, 0);
  expectNear(reduceEmpty(ReduceKind::Prod), {1, 1}, 0, 0);
  expectNear(reduceEmpty(ReduceKind::Max), {-INFINITY, -INFINITY}, 0, 0);
  expectNear(reduceEmpty(ReduceKind::Min), {INFINITY, INFINITY}, 0, 0);
  expectNear(reduceEmpty(ReduceKind::Mean), {NAN, NAN}, 0, 0);
  HostTensor y(DType::F32, {0, 3});
  HostTensor z =
      run(ops::Reduce{ReduceKind::Sum, {0}, false}, {&y}, DType::F32, {3});
  expectNear(z, {0, 0, 0}, 0, 0);
}

TEST(Reduce, BoolMaxIsAnyAndMinIsAll) {
  HostTensor x = boolean({3, 2}, {0, 0, 1, 0, 1, 1});
  expectEqual(
      run(ops::Reduce{ReduceKind::Max, {1}, false}, {&x}, DType::Bool, {3}),
      boolean({3}, {0, 1, 1}));
  expectEqual(
      run(ops::Reduce{ReduceKind::Min, {1}, false}, {&x}, DType::Bool, {3}),
      boolean({3}, {0, 0, 1}));
  HostTensor empty(DType::Bool, {2, 0});
  expectEqual(
      run(ops::Reduce{ReduceKind::Min, {1}, false}, {&empty}, DType::Bool, {2}),
      boolean({2}, {1, 1}));
  expectEqual(
      run(ops::Reduce{ReduceKind::Max, {1}, false}, {&empty}, DType::Bool, {2}),
      boolean({2}, {0, 0}));
}

TEST(Reduce, MaxPropagatesNanAndRejectsBoolSums) {
  HostTensor x = f32({4}, {1, NAN, 3, 2});
  expectNear(run(ops::Reduce{ReduceKind::Max}, {&x}, DType::F32, {1}), {NAN}, 0,
             0);
  expectNear(run(ops::Reduce{ReduceKind::Min}, {&x}, DType::F32, {1}), {NAN}, 0,
             0);
  HostTensor b(DType::Bool, {3});
  EXPECT_NE(
      errorOf(ops::Reduce{ReduceKind::Sum}, {&b}, HostTensor(DType::Bool, {1})),
      "");
  EXPECT_NE(errorOf(ops::Reduce{ReduceKind::Sum, {1}}, {&x},
                    HostTensor(DType::F32, {1})),
            "");
}

TEST(Reduce, SumIsAccurateForLongRows) {
  // 1e6 copies of 0.1: float accumulation drifts by ~1e-3 relative.
  HostTensor x(DType::F32, {1000000});
  for (int64_t k = 0; k < x.numel(); ++k)
    x.f()[k] = 0.1f;
  HostTensor got = run(ops::Reduce{ReduceKind::Sum}, {&x}, DType::F32, {1});
  EXPECT_NEAR(got.f()[0], 1e6 * double(0.1f), 1e-1);
}

} // namespace
} // namespace hybrid::cpu::test
