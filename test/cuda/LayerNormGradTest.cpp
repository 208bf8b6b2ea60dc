// The CUDA layer_norm_grad against the CPU oracle: rows held in registers
// (up to 8192 elements, every chunk count; unaligned widths without vector
// loads) and longer rows read per pass, one row to more rows than row
// blocks (blocks that take several rows, so their column sums add up in
// registers across rows), normalising over several dimensions, with and
// without weight. Tolerance: sumTolerance (f32 1e-4, bf16 1e-2, f16 3e-3
// relative plus the same times the result's largest magnitude): the
// statistics and row means are double on both, but the GPU adds them in
// another order and sums grad_weight / grad_bias in f32 (the CPU in double).
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class LayerNormGradTest : public CudaKernelTest {};

struct GradCase {
  Shape in;
  int64_t axis;
};

const std::vector<GradCase> kGradCases = {
    {{1, 1}, -1},     {{3, 5}, -1},      {{37, 129}, -1},   {{37, 2048}, -1},
    {{3, 8191}, -1},  {{2, 8192}, -1},   {{5, 8200}, -1},   {{1, 12288}, -1},
    {{2, 3, 64}, 1},  {{4, 3, 5}, -2},   {{600, 1024}, -1}, {{4096, 2048}, -1},
    {{1031, 77}, -1}, {{2, 513, 8}, -1}, {{8, 3, 5}, 0}};

TEST_F(LayerNormGradTest, MatchesCpu) {
  for (DType dt : kFloatTypes)
    for (const GradCase &c : kGradCases)
      for (bool hasWeight : {true, false}) {
        const int64_t rank = static_cast<int64_t>(c.in.size());
        const Shape norm(c.in.begin() + (c.axis < 0 ? c.axis + rank : c.axis),
                         c.in.end());
        const HostTensor x = randomTensor(dt, c.in, rng, -3, 5);
        const HostTensor g = randomTensor(dt, c.in, rng, -1, 1);
        const HostTensor w = hasWeight ? randomTensor(dt, norm, rng, 0.5, 1.5)
                                       : HostTensor::absent();
        const Tolerance tol = sumTolerance(dt);
        expectMatchesCpu(
            ops::LayerNormGrad{1e-5, c.axis}, {x, w, g},
            {HostTensor(dt, c.in), HostTensor(dt, norm), HostTensor(dt, norm)},
            std::string("layer_norm_grad ") + dtypeName(dt) + " " +
                shapeToString(c.in) + " axis " + std::to_string(c.axis) +
                (hasWeight ? " weight" : " no weight"),
            &tol);
      }
}

TEST_F(LayerNormGradTest, NoRowsGivesZeroParameterGradients) {
  const HostTensor x(DType::F32, {0, 6}), g(DType::F32, {0, 6});
  const std::vector<HostTensor> got =
      runCuda(ops::LayerNormGrad{}, {x, HostTensor::absent(), g},
              {HostTensor(DType::F32, {0, 6}), HostTensor(DType::F32, {6}),
               HostTensor(DType::F32, {6})});
  const HostTensor zeros(DType::F32, {6});
  expectClose(got[1], zeros, defaultTolerance(DType::F32), "grad_weight");
  expectClose(got[2], zeros, defaultTolerance(DType::F32), "grad_bias");
}

TEST_F(LayerNormGradTest, SameBitsEveryRun) {
  // The column sums meet in a fixed order.
  const HostTensor x = randomTensor(DType::BF16, {1000, 768}, rng, -3, 5);
  const HostTensor g = randomTensor(DType::BF16, {1000, 768}, rng, -1, 1);
  const HostTensor w = randomTensor(DType::BF16, {768}, rng, 0.5, 1.5);
  const std::vector<HostTensor> results = {HostTensor(DType::BF16, {1000, 768}),
                                           HostTensor(DType::BF16, {768}),
                                           HostTensor(DType::BF16, {768})};
  const std::vector<HostTensor> first =
      runCuda(ops::LayerNormGrad{}, {x, w, g}, results);
  const std::vector<HostTensor> second =
      runCuda(ops::LayerNormGrad{}, {x, w, g}, results);
  for (size_t i = 0; i < 3; ++i)
    expectClose(second[i], first[i], Tolerance{},
                "result " + std::to_string(i));
}

} // namespace
} // namespace hybrid::cuda::test
