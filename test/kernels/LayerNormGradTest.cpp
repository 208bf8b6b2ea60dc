// layer_norm_grad against a double-precision reference of layer norm's
// vector-Jacobian product.
#include "KernelTestSupport.h"

namespace hybrid::cpu::test {
namespace {

/// The three gradients in double, from the (rounded) operands.
struct LayerNormGradRef {
  std::vector<double> input, weight, bias;
};

LayerNormGradRef layerNormGradRef(const HostTensor &x, const HostTensor *w,
                                  const HostTensor &g, int64_t n, double eps) {
  const int64_t rows = x.numel() / n;
  LayerNormGradRef ref{std::vector<double>(x.numel()),
                       std::vector<double>(n, 0.0),
                       std::vector<double>(n, 0.0)};
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i)
      mean += x.at(r * n + i);
    mean /= n;
    for (int64_t i = 0; i < n; ++i)
      var += std::pow(x.at(r * n + i) - mean, 2);
    const double rstd = 1 / std::sqrt(var / n + eps);
    std::vector<double> xhat(n), dxhat(n);
    double meanGrad = 0, meanDot = 0;
    for (int64_t i = 0; i < n; ++i) {
      xhat[i] = (x.at(r * n + i) - mean) * rstd;
      dxhat[i] = g.at(r * n + i) * (w ? w->at(i) : 1.0);
      meanGrad += dxhat[i] / n;
      meanDot += dxhat[i] * xhat[i] / n;
      ref.weight[i] += g.at(r * n + i) * xhat[i];
      ref.bias[i] += g.at(r * n + i);
    }
    for (int64_t i = 0; i < n; ++i)
      ref.input[r * n + i] = rstd * (dxhat[i] - meanGrad - xhat[i] * meanDot);
  }
  return ref;
}

/// Runs the kernel on random operands and compares its three results.
void checkLayerNormGrad(Random &rng, DType dt, const Shape &shape, int64_t axis,
                        bool hasWeight) {
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
  const Shape norm(shape.begin() + a, shape.end());
  const int64_t n = numElements(norm);
  HostTensor x = rng.floats(dt, shape, -3, 5), g = rng.floats(dt, shape, -1, 1),
             w = rng.floats(dt, norm, 0.5, 1.5);
  const double eps = 1e-5;
  HostTensor dx(dt, shape), dw(dt, norm), db(dt, norm);
  runKernelOnResults(ops::LayerNormGrad{eps, axis},
                     {&x, hasWeight ? &w : nullptr, &g}, {&dx, &dw, &db});
  const LayerNormGradRef want =
      layerNormGradRef(x, hasWeight ? &w : nullptr, g, n, eps);
  const std::string what = std::string("layer_norm_grad ") + dtypeName(dt) +
                           " " + shapeToString(shape) + " axis " +
                           std::to_string(axis) +
                           (hasWeight ? " weight" : " no weight");
  // Each result is rounded once from f32 arithmetic; the column sums add
  // up to 37 rows of f32 products.
  const Tolerance tol = toleranceFor(dt, 2e-5, 1e-4);
  expectNear(dx, want.input, tol.atol, tol.rtol, what + " grad_input");
  expectNear(dw, want.weight, tol.atol, tol.rtol, what + " grad_weight");
  expectNear(db, want.bias, tol.atol, tol.rtol, what + " grad_bias");
}

TEST(LayerNormGrad, OddRowsAndWidths) {
  Random rng(44);
  for (DType dt : kFloatTypes)
    for (int64_t rows : {1, 3, 37})
      for (int64_t d : {1, 5, 129, 2048})
        for (bool hasWeight : {false, true})
          checkLayerNormGrad(rng, dt, {rows, d}, -1, hasWeight);
}

TEST(LayerNormGrad, AxisOverSeveralDims) {
  Random rng(45);
  for (DType dt : kFloatTypes)
    for (int64_t axis : {1, -2, 0})
      for (bool hasWeight : {false, true})
        checkLayerNormGrad(rng, dt, {3, 5, 7}, axis, hasWeight);
}

TEST(LayerNormGrad, NoRowsGivesZeroParameterGradients) {
  HostTensor x(DType::F32, {0, 4}), g(DType::F32, {0, 4}),
      dx(DType::F32, {0, 4}), dw(DType::F32, {4}), db(DType::F32, {4});
  runKernelOnResults(ops::LayerNormGrad{}, {&x, nullptr, &g}, {&dx, &dw, &db});
  expectNear(dw, {0, 0, 0, 0});
  expectNear(db, {0, 0, 0, 0});
}

TEST(LayerNormGrad, RejectsMismatchedOperands) {
  Random rng(46);
  HostTensor x = rng.f32({2, 8}), g = rng.f32({2, 8}), w3 = rng.f32({3}),
             dx(DType::F32, {2, 8}), dw(DType::F32, {8}), db(DType::F32, {8});
  auto error = [&](std::vector<const HostTensor *> operands,
                   std::vector<HostTensor *> results) -> std::string {
    try {
      runKernelOnResults(ops::LayerNormGrad{}, operands, results);
    } catch (const Error &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(error({&x, nullptr, nullptr}, {&dx, &dw, &db}).find("grad_out"),
            std::string::npos);
  EXPECT_NE(error({&x, &w3, &g}, {&dx, &dw, &db}).find("weight"),
            std::string::npos);
  HostTensor dw3(DType::F32, {3});
  EXPECT_NE(error({&x, nullptr, &g}, {&dx, &dw3, &db}).find("grad_weight"),
            std::string::npos);
  HostTensor gh = g.to(DType::BF16);
  EXPECT_NE(error({&x, nullptr, &gh}, {&dx, &dw, &db}).find("grad_out"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
