// The CUDA elementwise kernels (binary, unary, clip, select, cast) against the
// CPU oracle on random inputs: every kind and dtype, odd sizes, broadcasting.
#include "CudaTestSupport.h"

#include <cmath>
#include <limits>

namespace hybrid::cuda::test {
namespace {

/// Operand shape pairs: equal (odd sizes), a broadcast row, both sides
/// broadcasting, a scalar.
const std::vector<std::pair<Shape, Shape>> kBinaryShapes = {
    {{1}, {1}},
    {{127}, {127}},
    {{3, 17}, {17}},
    {{4, 1, 5}, {3, 1}},
    {{}, {1000}},
    {{2, 3, 17}, {2, 1, 17}},
    // Innermost dimensions of a multiple of 4: groups of results per thread
    // (vector loads where both operands step by 1, a broadcast column).
    {{4, 6, 8}, {4, 6, 8}},
    {{8, 12}, {8, 1}},
    {{6, 4, 20}, {20}}};

bool isComparison(BinaryKind k) {
  return k >= BinaryKind::Equal && k <= BinaryKind::GreaterEqual;
}
bool isLogic(BinaryKind k) { return k >= BinaryKind::And; }

/// Operands suited to the kind: no zero integer divisors, small integer
/// powers, positive float bases for pow, shared values for comparisons.
std::pair<HostTensor, HostTensor> binaryOperands(BinaryKind kind, DType dt,
                                                 const Shape &a, const Shape &b,
                                                 std::mt19937 &rng) {
  HostTensor lhs, rhs;
  if (kind == BinaryKind::Pow) {
    lhs = isIntegerDType(dt) ? randomTensor(dt, a, rng, -5, 5)
                             : randomTensor(dt, a, rng, 0.1, 2);
    rhs = isIntegerDType(dt) ? randomTensor(dt, b, rng, 0, 6)
                             : randomTensor(dt, b, rng, -2, 2);
  } else if (isIntegerDType(dt)) {
    lhs = randomTensor(dt, a, rng, -1000, 1000);
    rhs = randomTensor(dt, b, rng, 1, 50);
    std::bernoulli_distribution negative(0.5);
    for (int64_t k = 0; k < rhs.numel(); ++k) // non-zero, either sign
      if (negative(rng))
        rhs.set(k, -rhs.at(k));
  } else {
    lhs = randomTensor(dt, a, rng, -3, 3);
    rhs = randomTensor(dt, b, rng, -3, 3);
  }
  if (isComparison(kind)) // some equal pairs
    for (int64_t k = 0; k < std::min(lhs.numel(), rhs.numel()); k += 3)
      rhs.set(k, lhs.at(k));
  return {lhs, rhs};
}

class ElementwiseTest : public CudaKernelTest {};

TEST_F(ElementwiseTest, BinaryEveryKindAndDtype) {
  const std::vector<DType> numeric = {DType::F32, DType::BF16, DType::F16,
                                      DType::I32, DType::I64};
  for (int k = 0; k < kBinaryKinds; ++k) {
    const auto kind = static_cast<BinaryKind>(k);
    std::vector<DType> dtypes = numeric;
    if (isComparison(kind))
      dtypes.push_back(DType::Bool);
    if (isLogic(kind))
      dtypes = {DType::Bool};
    for (DType dt : dtypes)
      for (const auto &[a, b] : kBinaryShapes) {
        auto [lhs, rhs] = binaryOperands(kind, dt, a, b, rng);
        // The broadcast shape, computed as NumPy does.
        Shape shape(std::max(a.size(), b.size()), 1);
        for (size_t i = 0; i < shape.size(); ++i) {
          const int64_t da =
              i + a.size() >= shape.size() ? a[i + a.size() - shape.size()] : 1;
          const int64_t db =
              i + b.size() >= shape.size() ? b[i + b.size() - shape.size()] : 1;
          shape[i] = std::max(da, db);
        }
        const DType rt = isComparison(kind) || isLogic(kind) ? DType::Bool : dt;
        const Op op = ops::Binary{kind};
        expectMatchesCpu(op, {lhs, rhs}, {HostTensor(rt, shape)},
                         std::string(binaryKindName(kind)) + " " +
                             dtypeName(dt) + " " + shapeToString(a) + "x" +
                             shapeToString(b));
        // Swapped sides broadcast the other way (where the CPU oracle
        // accepts any left operand as a right one).
        if (kind == BinaryKind::Div || kind == BinaryKind::Mod ||
            kind == BinaryKind::FMod || kind == BinaryKind::Pow)
          continue;
        expectMatchesCpu(op, {rhs, lhs}, {HostTensor(rt, shape)},
                         std::string(binaryKindName(kind)) + " swapped " +
                             dtypeName(dt) + " " + shapeToString(b) + "x" +
                             shapeToString(a));
      }
  }
}

TEST_F(ElementwiseTest, FloatSpecialValuesPropagate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> a = {nan, 1, -inf, 2.5, -7.25, 0.5};
  const std::vector<double> b = {1, nan, 3, inf, 2, -0.75};
  for (DType dt : kFloatTypes)
    for (BinaryKind kind :
         {BinaryKind::Max, BinaryKind::Min, BinaryKind::Add, BinaryKind::Mod,
          BinaryKind::FMod, BinaryKind::Less, BinaryKind::Equal})
      expectMatchesCpu(ops::Binary{kind},
                       {tensorOf(dt, {6}, a), tensorOf(dt, {6}, b)},
                       {HostTensor(isComparison(kind) ? DType::Bool : dt, {6})},
                       std::string("specials ") + binaryKindName(kind) + " " +
                           dtypeName(dt));
}

TEST_F(ElementwiseTest, UnaryEveryKindAndDtype) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (int k = 0; k < kUnaryKinds; ++k) {
    const auto kind = static_cast<UnaryKind>(k);
    std::vector<DType> dtypes = kFloatTypes;
    if (kind == UnaryKind::Neg || kind == UnaryKind::Abs ||
        kind == UnaryKind::Sign || kind == UnaryKind::Relu) {
      dtypes.push_back(DType::I32);
      dtypes.push_back(DType::I64);
    }
    if (kind == UnaryKind::Not)
      dtypes = {DType::Bool};
    const bool positive = kind == UnaryKind::Log || kind == UnaryKind::Sqrt ||
                          kind == UnaryKind::Rsqrt;
    const bool test = kind == UnaryKind::IsNan || kind == UnaryKind::IsInf;
    for (DType dt : dtypes)
      for (const Shape &shape :
           std::vector<Shape>{{1}, {17}, {3, 127}, {1000}, {5, 36}}) {
        HostTensor x = isIntegerDType(dt)
                           ? randomTensor(dt, shape, rng, -1000, 1000)
                       : positive ? randomTensor(dt, shape, rng, 0.01, 10)
                                  : randomTensor(dt, shape, rng, -4, 4);
        if (test && x.numel() >= 3) {
          x.set(0, nan);
          x.set(1, inf);
          x.set(2, -inf);
        }
        const DType rt = test || kind == UnaryKind::Not ? DType::Bool : dt;
        expectMatchesCpu(ops::Unary{kind}, {x}, {HostTensor(rt, shape)},
                         std::string(unaryKindName(kind)) + " " +
                             dtypeName(dt) + " " + shapeToString(shape));
      }
  }
}

TEST_F(ElementwiseTest, GeluOverAWideRange) {
  for (DType dt : kFloatTypes)
    for (UnaryKind kind : {UnaryKind::GeluErf, UnaryKind::GeluTanh,
                           UnaryKind::Silu, UnaryKind::Sigmoid}) {
      HostTensor x = randomTensor(dt, {4097}, rng, -30, 30);
      expectMatchesCpu(ops::Unary{kind}, {x}, {HostTensor(dt, {4097})},
                       std::string(unaryKindName(kind)) + " wide " +
                           dtypeName(dt));
    }
}

TEST_F(ElementwiseTest, ClipBounds) {
  struct Bounds {
    std::optional<double> lo, hi;
  };
  const std::vector<Bounds> bounds = {{-0.5, 0.75},
                                      {std::nullopt, 1.25},
                                      {-1.5, std::nullopt},
                                      {1, -1},
                                      {-2.5, 3.5}};
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64})
    for (const Bounds &b : bounds) {
      HostTensor x = isIntegerDType(dt) ? randomTensor(dt, {3, 17}, rng, -5, 5)
                                        : randomTensor(dt, {3, 17}, rng);
      ops::Clip clip;
      clip.min = b.lo;
      clip.max = b.hi;
      expectMatchesCpu(clip, {x}, {HostTensor(dt, {3, 17})},
                       std::string("clip ") + dtypeName(dt));
    }
}

