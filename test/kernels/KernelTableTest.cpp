// The kernel table: every typed op (and every kind of a family with kinds)
// has a CPU kernel, except collectives and events.
#include "KernelTestSupport.h"

namespace hybrid::cpu::test {
namespace {

/// One op of every alternative of hybrid::Op, in variant order.
template <size_t... I>
std::vector<Op> everyAlternative(std::index_sequence<I...>) {
  return {Op(std::in_place_index<I>)...};
}

bool isBackendOp(const Op &op) {
  return std::holds_alternative<ops::Collective>(op) ||
         std::holds_alternative<ops::RecordEvent>(op) ||
         std::holds_alternative<ops::WaitEvent>(op);
}

TEST(KernelTable, EveryOpAlternativeHasAKernel) {
  const std::vector<Op> all =
      everyAlternative(std::make_index_sequence<std::variant_size_v<Op>>());
  for (const Op &op : all) {
    KernelEntry entry = findKernel(op);
    if (isBackendOp(op))
      EXPECT_EQ(entry.run, nullptr) << opName(op);
    else
      EXPECT_NE(entry.run, nullptr) << opName(op);
  }
}

TEST(KernelTable, GenerationOpsHaveKernels) {
  // The decode step's in-place cache update and on-device sampling; sample
  // sorts in its declared scratch.
  EXPECT_NE(findKernel(ops::CacheWrite{2}).run, nullptr);
  EXPECT_EQ(findKernel(ops::CacheWrite{2}).scratch, nullptr);
  EXPECT_NE(findKernel(ops::Sample{}).run, nullptr);
  EXPECT_NE(findKernel(ops::Sample{}).scratch, nullptr);
  EXPECT_NE(findKernel(ops::SampleStep{}).run, nullptr);
  EXPECT_NE(findKernel(ops::SampleStep{}).scratch, nullptr);
  EXPECT_NE(findKernel(ops::Attention{}).scratch, nullptr);
}

TEST(KernelTable, AttentionGradHasScratch) {
  // Each worker's f32 copies of its KV head and their gradients.
  EXPECT_NE(findKernel(ops::AttentionGrad{}).scratch, nullptr);
}

TEST(KernelTable, LayerNormGradHasScratch) {
  // Each row's statistics and the column sums in double.
  EXPECT_NE(findKernel(ops::LayerNormGrad{}).scratch, nullptr);
}

TEST(KernelTable, EveryKindHasAKernel) {
  for (int k = 0; k < kBinaryKinds; ++k)
    EXPECT_NE(findKernel(ops::Binary{static_cast<BinaryKind>(k)}).run, nullptr)
        << binaryKindName(static_cast<BinaryKind>(k));
  for (int k = 0; k < kUnaryKinds; ++k)
    EXPECT_NE(findKernel(ops::Unary{static_cast<UnaryKind>(k)}).run, nullptr)
        << unaryKindName(static_cast<UnaryKind>(k));
  for (int k = 0; k < kReduceKinds; ++k)
    EXPECT_NE(findKernel(ops::Reduce{static_cast<ReduceKind>(k)}).run, nullptr)
        << reduceKindName(static_cast<ReduceKind>(k));
  for (int k = 0; k < kCollectiveKinds; ++k)
    EXPECT_EQ(findKernel(ops::Collective{static_cast<CollectiveKind>(k)}).run,
              nullptr);
}

TEST(KernelTable, KindsRouteToTheirOwnKernels) {
  // Distinct kinds of one family are distinct kernels.
  for (int a = 0; a < kBinaryKinds; ++a)
    for (int b = a + 1; b < kBinaryKinds; ++b)
      EXPECT_NE(findKernel(ops::Binary{static_cast<BinaryKind>(a)}).run,
                findKernel(ops::Binary{static_cast<BinaryKind>(b)}).run);
  for (int a = 0; a < kUnaryKinds; ++a)
    for (int b = a + 1; b < kUnaryKinds; ++b)
      EXPECT_NE(findKernel(ops::Unary{static_cast<UnaryKind>(a)}).run,
                findKernel(ops::Unary{static_cast<UnaryKind>(b)}).run);
  HostTensor a = f32({2}, {7, 2}), b = f32({2}, {-3, 3});
  EXPECT_EQ(run(ops::Binary{BinaryKind::Mod}, {&a, &b}, DType::F32, {2}).f()[0],
            -2.0f);
  EXPECT_EQ(
      run(ops::Binary{BinaryKind::FMod}, {&a, &b}, DType::F32, {2}).f()[0],
      1.0f);
}

TEST(KernelTable, KindsOutOfRangeHaveNoKernel) {
  // Kinds come from bundles, which are untrusted.
  EXPECT_EQ(findKernel(ops::Binary{static_cast<BinaryKind>(200)}).run, nullptr);
  EXPECT_EQ(findKernel(ops::Unary{static_cast<UnaryKind>(200)}).run, nullptr);
  EXPECT_EQ(findKernel(ops::Reduce{static_cast<ReduceKind>(200)}).run, nullptr);
}

TEST(KernelTable, ThreadCountIsSettable) {
  int before = numThreads();
  setNumThreads(1);
  EXPECT_EQ(numThreads(), 1);
  setNumThreads(0);
  EXPECT_GE(numThreads(), 1);
  setNumThreads(before);
  EXPECT_EQ(numThreads(), before);
}

/// The error of running `op` on operands of `dt` (results of `resultType`).
std::string dtypeError(const Op &op, DType dt, DType resultType, int operands,
                       Shape shape = {2, 3}) {
  HostTensor x = Random(5).of(dt, shape);
  std::vector<const HostTensor *> ptrs(operands, &x);
  HostTensor result(resultType, shape);
  switch (operands) {
  case 1:
    return errorOf(op, {ptrs[0]}, result);
  case 2:
    return errorOf(op, {ptrs[0], ptrs[1]}, result);
  default:
    return errorOf(op, {ptrs[0], ptrs[1], ptrs[2]}, result);
  }
}

TEST(KernelTable, UnsupportedDtypesNameTheKernelAndDtype) {
  auto expectNamed = [](const std::string &err, const Op &op, DType dt) {
    EXPECT_NE(err.find(opName(op) + ":"), std::string::npos)
        << opName(op) << ": " << err;
    EXPECT_NE(err.find(dtypeName(dt)), std::string::npos)
        << opName(op) << ": " << err;
  };
  for (int k = 0; k < kUnaryKinds; ++k) {
    const Op op = ops::Unary{static_cast<UnaryKind>(k)};
    const bool logic = static_cast<UnaryKind>(k) == UnaryKind::Not;
    const DType bad = logic ? DType::F16 : DType::Bool;
    expectNamed(dtypeError(op, bad, bad, 1), op, bad);
  }
  for (int k = 0; k < kBinaryKinds; ++k) {
    const BinaryKind kind = static_cast<BinaryKind>(k);
    const Op op = ops::Binary{kind};
    const bool logic = kind >= BinaryKind::And;
    const bool compare = kind >= BinaryKind::Equal && !logic;
    if (compare)
      continue; // every dtype compares
    const DType bad = logic ? DType::I32 : DType::Bool;
    expectNamed(dtypeError(op, bad, bad, 2), op, bad);
  }
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Prod}) {
    const Op op = ops::Reduce{kind};
    expectNamed(dtypeError(op, DType::Bool, DType::Bool, 1, {1}), op,
                DType::Bool);
  }
  for (const Op &op : {Op(ops::Softmax{}), Op(ops::Softmax{-1, true}),
                       Op(ops::CumSum{}), Op(ops::Clip{})}) {
    expectNamed(dtypeError(op, DType::Bool, DType::Bool, 1), op, DType::Bool);
  }
  for (const Op &op : {Op(ops::Softmax{}), Op(ops::LayerNorm{}),
                       Op(ops::RmsNorm{}), Op(ops::Linear{false})}) {
    const int operands = std::holds_alternative<ops::Softmax>(op)   ? 1
                         : std::holds_alternative<ops::RmsNorm>(op) ? 2
                                                                    : 3;
    std::string err;
    HostTensor x = Random(6).i64({3, 3});
    HostTensor result(DType::I64, {3, 3});
    if (operands == 1)
      err = errorOf(op, {&x}, result);
    else if (operands == 2)
      err = errorOf(op, {&x, nullptr}, result);
    else
      err = errorOf(op, {&x, nullptr, nullptr}, result);
    if (std::holds_alternative<ops::Linear>(op))
      err = errorOf(op, {&x, &x, nullptr, nullptr}, result);
    expectNamed(err, op, DType::I64);
  }
  HostTensor i = Random(7).i64({2, 2});
  expectNamed(errorOf(ops::MatMul{}, {&i, &i}, HostTensor(DType::I64, {2, 2})),
              ops::MatMul{}, DType::I64);
  expectNamed(errorOf(ops::Iota{}, {}, HostTensor(DType::Bool, {3})),
              ops::Iota{}, DType::Bool);
}

