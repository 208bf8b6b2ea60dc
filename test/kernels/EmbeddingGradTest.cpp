// embedding_grad against a double-precision reference (grad_out's rows
// summed per id): repeated ids, ids never seen, ids out of range, odd
// sizes, i32 and i64 ids, every float type; and its bits against the f32
// sum in position order it promises.
#include "KernelTestSupport.h"

namespace hybrid::cpu::test {
namespace {

std::vector<double> embeddingGradRef(const HostTensor &ids, const HostTensor &g,
                                     int64_t rows, int64_t d) {
  std::vector<double> ref(rows * d, 0.0);
  for (int64_t i = 0; i < ids.numel(); ++i) {
    const auto id = static_cast<int64_t>(ids.at(i));
    if (id < 0 || id >= rows)
      continue;
    for (int64_t j = 0; j < d; ++j)
      ref[id * d + j] += g.at(i * d + j);
  }
  return ref;
}

void checkEmbeddingGrad(Random &rng, DType dt, DType idType,
                        const Shape &idShape, int64_t rows, int64_t d) {
  // Ids from a narrow range so that many repeat, a few out of range.
  HostTensor ids =
      rng.integers(idType, idShape, -1, std::max<int64_t>(rows / 3, 1));
  if (ids.numel() > 2)
    ids.set(1, static_cast<double>(rows)); // past the end
  Shape gradShape = idShape;
  gradShape.push_back(d);
  HostTensor g = rng.floats(dt, gradShape, -1, 1);
  HostTensor out(dt, {rows, d});
  runKernel(ops::EmbeddingGrad{}, {&ids, &g}, out);
  const std::string what = std::string("embedding_grad ") + dtypeName(dt) +
                           " ids " + dtypeName(idType) + " " +
                           shapeToString(idShape) + " rows " +
                           std::to_string(rows) + " D " + std::to_string(d);
  const Tolerance tol = toleranceFor(dt, 1e-5, 1e-5);
  expectNear(out, embeddingGradRef(ids, g, rows, d), tol.atol, tol.rtol, what);
}

TEST(EmbeddingGrad, RepeatedIdsOddSizes) {
  Random rng(81);
  for (DType dt : kFloatTypes)
    for (DType idType : {DType::I64, DType::I32})
      for (int64_t rows : {1, 5, 97})
        for (int64_t d : {1, 3, 64, 129})
          checkEmbeddingGrad(rng, dt, idType, {3, 37}, rows, d);
}

TEST(EmbeddingGrad, AnyIdRank) {
  Random rng(82);
  checkEmbeddingGrad(rng, DType::BF16, DType::I64, {}, 7, 16);
  checkEmbeddingGrad(rng, DType::F32, DType::I64, {1000}, 300, 8);
  checkEmbeddingGrad(rng, DType::BF16, DType::I64, {2, 3, 5}, 11, 24);
}

TEST(EmbeddingGrad, SumsInPositionOrderInF32) {
  // 1 + 2^-24 + 2^-24 in f32, in this order, is 1 (each addition rounds
  // back); a sum in another order or in double gives 1 + 2^-23.
  const float tiny = std::ldexp(1.0f, -24);
  HostTensor ids = i64({4}, {2, 0, 2, 2});
  HostTensor g = f32({4, 1}, {1.0f, 5.0f, tiny, tiny});
  HostTensor out(DType::F32, {3, 1});
  runKernel(ops::EmbeddingGrad{}, {&ids, &g}, out);
  EXPECT_EQ(out.f()[0], 5.0f);
  EXPECT_EQ(out.f()[1], 0.0f);
  EXPECT_EQ(out.f()[2], 1.0f);
}

TEST(EmbeddingGrad, RejectsMismatchedOperands) {
  Random rng(83);
  HostTensor ids = rng.i64({2, 3}, 0, 4), g = rng.f32({2, 3, 8});
  EXPECT_NE(
      errorOf(ops::EmbeddingGrad{}, {&ids, &g}, HostTensor(DType::F32, {5, 7}))
          .find("result"),
      std::string::npos);
  EXPECT_NE(
      errorOf(ops::EmbeddingGrad{}, {&ids, &g}, HostTensor(DType::BF16, {5, 8}))
          .find("result"),
      std::string::npos);
  HostTensor g2 = rng.f32({2, 4, 8});
  EXPECT_NE(
      errorOf(ops::EmbeddingGrad{}, {&ids, &g2}, HostTensor(DType::F32, {5, 8}))
          .find("grad_out"),
      std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