TEST_F(ElementwiseTest, SelectBroadcastsEveryDtype) {
  for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::I32, DType::Bool,
                   DType::F16}) {
    HostTensor cond = randomTensor(DType::Bool, {3, 1, 17}, rng);
    HostTensor lhs = randomTensor(dt, {4, 17}, rng, -100, 100);
    HostTensor rhs = randomTensor(dt, {1}, rng, -100, 100);
    expectMatchesCpu(ops::Select{}, {cond, lhs, rhs},
                     {HostTensor(dt, {3, 4, 17})},
                     std::string("select ") + dtypeName(dt));
    HostTensor same = randomTensor(DType::Bool, {1000}, rng);
    expectMatchesCpu(ops::Select{},
                     {same, randomTensor(dt, {1000}, rng, -9, 9),
                      randomTensor(dt, {1000}, rng, -9, 9)},
                     {HostTensor(dt, {1000})},
                     std::string("select flat ") + dtypeName(dt));
  }
}

TEST_F(ElementwiseTest, CastAllPairs) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<DType> all = {DType::F32,  DType::I64, DType::Bool,
                                  DType::BF16, DType::F16, DType::I32};
  for (DType from : all)
    for (DType to : all) {
      HostTensor x;
      if (from == DType::Bool) {
        x = randomTensor(from, {127}, rng);
      } else if (isIntegerDType(from)) {
        x = randomTensor(from, {127}, rng, -100000, 100000);
        x.set(0, 0);
        x.set(1, from == DType::I64 ? 5000000000.0 : 2147483000.0);
      } else {
        x = randomTensor(from, {127}, rng, -300, 300);
        x.set(0, nan);
        x.set(1, inf);
        x.set(2, -inf);
        x.set(3, 0);
        x.set(4, 3.75);
        x.set(5, -3.75);
        x.set(6, 1e30); // saturates integers, overflows f16
        x.set(7, -1e30);
      }
      expectMatchesCpu(ops::Cast{}, {x}, {HostTensor(to, {127})},
                       std::string("cast ") + dtypeName(from) + " -> " +
                           dtypeName(to));
    }
}

} // namespace
} // namespace hybrid::cuda::test
