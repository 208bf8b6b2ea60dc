// The CUDA embedding_grad against the CPU oracle: both sum each id's rows in
// position order in f32 and round once, so they agree bit for bit (the
// test allows one rounding of the result nonetheless). Repeated ids, ids
// never seen and out of range, i32 and i64 ids, feature widths with and
// without 16-byte words, more positions than a tile of the placing kernel
// and more rows than a tile of the scan, every float type; and the same
// bits on every run (no float atomics).
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class EmbeddingGradTest : public CudaKernelTest {};

struct GradCase {
  Shape ids;
  int64_t rows, features;
};

const std::vector<GradCase> kGradCases = {
    {{1}, 1, 1},         {{3, 37}, 5, 3},       {{3, 37}, 97, 64},
    {{2, 300}, 11, 129}, {{8, 512}, 50272, 64}, {{4, 1000}, 20000, 24},
    {{2, 3, 5}, 7, 2048}};

/// Ids in [-1, rows / 3] (most repeat), one past the end.
HostTensor someIds(DType dt, const Shape &shape, int64_t rows,
                   std::mt19937 &rng) {
  HostTensor ids(dt, shape);
  std::uniform_int_distribution<int64_t> pick(-1,
                                              std::max<int64_t>(rows / 3, 1));
  for (int64_t k = 0; k < ids.numel(); ++k)
    ids.set(k, static_cast<double>(pick(rng)));
  if (ids.numel() > 2)
    ids.set(1, static_cast<double>(rows));
  return ids;
}

TEST_F(EmbeddingGradTest, MatchesCpu) {
  for (DType dt : kFloatTypes)
    for (DType idType : {DType::I64, DType::I32})
      for (const GradCase &c : kGradCases) {
        Shape gradShape = c.ids;
        gradShape.push_back(c.features);
        const HostTensor ids = someIds(idType, c.ids, c.rows, rng);
        const HostTensor g = randomTensor(dt, gradShape, rng, -1, 1);
        const Tolerance tol = defaultTolerance(dt);
        expectMatchesCpu(
            ops::EmbeddingGrad{}, {ids, g},
            {HostTensor(dt, {c.rows, c.features})},
            std::string("embedding_grad ") + dtypeName(dt) + " ids " +
                dtypeName(idType) + " " + shapeToString(c.ids) + " rows " +
                std::to_string(c.rows) + " D " + std::to_string(c.features),
            &tol);
      }
}

TEST_F(EmbeddingGradTest, SameBitsAsCpuAndEveryRun) {
  const HostTensor ids = someIds(DType::I64, {8, 512}, 300, rng);
  const HostTensor g = randomTensor(DType::BF16, {8, 512, 256}, rng, -1, 1);
  const std::vector<HostTensor> results = {HostTensor(DType::BF16, {300, 256})};
  const std::vector<HostTensor> first =
      runCuda(ops::EmbeddingGrad{}, {ids, g}, results);
  const std::vector<HostTensor> second =
      runCuda(ops::EmbeddingGrad{}, {ids, g}, results);
  const std::vector<HostTensor> cpu =
      runCpu(ops::EmbeddingGrad{}, {ids, g}, results);
  expectClose(second[0], first[0], Tolerance{}, "run to run");
  expectClose(first[0], cpu[0], Tolerance{}, "against the CPU");
}

} // namespace
} // namespace hybrid::cuda::test
