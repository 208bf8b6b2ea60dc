// The CUDA matmul and linear (cuBLASLt) against the CPU oracle: odd sizes,
// batches with and without broadcasting, 1-D promotion, large K, K == 0,
// weights both ways round, with and without a bias, every epilogue
// (activation, residual); f32 exactly (no TF32), bf16 and f16 with f32
// accumulation.
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class GemmTest : public CudaKernelTest {};

TEST_F(GemmTest, MatMulShapes) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {{{1, 1}, {1, 1}, {1, 1}},
                                   {{3, 17}, {17, 127}, {3, 127}},
                                   {{127, 64}, {64, 3}, {127, 3}},
                                   {{17, 1000}, {1000, 33}, {17, 33}},
                                   {{2, 3, 5, 7}, {2, 3, 7, 4}, {2, 3, 5, 4}},
                                   {{2, 1, 5, 7}, {1, 3, 7, 4}, {2, 3, 5, 4}},
                                   {{4, 5, 7}, {7, 6}, {4, 5, 6}},
                                   {{5, 7}, {3, 7, 6}, {3, 5, 6}},
                                   {{7}, {7}, {}},
                                   {{7}, {2, 7, 3}, {2, 3}},
                                   {{2, 5, 7}, {7}, {2, 5}},
                                   {{3, 0}, {0, 4}, {3, 4}},
                                   {{64, 128}, {128, 256}, {64, 256}}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases) {
      const Tolerance tol = sumTolerance(dt);
      expectMatchesCpu(ops::MatMul{},
                       {randomTensor(dt, c.a, rng, -1, 1),
                        randomTensor(dt, c.b, rng, -1, 1)},
                       {HostTensor(dt, c.out)},
                       std::string("matmul ") + dtypeName(dt) + " " +
                           shapeToString(c.a) + "x" + shapeToString(c.b),
                       &tol);
    }
}

