// The CUDA layer_norm and rms_norm against the CPU oracle: short and long
// rows (staged in shared memory or not), few rows (held in registers, a
// decode step's), unaligned rows (no vector loads), normalising over
// several dimensions, absent, in-place and broadcast (expanded into
// scratch) weights and biases.
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class NormTest : public CudaKernelTest {};

struct NormCase {
  Shape in;
  int64_t axis;
  Shape weight; ///< empty: absent
};

const std::vector<NormCase> kNormCases = {
    {{3, 17}, -1, {17}},         {{4, 1000}, -1, {1000}},
    {{2, 13000}, -1, {13000}},   {{5, 768}, -1, {}},
    {{2, 3, 64}, -2, {3, 64}},   {{2, 3, 64}, -2, {64}},
    {{2, 3, 64}, 1, {1, 1, 64}}, {{1, 1}, -1, {1}},
    {{9, 4097}, -1, {1, 4097}},  {{6, 5, 3}, 0, {5, 1}},
    {{2, 11264}, -1, {11264}},   {{2, 11268}, -1, {11268}},
    {{300, 768}, -1, {768}},     {{257, 4100}, -1, {1, 4100}}};

TEST_F(NormTest, LayerNorm) {
  for (DType dt : kFloatTypes)
    for (const NormCase &c : kNormCases)
      for (bool bias : {true, false}) {
        const HostTensor x = randomTensor(dt, c.in, rng, -3, 5);
        const HostTensor w = c.weight.empty()
                                 ? HostTensor::absent()
                                 : randomTensor(dt, c.weight, rng, 0.5, 1.5);
        const HostTensor b = bias && !c.weight.empty()
                                 ? randomTensor(dt, c.weight, rng, -1, 1)
                                 : HostTensor::absent();
        expectMatchesCpu(
            ops::LayerNorm{1e-5, c.axis}, {x, w, b}, {HostTensor(dt, c.in)},
            std::string("layer_norm ") + dtypeName(dt) + " " +
                shapeToString(c.in) + " weight " + shapeToString(c.weight));
      }
}

TEST_F(NormTest, RmsNorm) {
  for (DType dt : kFloatTypes)
    for (const NormCase &c : kNormCases) {
      const HostTensor x = randomTensor(dt, c.in, rng, -3, 5);
      const HostTensor w = c.weight.empty()
                               ? HostTensor::absent()
                               : randomTensor(dt, c.weight, rng, 0.5, 1.5);
      expectMatchesCpu(
          ops::RmsNorm{1e-6, c.axis}, {x, w}, {HostTensor(dt, c.in)},
          std::string("rms_norm ") + dtypeName(dt) + " " + shapeToString(c.in) +
              " weight " + shapeToString(c.weight));
    }
}

TEST_F(NormTest, FewRows) {
  // Decode-step shapes (a row per batch entry), the register kernels'
  // limits (8192 elements, 256 rows) and odd rows (element loads).
  const std::vector<Shape> shapes = {{1, 2048}, {3, 2048}, {32, 2048},
                                     {1, 8192}, {2, 8191}, {256, 64},
                                     {5, 100},  {7, 1},    {1, 3, 2047}};
  for (DType dt : kFloatTypes)
    for (const Shape &in : shapes) {
      const Shape w = {in.back()};
      const HostTensor x = randomTensor(dt, in, rng, -3, 5);
      const std::string what =
          std::string(dtypeName(dt)) + " " + shapeToString(in);
      for (int affine = 0; affine < 3; ++affine) {
        // weight and bias, weight only, neither
        const HostTensor weight = affine < 2
                                      ? randomTensor(dt, w, rng, 0.5, 1.5)
                                      : HostTensor::absent();
        const HostTensor bias = affine == 0 ? randomTensor(dt, w, rng, -1, 1)
                                            : HostTensor::absent();
        // Weight and bias read as given, and settled (loaded before the
        // kernel's wait).
        for (uint32_t settled : {0u, 6u}) {
          const std::string how =
              " affine " + std::to_string(affine) + (settled ? " settled" : "");
          expectMatchesCpu(ops::LayerNorm{1e-5, -1}, {x, weight, bias},
                           {HostTensor(dt, in)}, "layer_norm " + what + how,
                           nullptr, settled);
          if (affine > 0)
            expectMatchesCpu(ops::RmsNorm{1e-6, -1}, {x, weight},
                             {HostTensor(dt, in)}, "rms_norm " + what + how,
                             nullptr, settled & 2u);
        }
      }
    }
}

TEST_F(NormTest, BiasWithoutWeight) {
  const HostTensor x = randomTensor(DType::F32, {3, 33}, rng);
  expectMatchesCpu(
      ops::LayerNorm{1e-5, -1},
      {x, HostTensor::absent(), randomTensor(DType::F32, {33}, rng)},
      {HostTensor(DType::F32, {3, 33})}, "layer_norm bias only");
}

} // namespace
} // namespace hybrid::cuda::test
