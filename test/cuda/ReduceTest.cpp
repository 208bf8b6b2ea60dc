// The CUDA reductions, cumsum and softmax against the CPU oracle: every kind,
// axis sets that keep or reduce the contiguous run, long rows (block paths),
// many rows into few outputs and few long outputs (split over blocks),
// whole rows of a multiple of 8 (the vector path of bias gradients),
// empty reductions, integer wrapping, bool any/all and -inf rows.
#include "CudaTestSupport.h"

#include <limits>

namespace hybrid::cuda::test {
namespace {

class ReduceTest : public CudaKernelTest {};

/// The result shape of reducing `in` over `axes` (all when empty).
Shape reducedShape(const Shape &in, std::vector<int64_t> axes, bool keep) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes)
    reduced[a < 0 ? a + rank : a] = true;
  Shape out;
  for (int64_t d = 0; d < rank; ++d)
    if (!reduced[d])
      out.push_back(in[d]);
    else if (keep)
      out.push_back(1);
  return out;
}

TEST_F(ReduceTest, EveryKindAxesAndDtype) {
  struct Case {
    Shape in;
    std::vector<int64_t> axes;
  };
  const std::vector<Case> cases = {
      {{3, 17}, {-1}},
      {{3, 17}, {0}},
      {{4, 5, 6}, {0, 2}},
      {{4, 5, 6}, {1}},
      {{4, 5, 6}, {}},
      {{2, 3, 4, 5}, {1, 3}},
      {{7, 5000}, {1}},
      {{5000, 3}, {0}},
      {{1}, {0}},
      {{2, 1, 3}, {1}},
      {{127, 33}, {0, 1}},
      // Few outputs over many rows: rows split over blocks (partials in
      // scratch), one reduced run and two.
      {{8, 300, 70}, {0, 1}},
      {{64, 3, 40, 33}, {0, 2}},
      // Whole rows of a multiple of 8 (a bias gradient): a 16-byte load
      // per thread and row, with and without splits.
      {{8, 300, 64}, {0, 1}},
      {{1000, 520}, {0}},
      {{40, 8}, {0}},
      // Few long outputs: each output's elements split over blocks (a
      // whole-tensor norm, rows of 70000).
      {{300, 1000}, {}},
      {{3, 70000}, {1}}};
  for (int k = 0; k < kReduceKinds; ++k) {
    const auto kind = static_cast<ReduceKind>(k);
    for (DType dt :
         {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64})
      for (const Case &c : cases)
        for (bool keep : {true, false}) {
          // Products stay finite near 1; integer sums wrap where they may.
          HostTensor x =
              kind == ReduceKind::Prod
                  ? (isIntegerDType(dt) ? randomTensor(dt, c.in, rng, -2, 2)
                                        : randomTensor(dt, c.in, rng, 0.9, 1.1))
                  : randomTensor(dt, c.in, rng, -100, 100);
          ops::Reduce attrs{kind, c.axes, keep};
          expectMatchesCpu(attrs, {x},
                           {HostTensor(dt, reducedShape(c.in, c.axes, keep))},
                           std::string(reduceKindName(kind)) + " " +
                               dtypeName(dt) + " " + shapeToString(c.in),
                           nullptr);
        }
  }
}

TEST_F(ReduceTest, BoolAnyAllAndNaN) {
  for (ReduceKind kind : {ReduceKind::Max, ReduceKind::Min})
    for (const std::vector<int64_t> &axes :
         std::vector<std::vector<int64_t>>{{0}, {1}, {}}) {
      HostTensor x = randomTensor(DType::Bool, {9, 33}, rng);
      expectMatchesCpu(
          ops::Reduce{kind, axes, false}, {x},
          {HostTensor(DType::Bool, reducedShape({9, 33}, axes, false))},
          std::string("bool ") + reduceKindName(kind));
      HostTensor f = randomTensor(DType::F32, {9, 33}, rng);
      f.set(40, std::numeric_limits<double>::quiet_NaN());
      expectMatchesCpu(
          ops::Reduce{kind, axes, false}, {f},
          {HostTensor(DType::F32, reducedShape({9, 33}, axes, false))},
          std::string("NaN ") + reduceKindName(kind));
    }
}

TEST_F(ReduceTest, EmptyReductionGivesTheIdentity) {
  for (int k = 0; k < kReduceKinds; ++k)
    for (DType dt : {DType::F32, DType::BF16, DType::I64}) {
      const auto kind = static_cast<ReduceKind>(k);
      if (kind == ReduceKind::Mean && isIntegerDType(dt))
        continue; // an error on both
      expectMatchesCpu(ops::Reduce{kind, {1}, true},
                       {HostTensor(dt, {3, 0, 4})}, {HostTensor(dt, {3, 1, 4})},
                       std::string("empty ") + reduceKindName(kind));
    }
}

TEST_F(ReduceTest, CumSumAxesExclusiveReverse) {
  struct Case {
    Shape in;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{17}, 0},      {{3, 1000}, -1},
                                   {{2, 3000}, 1}, {{1000, 3}, 0},
                                   {{4, 5, 6}, 1}, {{}, 0}};
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64})
    for (const Case &c : cases)
      for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
          HostTensor x = isIntegerDType(dt)
                             ? randomTensor(dt, c.in, rng, -1000, 1000)
                             : randomTensor(dt, c.in, rng, -1, 1);
          const Tolerance tol = sumTolerance(dt);
          expectMatchesCpu(ops::CumSum{c.axis, exclusive, reverse}, {x},
                           {HostTensor(dt, c.in)},
                           std::string("cumsum ") + dtypeName(dt) + " " +
                               shapeToString(c.in) +
                               (exclusive ? " exclusive" : "") +
                               (reverse ? " reverse" : ""),
                           isFloatDType(dt) ? &tol : nullptr);
        }
}

TEST_F(ReduceTest, SoftmaxRowsAndColumns) {
  struct Case {
    Shape in;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{3, 1}, -1},     {{5, 17}, -1}, {{4, 1000}, 1}, {{2, 3000}, -1},
      {{7, 50257}, -1}, {{17, 5}, 0},  {{3, 4, 5}, 1}, {{}, 0}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      for (bool log : {false, true})
        expectMatchesCpu(ops::Softmax{c.axis, log},
                         {randomTensor(dt, c.in, rng, -8, 8)},
                         {HostTensor(dt, c.in)},
                         std::string(log ? "log_softmax " : "softmax ") +
                             dtypeName(dt) + " " + shapeToString(c.in));
}

TEST_F(ReduceTest, SoftmaxOfAnAllMinusInfRowIsNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  HostTensor x = tensorOf(DType::F32, {2, 3}, {-inf, -inf, -inf, 1, 2, -inf});
  for (bool log : {false, true})
    expectMatchesCpu(ops::Softmax{-1, log}, {x},
                     {HostTensor(DType::F32, {2, 3})}, "softmax -inf row");
}

} // namespace
} // namespace hybrid::cuda::test
