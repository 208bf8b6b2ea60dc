// softmax, log_softmax, layer_norm and rms_norm against double-precision
// references.
#include "KernelTestSupport.h"

#include <limits>

namespace hybrid::cpu::test {
namespace {

/// Applies fn to every 1-D fibre along `axis` (values in, values out).
template <typename Fn>
std::vector<double> alongAxis(const HostTensor &x, int64_t axis, Fn fn) {
  const Shape &s = x.shape;
  std::vector<double> out(x.numel());
  for (int64_t k = 0; k < x.numel(); ++k) {
    auto idx = unravel(k, s);
    if (idx[axis] != 0)
      continue;
    std::vector<double> fibre(s[axis]);
    std::vector<int64_t> flat(s[axis]);
    for (int64_t j = 0; j < s[axis]; ++j) {
      idx[axis] = j;
      flat[j] = ravel(idx, s);
      fibre[j] = x.at(flat[j]);
    }
    std::vector<double> r = fn(fibre);
    for (int64_t j = 0; j < s[axis]; ++j)
      out[flat[j]] = r[j];
  }
  return out;
}

std::vector<double> softmaxRef(const std::vector<double> &v, bool log) {
  double m = -INFINITY;
  for (double x : v)
    m = std::max(m, x);
  double sum = 0;
  for (double x : v)
    sum += std::exp(x - m);
  std::vector<double> r;
  for (double x : v)
    r.push_back(log ? x - m - std::log(sum) : std::exp(x - m) / sum);
  return r;
}

TEST(Softmax, EveryAxis) {
  Random rng(40);
  const std::vector<Shape> shapes = {{7},       {3, 5},     {2, 3, 4},
                                     {2, 1, 6}, {32, 1000}, {300, 3, 40}};
  for (DType dt : kFloatTypes)
    for (const Shape &s : shapes)
      for (int64_t axis = -int64_t(s.size()); axis < int64_t(s.size()); ++axis)
        for (bool log : {false, true}) {
          HostTensor x = rng.floats(dt, s, -10, 10);
          int64_t a = axis < 0 ? axis + s.size() : axis;
          std::vector<double> want = alongAxis(
              x, a, [&](const auto &v) { return softmaxRef(v, log); });
          HostTensor got = run(ops::Softmax{axis, log}, {&x}, dt, s);
          const Tolerance tol = toleranceFor(dt, 1e-6, 1e-5);
          expectNear(got, want, tol.atol, tol.rtol,
                     std::string(log ? "log_softmax " : "softmax ") +
                         dtypeName(dt) + " " + shapeToString(s) + " axis " +
                         std::to_string(axis));
        }
}

TEST(Softmax, StableForLargeAndInfiniteInputs) {
  HostTensor x = f32({2, 3}, {1000, 1001, 999, -INFINITY, 0, -INFINITY});
  HostTensor got = run(ops::Softmax{}, {&x}, DType::F32, {2, 3});
  std::vector<double> want = softmaxRef({1000, 1001, 999}, false);
  want.insert(want.end(), {0, 1, 0});
  expectNear(got, want, 1e-6, 1e-5);
  HostTensor lg = run(ops::Softmax{-1, true}, {&x}, DType::F32, {2, 3});
  EXPECT_NEAR(lg.f()[1], std::log(want[1]), 1e-5);
  EXPECT_EQ(lg.f()[3], -INFINITY);
  EXPECT_EQ(lg.f()[4], 0.0f);
}

TEST(LayerNorm, AxesWeightsAndBiases) {
  Random rng(41);
  const Shape s = {3, 5, 51};
  for (DType dt : kFloatTypes)
    for (int64_t axis : {-1, -2, 1, 0, 2})
      for (int hasWeight = 0; hasWeight <= 1; ++hasWeight)
        for (int hasBias = 0; hasBias <= 1; ++hasBias) {
          int64_t a = axis < 0 ? axis + 3 : axis;
          HostTensor x = rng.floats(dt, s, -3, 5);
          Shape norm(s.begin() + a, s.end());
          HostTensor w = rng.floats(dt, norm, 0.5, 1.5),
                     b = rng.floats(dt, norm, -1, 1);
          const double eps = 1e-5;
          // Rows are the trailing block [a, rank).
          int64_t n = numElements(norm);
          std::vector<double> want(x.numel());
          for (int64_t r = 0; r < x.numel() / n; ++r) {
            double mean = 0, var = 0;
            for (int64_t i = 0; i < n; ++i)
              mean += x.at(r * n + i);
            mean /= n;
            for (int64_t i = 0; i < n; ++i)
              var += std::pow(x.at(r * n + i) - mean, 2);
            var /= n;
            for (int64_t i = 0; i < n; ++i) {
              double v = (x.at(r * n + i) - mean) / std::sqrt(var + eps);
              if (hasWeight)
                v *= w.at(i);
              if (hasBias)
                v += b.at(i);
              want[r * n + i] = v;
            }
          }
          HostTensor got(dt, s);
          runKernel(ops::LayerNorm{eps, axis},
                    {&x, hasWeight ? &w : nullptr, hasBias ? &b : nullptr},
                    got);
          const Tolerance tol = toleranceFor(dt, 1e-5, 1e-5);
          expectNear(got, want, tol.atol, tol.rtol,
                     std::string("layer_norm ") + dtypeName(dt) + " axis " +
                         std::to_string(axis));
        }
}

TEST(LayerNorm, OptionalOperandsArePositional) {
  Random rng(42);
  HostTensor x = rng.f32({2, 8}), w = rng.f32({8}), b = rng.f32({8});
  // Absent operands keep their positions: (x, -, b) is a bias, not a weight.
  HostTensor biasOnly =
      run(ops::LayerNorm{}, {&x, nullptr, &b}, DType::F32, {2, 8});
  HostTensor plain =
      run(ops::LayerNorm{}, {&x, nullptr, nullptr}, DType::F32, {2, 8});
  for (int64_t e = 0; e < 16; ++e)
    EXPECT_FLOAT_EQ(biasOnly.f()[e], plain.f()[e] + b.f()[e % 8]);
  // Dropping the absent operands is an error, as is a missing input.
  EXPECT_NE(errorOf(ops::LayerNorm{}, {&x, &w}, HostTensor(DType::F32, {2, 8}))
                .find("expected 3 operand"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::LayerNorm{}, {nullptr, &w, &b},
                    HostTensor(DType::F32, {2, 8}))
                .find("required"),
            std::string::npos);
  // A weight that does not fit the normalised shape.
  HostTensor w3 = rng.f32({3});
  EXPECT_NE(errorOf(ops::LayerNorm{}, {&x, &w3, nullptr},
                    HostTensor(DType::F32, {2, 8})),
            "");
  // A weight of shape [1, 8] broadcasts.
  HostTensor w18 = w;
  w18.shape = {1, 8};
  HostTensor a = run(ops::LayerNorm{}, {&x, &w, nullptr}, DType::F32, {2, 8});
  HostTensor c = run(ops::LayerNorm{}, {&x, &w18, nullptr}, DType::F32, {2, 8});
  expectEqual(a, c);
  // A weight of another float dtype is an error, not a silent conversion.
  HostTensor wh = w.to(DType::BF16);
  EXPECT_NE(errorOf(ops::LayerNorm{}, {&x, &wh, nullptr},
                    HostTensor(DType::F32, {2, 8}))
                .find("same element type"),
            std::string::npos);
}

TEST(RmsNorm, WithAndWithoutWeight) {
  Random rng(43);
  const Shape s = {4, 3, 65};
  for (DType dt : kFloatTypes)
    for (int64_t axis : {-1, -2})
      for (int hasWeight = 0; hasWeight <= 1; ++hasWeight) {
        int64_t a = axis + 3;
        HostTensor x = rng.floats(dt, s, -3, 3);
        Shape norm(s.begin() + a, s.end());
        HostTensor w = rng.floats(dt, norm, 0.5, 1.5);
        const double eps = 1e-6;
        int64_t n = numElements(norm);
        std::vector<double> want(x.numel());
        for (int64_t r = 0; r < x.numel() / n; ++r) {
          double ms = 0;
          for (int64_t i = 0; i < n; ++i)
            ms += std::pow(x.at(r * n + i), 2);
          ms /= n;
          for (int64_t i = 0; i < n; ++i)
            want[r * n + i] = x.at(r * n + i) / std::sqrt(ms + eps) *
                              (hasWeight ? w.at(i) : 1.0);
        }
        HostTensor got(dt, s);
        runKernel(ops::RmsNorm{eps, axis}, {&x, hasWeight ? &w : nullptr}, got);
        const Tolerance tol = toleranceFor(dt, 1e-5, 1e-5);
        expectNear(got, want, tol.atol, tol.rtol,
                   std::string("rms_norm ") + dtypeName(dt));
      }
  HostTensor x = rng.f32({2, 4});
  EXPECT_NE(
      errorOf(ops::RmsNorm{}, {&x, nullptr}, HostTensor(DType::F32, {2, 5})),
      "");
}

} // namespace
} // namespace hybrid::cpu::test
