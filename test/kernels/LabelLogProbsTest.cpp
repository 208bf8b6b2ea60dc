// label_log_probs and label_log_probs_grad against a double-precision
// reference of log_softmax at the label and its vector-Jacobian product:
// odd vocabularies, ignored (-100) and out-of-range labels, i32 and i64
// labels, every float type.
#include "KernelTestSupport.h"

#include <cmath>

namespace hybrid::cpu::test {
namespace {

/// Labels in [0, V), with every fifth -100 and the seventh past the end.
HostTensor someLabels(Random &rng, DType dt, const Shape &shape,
                      int64_t vocab) {
  HostTensor labels(dt, shape);
  for (int64_t k = 0; k < labels.numel(); ++k) {
    int64_t label = rng.integer(0, vocab - 1);
    if (k % 5 == 4)
      label = -100;
    else if (k % 7 == 6)
      label = vocab + k;
    labels.set(k, static_cast<double>(label));
  }
  return labels;
}

/// log_softmax(x)[label] and grad (onehot - softmax) in double.
struct LabelRef {
  std::vector<double> logProbs, gradLogits;
};

LabelRef labelRef(const HostTensor &x, const HostTensor &labels,
                  const HostTensor &g, int64_t vocab) {
  const int64_t rows = labels.numel();
  LabelRef ref{std::vector<double>(rows, 0.0),
               std::vector<double>(rows * vocab, 0.0)};
  for (int64_t r = 0; r < rows; ++r) {
    const auto label = static_cast<int64_t>(labels.at(r));
    if (label < 0 || label >= vocab)
      continue;
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < vocab; ++j)
      m = std::max(m, x.at(r * vocab + j));
    for (int64_t j = 0; j < vocab; ++j)
      sum += std::exp(x.at(r * vocab + j) - m);
    ref.logProbs[r] = x.at(r * vocab + label) - m - std::log(sum);
    for (int64_t j = 0; j < vocab; ++j)
      ref.gradLogits[r * vocab + j] =
          g.at(r) *
          ((j == label ? 1.0 : 0.0) - std::exp(x.at(r * vocab + j) - m) / sum);
  }
  return ref;
}

void checkLabelLogProbs(Random &rng, DType dt, DType labelType,
                        const Shape &rowShape, int64_t vocab) {
  Shape shape = rowShape;
  shape.push_back(vocab);
  HostTensor x = rng.floats(dt, shape, -8, 8);
  HostTensor labels = someLabels(rng, labelType, rowShape, vocab);
  HostTensor g = rng.f32(rowShape, -2, 2);
  HostTensor lp(DType::F32, rowShape), dx(dt, shape);
  runKernel(ops::LabelLogProbs{}, {&x, &labels}, lp);
  runKernel(ops::LabelLogProbsGrad{}, {&x, &labels, &g}, dx);
  const LabelRef want = labelRef(x, labels, g, vocab);
  const std::string what = std::string("label_log_probs ") + dtypeName(dt) +
                           " labels " + dtypeName(labelType) + " " +
                           shapeToString(shape);
  // Computed in f32 from the stored logits: only the f32 arithmetic
  // differs from the reference; the gradient is rounded once to dt.
  expectNear(lp, want.logProbs, 1e-5, 1e-5, what);
  const Tolerance tol = toleranceFor(dt, 1e-6, 1e-5);
  expectNear(dx, want.gradLogits, tol.atol, tol.rtol, what + " grad");
}

TEST(LabelLogProbs, OddVocabulariesAndIgnoredLabels) {
  Random rng(71);
  for (DType dt : kFloatTypes)
    for (DType labelType : {DType::I64, DType::I32})
      for (int64_t vocab : {1, 7, 64, 1000, 5003})
        checkLabelLogProbs(rng, dt, labelType, {3, 7}, vocab);
}

TEST(LabelLogProbs, RowsOfAnyRank) {
  Random rng(72);
  checkLabelLogProbs(rng, DType::BF16, DType::I64, {}, 33);
  checkLabelLogProbs(rng, DType::F32, DType::I64, {37}, 129);
  checkLabelLogProbs(rng, DType::BF16, DType::I64, {2, 3, 5}, 50);
}

TEST(LabelLogProbs, IgnoredRowsAreZeroWithoutReadingTheirLogits) {
  // NaN logits in an ignored row change nothing.
  HostTensor x = f32({2, 3}, {NAN, NAN, NAN, 1, 2, 3});
  HostTensor labels = i64({2}, {-100, 2}), g = f32({2}, {1, 1});
  HostTensor lp(DType::F32, {2}), dx(DType::F32, {2, 3});
  runKernel(ops::LabelLogProbs{}, {&x, &labels}, lp);
  runKernel(ops::LabelLogProbsGrad{}, {&x, &labels, &g}, dx);
  const double logSum = std::log(std::exp(-2.0) + std::exp(-1.0) + 1.0);
  expectNear(lp, {0, -logSum});
  const double p[] = {std::exp(-2.0 - logSum), std::exp(-1.0 - logSum),
                      std::exp(-logSum)};
  expectNear(dx, {0, 0, 0, -p[0], -p[1], 1 - p[2]});
}

TEST(LabelLogProbs, RejectsMismatchedOperands) {
  Random rng(73);
  HostTensor x = rng.f32({2, 3, 8}), labels = rng.i64({2, 3}, 0, 7),
             badLabels = rng.i64({2, 4}, 0, 7), g = rng.f32({2, 3});
  EXPECT_NE(errorOf(ops::LabelLogProbs{}, {&x, &badLabels},
                    HostTensor(DType::F32, {2, 4}))
                .find("labels"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::LabelLogProbs{}, {&x, &labels},
                    HostTensor(DType::BF16, {2, 3}))
                .find("result"),
            std::string::npos);
  HostTensor gh = g.to(DType::BF16);
  EXPECT_NE(errorOf(ops::LabelLogProbsGrad{}, {&x, &labels, &gh},
                    HostTensor(DType::F32, {2, 3, 8}))
                .find("grad"),
            std::string::npos);
  HostTensor floatLabels = rng.f32({2, 3});
  EXPECT_NE(errorOf(ops::LabelLogProbs{}, {&x, &floatLabels},
                    HostTensor(DType::F32, {2, 3}))
                .find("labels"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