TEST(Fill, EveryDtype) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32,
                   DType::Bool}) {
    HostTensor got = run(ops::Fill{-2.75}, {}, dt, {3, 5});
    HostTensor zero = run(ops::Fill{0}, {}, dt, {7});
    const size_t es = dtypeSize(dt);
    for (int64_t e = 1; e < got.numel(); ++e)
      EXPECT_EQ(std::memcmp(got.b(), got.b() + e * es, es), 0) << dtypeName(dt);
    for (int64_t e = 0; e < zero.numel() * int64_t(es); ++e)
      EXPECT_EQ(zero.b()[e], 0) << dtypeName(dt);
  }
  EXPECT_EQ(run(ops::Fill{-2.75}, {}, DType::F32, {1}).f()[0], -2.75f);
  EXPECT_EQ(run(ops::Fill{-2.75}, {}, DType::I64, {1}).i()[0], -2);
  EXPECT_EQ(run(ops::Fill{-2.75}, {}, DType::Bool, {1}).b()[0], 1);
  EXPECT_EQ(run(ops::Fill{1e30}, {}, DType::I64, {1}).i()[0],
            std::numeric_limits<int64_t>::max());
  HostTensor empty = run(ops::Fill{1}, {}, DType::F32, {0, 3});
  EXPECT_EQ(empty.numel(), 0);
  HostTensor x = f32({1}, {1});
  EXPECT_NE(errorOf(ops::Fill{1}, {&x}, HostTensor(DType::F32, {1})), "");
}

} // namespace
} // namespace hybrid::cpu::test
