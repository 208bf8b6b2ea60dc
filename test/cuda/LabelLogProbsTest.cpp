// The CUDA label_log_probs and label_log_probs_grad against the CPU oracle:
// a warp per row (short vocabularies) and a block per row (long ones, GPT-2's
// and OPT's 50257 / 50272 among them), 16-byte loads where every row is
// aligned and element loads where it is not (odd vocabularies), i32 and
// i64 labels, ignored (-100) and out-of-range labels, every float type.
// Tolerance: the log-probabilities are f32 on both, the sums added in
// another order (1e-5 relative plus 1e-5); the gradient is one rounding
// apart, its f32 softmax from sums in another order (defaultTolerance, f32
// at 2e-5, plus 1e-7 for tiny probabilities).
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class LabelLogProbsTest : public CudaKernelTest {};

/// Labels in [0, V), every fifth -100 and every seventh past the end.
HostTensor someLabels(DType dt, const Shape &shape, int64_t vocab,
                      std::mt19937 &rng) {
  HostTensor labels(dt, shape);
  std::uniform_int_distribution<int64_t> pick(0, vocab - 1);
  for (int64_t k = 0; k < labels.numel(); ++k) {
    int64_t label = pick(rng);
    if (k % 5 == 4)
      label = -100;
    else if (k % 7 == 6)
      label = vocab + k;
    labels.set(k, static_cast<double>(label));
  }
  return labels;
}

struct LabelCase {
  Shape rows;
  int64_t vocab;
};

const std::vector<LabelCase> kLabelCases = {
    {{1}, 1},       {{3}, 7},       {{2, 5}, 64},    {{37}, 1000},
    {{3, 7}, 5003}, {{4, 3}, 8192}, {{2, 9}, 50257}, {{8, 33}, 50272}};

TEST_F(LabelLogProbsTest, MatchesCpu) {
  for (DType dt : kFloatTypes)
    for (DType labelType : {DType::I64, DType::I32})
      for (const LabelCase &c : kLabelCases) {
        Shape shape = c.rows;
        shape.push_back(c.vocab);
        const HostTensor x = randomTensor(dt, shape, rng, -8, 8);
        const HostTensor labels = someLabels(labelType, c.rows, c.vocab, rng);
        const HostTensor g = randomTensor(DType::F32, c.rows, rng, -2, 2);
        const std::string what = std::string(dtypeName(dt)) + " labels " +
                                 dtypeName(labelType) + " " +
                                 shapeToString(shape);
        const Tolerance lpTol{1e-5, 1e-5};
        expectMatchesCpu(ops::LabelLogProbs{}, {x, labels},
                         {HostTensor(DType::F32, c.rows)},
                         "label_log_probs " + what, &lpTol);
        Tolerance gradTol = defaultTolerance(dt);
        gradTol.rtol = std::max(gradTol.rtol, 2e-5);
        gradTol.atol = std::max(gradTol.atol, 1e-7);
        expectMatchesCpu(ops::LabelLogProbsGrad{}, {x, labels, g},
                         {HostTensor(dt, shape)},
                         "label_log_probs_grad " + what, &gradTol);
      }
}

TEST_F(LabelLogProbsTest, SameBitsEveryRun) {
  const HostTensor x = randomTensor(DType::BF16, {64, 50272}, rng, -8, 8);
  const HostTensor labels = someLabels(DType::I64, {64}, 50272, rng);
  const HostTensor g = randomTensor(DType::F32, {64}, rng, -2, 2);
  for (int pass = 0; pass < 2; ++pass) {
    const Op op =
        pass == 0 ? Op{ops::LabelLogProbs{}} : Op{ops::LabelLogProbsGrad{}};
    const std::vector<HostTensor> operands =
        pass == 0 ? std::vector<HostTensor>{x, labels}
                  : std::vector<HostTensor>{x, labels, g};
    const std::vector<HostTensor> results = {
        pass == 0 ? HostTensor(DType::F32, {64})
                  : HostTensor(DType::BF16, {64, 50272})};
    const std::vector<HostTensor> first = runCuda(op, operands, results);
    const std::vector<HostTensor> second = runCuda(op, operands, results);
    expectClose(second[0], first[0], Tolerance{}, opName(op));
  }
}

} // namespace
} // namespace hybrid::cuda::test