TEST_F(GemmTest, LinearWeightsAndBias) {
  struct Case {
    Shape in;
    int64_t N;
  };
  const std::vector<Case> cases = {{{1, 1}, 1},      {{3, 17}, 127},
                                   {{2, 5, 64}, 96}, {{127, 1000}, 17},
                                   {{4, 768}, 2304}, {{2, 3, 0}, 5}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      for (bool transposed : {true, false})
        for (bool bias : {true, false}) {
          const int64_t K = c.in.back();
          const Shape w = transposed ? Shape{c.N, K} : Shape{K, c.N};
          Shape out = c.in;
          out.back() = c.N;
          const Tolerance tol = sumTolerance(dt);
          expectMatchesCpu(
              ops::Linear{transposed},
              {randomTensor(dt, c.in, rng, -1, 1),
               randomTensor(dt, w, rng, -1, 1),
               bias ? randomTensor(dt, {c.N}, rng, -1, 1)
                    : HostTensor::absent(),
               HostTensor::absent()},
              {HostTensor(dt, out)},
              std::string("linear ") + dtypeName(dt) + " " +
                  shapeToString(c.in) + " N " + std::to_string(c.N) +
                  (transposed ? " [N,K]" : " [K,N]") + (bias ? " bias" : ""),
              &tol);
        }
}

TEST_F(GemmTest, LinearEpilogues) {
  // Every activation with and without a residual, with and without a bias:
  // cuBLASLt's own epilogues (bias, ReLU, residual as C) and the pass after
  // it (the other activations, an activation before a residual), on shapes
  // cuBLASLt takes and one with an odd leading dimension.
  struct Case {
    Shape in;
    int64_t N;
  };
  const std::vector<Case> cases = {
      {{4, 768}, 2304}, {{2, 5, 64}, 96}, {{3, 17}, 127}, {{1, 256}, 512}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      for (int a = 0; a < kActivations; ++a)
        for (bool residual : {false, true})
          for (bool bias : {true, false}) {
            const Activation act = static_cast<Activation>(a);
            const int64_t K = c.in.back();
            Shape out = c.in;
            out.back() = c.N;
            const Tolerance tol = sumTolerance(dt);
            expectMatchesCpu(ops::Linear{true, act},
                             {randomTensor(dt, c.in, rng, -1, 1),
                              randomTensor(dt, {c.N, K}, rng, -1, 1),
                              bias ? randomTensor(dt, {c.N}, rng, -1, 1)
                                   : HostTensor::absent(),
                              residual ? randomTensor(dt, out, rng, -1, 1)
                                       : HostTensor::absent()},
                             {HostTensor(dt, out)},
                             std::string("linear ") + dtypeName(dt) + " " +
                                 shapeToString(c.in) + " N " +
                                 std::to_string(c.N) + " " +
                                 activationName(act) + (bias ? " bias" : "") +
                                 (residual ? " residual" : ""),
                             &tol);
          }
}

TEST_F(GemmTest, LinearNormPrologue) {
  // A norm prologue inside the skinny GEMM (bf16/f16, a few rows, K a
  // multiple of 8: a decode step's projections, both weight layouts) and
  // as its own kernel before the product (more rows, odd K, f32), against
  // the CPU kernel; with and without the norm's weight and bias, with the
  // epilogue; with the weight settled (its loads before the wait, the
  // prologue after) or not.
  struct Case {
    Shape in;
    int64_t N;
  };
  const std::vector<Case> cases = {
      {{1, 768}, 2304}, {{1, 1, 2048}, 512}, {{3, 2048}, 96}, {{8, 64}, 200},
      {{2, 4, 64}, 33}, {{20, 256}, 64},     {{2, 36}, 40}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      for (NormKind norm : {NormKind::LayerNorm, NormKind::RmsNorm})
        for (int operands = 0; operands < 3; ++operands) {
          const int64_t K = c.in.back();
          const bool hasWeight = operands >= 1;
          const bool hasBias = operands == 2 && norm == NormKind::LayerNorm;
          const bool trans = operands != 1;
          Shape out = c.in;
          out.back() = c.N;
          const Tolerance tol = sumTolerance(dt);
          const uint32_t settled = operands == 2 ? 0u : 1u << 1;
          expectMatchesCpu(
              ops::Linear{trans, Activation::GeluTanh, norm, 1e-5},
              {randomTensor(dt, c.in, rng, -2, 3),
               randomTensor(dt, trans ? Shape{c.N, K} : Shape{K, c.N}, rng, -1,
                            1),
               randomTensor(dt, {c.N}, rng, -1, 1),
               randomTensor(dt, out, rng, -1, 1),
               hasWeight ? randomTensor(dt, {K}, rng, 0.5, 1.5)
                         : HostTensor::absent(),
               hasBias ? randomTensor(dt, {K}, rng, -1, 1)
                       : HostTensor::absent()},
              {HostTensor(dt, out)},
              std::string("linear norm ") + dtypeName(dt) + " " +
                  shapeToString(c.in) + " N " + std::to_string(c.N) +
                  (trans ? " [N,K]" : " [K,N]") +
                  (norm == NormKind::LayerNorm ? " layer" : " rms") +
                  (hasWeight ? " weight" : "") + (hasBias ? " bias" : "") +
                  (settled ? " settled" : ""),
              &tol, settled);
        }
}

TEST_F(GemmTest, RepeatedShapesReuseTheCachedPlan) {
  // The second call of a shape takes its plan from the context; results
  // must not change.
  for (int i = 0; i < 3; ++i) {
    const Tolerance tol = sumTolerance(DType::BF16);
    expectMatchesCpu(
        ops::Linear{true},
        {randomTensor(DType::BF16, {8, 256}, rng, -1, 1),
         randomTensor(DType::BF16, {512, 256}, rng, -1, 1),
         randomTensor(DType::BF16, {512}, rng, -1, 1), HostTensor::absent()},
        {HostTensor(DType::BF16, {8, 512})}, "linear repeated", &tol);
  }
}

} // namespace
} // namespace hybrid::cuda::test
