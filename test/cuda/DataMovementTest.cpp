// The CUDA data-movement kernels (copy, fill, transpose, broadcast_to, slice,
// concat, gather, gather_nd, iota, trilu, embedding, cache_write) against
// the CPU oracle: every element size, odd shapes, negative axes, steps and
// indices; cache_write's offset read from device memory by a captured graph.
#include "CudaTestSupport.h"

#include <algorithm>
#include <numeric>

namespace hybrid::cuda::test {
namespace {

const std::vector<DType> kAllTypes = {DType::F32, DType::BF16, DType::F16,
                                      DType::I32, DType::I64,  DType::Bool};

class DataMovementTest : public CudaKernelTest {};

TEST_F(DataMovementTest, CopyReshapes) {
  for (DType dt : kAllTypes)
    expectMatchesCpu(ops::Copy{}, {randomTensor(dt, {3, 17, 5}, rng, -50, 50)},
                     {HostTensor(dt, {255})},
                     std::string("copy ") + dtypeName(dt));
}

TEST_F(DataMovementTest, FillEveryDtype) {
  for (DType dt : kAllTypes)
    for (double v : {2.5, -3.0, 0.0, 1e10, -0.0})
      expectMatchesCpu(ops::Fill{v}, {}, {HostTensor(dt, {3, 127})},
                       std::string("fill ") + dtypeName(dt) + " " +
                           std::to_string(v));
}

TEST_F(DataMovementTest, TransposeEveryPermutation) {
  for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
    std::vector<int64_t> perm = {0, 1, 2, 3};
    do {
      const Shape in = {2, 3, 4, 5};
      Shape out(4);
      for (int i = 0; i < 4; ++i)
        out[i] = in[perm[i]];
      expectMatchesCpu(
          ops::Transpose{perm}, {randomTensor(dt, in, rng, -50, 50)},
          {HostTensor(dt, out)}, std::string("transpose ") + dtypeName(dt));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST_F(DataMovementTest, TransposeTiledShapes) {
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {{{64, 33, 70}, {2, 0, 1}},
                                   {{3, 1000, 17}, {0, 2, 1}},
                                   {{127, 129}, {1, 0}},
                                   {{2, 12, 100, 64}, {0, 2, 1, 3}},
                                   {{2, 100, 12, 64}, {0, 2, 3, 1}},
                                   {{5, 1, 7}, {-1, 0, 1}},
                                   // 2-byte pairs: whole and edge tiles.
                                   {{256, 512}, {1, 0}},
                                   {{130, 200}, {1, 0}},
                                   {{3, 70, 66}, {0, 2, 1}}};
  for (const Case &c : cases)
    for (DType dt : {DType::F32, DType::BF16, DType::Bool}) {
      Shape out(c.in.size());
      for (size_t i = 0; i < out.size(); ++i) {
        const int64_t p = c.perm[i] < 0 ? c.perm[i] + out.size() : c.perm[i];
        out[i] = c.in[p];
      }
      expectMatchesCpu(
          ops::Transpose{c.perm}, {randomTensor(dt, c.in, rng, -50, 50)},
          {HostTensor(dt, out)}, "transpose " + shapeToString(c.in));
    }
}

TEST_F(DataMovementTest, BroadcastTo) {
  for (DType dt : kAllTypes) {
    expectMatchesCpu(ops::BroadcastTo{},
                     {randomTensor(dt, {3, 1, 5}, rng, -9, 9)},
                     {HostTensor(dt, {2, 3, 4, 5})},
                     std::string("broadcast_to ") + dtypeName(dt));
    expectMatchesCpu(ops::BroadcastTo{}, {randomTensor(dt, {}, rng, -9, 9)},
                     {HostTensor(dt, {17})},
                     std::string("broadcast_to scalar ") + dtypeName(dt));
  }
}

TEST_F(DataMovementTest, SliceStepsAndClamping) {
  struct Case {
    ops::Slice attrs;
    Shape out;
  };
  const Shape in = {7, 9, 11};
  const std::vector<Case> cases = {
      {{{0}, {1}, {5}, {1}}, {4, 9, 11}},
      {{{-1}, {-3}, {1000}, {1}}, {7, 9, 3}},
      {{{1, 2}, {8, 10}, {-100, -100}, {-2, -3}}, {7, 5, 4}},
      {{{0, 2}, {0, 1}, {7, 11}, {3, 4}}, {3, 9, 3}},
      {{{}, {2}, {2}, {}}, {0, 9, 11}},
      {{{2}, {-1000}, {1000}, {5}}, {7, 9, 3}}};
  for (const Case &c : cases)
    for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::Bool})
      expectMatchesCpu(c.attrs, {randomTensor(dt, in, rng, -50, 50)},
                       {HostTensor(dt, c.out)},
                       std::string("slice ") + shapeToString(c.out) + " " +
                           dtypeName(dt));
}

TEST_F(DataMovementTest, ConcatAxes) {
  for (DType dt : kAllTypes)
    for (int64_t axis : {0, 1, -1}) {
      std::vector<Shape> ins = {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}};
      const int64_t a = axis < 0 ? axis + 3 : axis;
      ins[0][a] = 1;
      ins[1][a] = 4;
      ins[2][a] = 17;
      Shape out = ins[0];
      out[a] = 22;
      std::vector<HostTensor> operands;
      for (const Shape &s : ins)
        operands.push_back(randomTensor(dt, s, rng, -50, 50));
      expectMatchesCpu(ops::Concat{axis}, operands, {HostTensor(dt, out)},
                       std::string("concat ") + dtypeName(dt) + " axis " +
                           std::to_string(axis));
    }
}

TEST_F(DataMovementTest, GatherAxesAndNegativeIndices) {
  for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::Bool})
    for (DType it : {DType::I32, DType::I64})
      for (int64_t axis : {0, 1, -1}) {
        const Shape data = {5, 6, 7};
        const int64_t a = axis < 0 ? axis + 3 : axis;
        const int64_t dim = data[a];
        HostTensor idx = randomTensor(it, {2, 3}, rng, -dim, dim - 1);
        Shape out(data.begin(), data.begin() + a);
        out.insert(out.end(), {2, 3});
        out.insert(out.end(), data.begin() + a + 1, data.end());
        expectMatchesCpu(ops::Gather{axis},
                         {randomTensor(dt, data, rng, -50, 50), idx},
                         {HostTensor(dt, out)},
                         std::string("gather ") + dtypeName(dt) + " axis " +
                             std::to_string(axis));
      }
}

TEST_F(DataMovementTest, GatherNdBatchDims) {
  for (DType dt : {DType::F32, DType::BF16, DType::I64})
    for (DType it : {DType::I32, DType::I64}) {
      // batch_dims 0: tuples of 2 into [4, 5, 6] -> [3, 6].
      HostTensor idx0(it, {3, 2});
      for (int64_t t = 0; t < 3; ++t) {
        idx0.set(2 * t, (t * 3) % 4 - (t == 1 ? 4 : 0));
        idx0.set(2 * t + 1, (t * 2 + 1) % 5);
      }
      expectMatchesCpu(ops::GatherNd{0},
                       {randomTensor(dt, {4, 5, 6}, rng, -50, 50), idx0},
                       {HostTensor(dt, {3, 6})},
                       std::string("gather_nd b0 ") + dtypeName(dt));
      // batch_dims 1: [2, 5, 6] with indices [2, 3, 1] -> [2, 3, 6].
      HostTensor idx1 = randomTensor(it, {2, 3, 1}, rng, -5, 4);
      expectMatchesCpu(ops::GatherNd{1},
                       {randomTensor(dt, {2, 5, 6}, rng, -50, 50), idx1},
                       {HostTensor(dt, {2, 3, 6})},
                       std::string("gather_nd b1 ") + dtypeName(dt));
    }
}

TEST_F(DataMovementTest, Iota) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64})
    for (auto [start, step] : std::vector<std::pair<double, double>>{
             {0, 1}, {5, -2}, {0.5, 0.25}, {-3, 7}}) {
      expectMatchesCpu(ops::Iota{start, step}, {}, {HostTensor(dt, {1000})},
                       std::string("iota ") + dtypeName(dt));
    }
}

TEST_F(DataMovementTest, Trilu) {
  for (DType dt : {DType::F32, DType::BF16, DType::I64, DType::Bool})
    for (bool upper : {true, false})
      for (int64_t k : {-2, 0, 3, 100, -100})
        expectMatchesCpu(
            ops::Trilu{upper, k}, {randomTensor(dt, {2, 5, 7}, rng, -50, 50)},
            {HostTensor(dt, {2, 5, 7})},
            std::string("trilu ") + dtypeName(dt) +
                (upper ? " upper " : " lower ") + std::to_string(k));
}

TEST_F(DataMovementTest, EmbeddingRows) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I64})
    for (DType it : {DType::I32, DType::I64})
      for (int64_t D : {1, 3, 64, 1000}) {
        HostTensor ids = randomTensor(it, {2, 17}, rng, 0, 99);
        expectMatchesCpu(ops::Embedding{},
                         {randomTensor(dt, {100, D}, rng, -50, 50), ids},
                         {HostTensor(dt, {2, 17, D})},
                         std::string("embedding ") + dtypeName(dt) + " D " +
                             std::to_string(D));
      }
}

/// cache_write of `update` into a copy of `cache` at `offset` on both
/// backends; the bytes must be equal (it only moves elements).
void expectCacheWrite(const HostTensor &cache, const HostTensor &update,
                      int64_t axis, int64_t offset) {
  const std::string what =
      std::string("cache_write ") + dtypeName(cache.dtype) + " " +
      shapeToString(update.shape) + " into " + shapeToString(cache.shape) +
      " axis " + std::to_string(axis) + " at " + std::to_string(offset);
  const HostTensor at = tensorOf(DType::I64, {1}, {double(offset)});
  const ops::CacheWrite op{axis};
  const std::vector<HostTensor> cpu =
      runCpu(op, {update, at}, {cache}, /*inPlace=*/true);
  const std::vector<HostTensor> gpu =
      runCuda(op, {update, at}, {cache}, /*inPlace=*/true);
  EXPECT_TRUE(gpu[0].bytes == cpu[0].bytes) << what;
}

TEST_F(DataMovementTest, CacheWriteSlicesAtEveryPlace) {
  struct Case {
    Shape cache;
    int64_t axis, n;
  };
  const std::vector<Case> cases = {
      {{2, 3, 10, 8}, 2, 1},  // a decode step into [B, H, S, D]
      {{2, 3, 10, 8}, -2, 4}, // a prompt, negative axis
      {{5, 7}, 0, 2},         {{3, 9, 5}, 1, 2},
      {{2, 2, 3, 11}, 3, 3}, // one element per run
      {{4, 6, 3}, 1, 1},     // 3-element runs (odd byte counts)
      {{3, 4, 64}, 1, 4},    // the whole axis
      {{2, 3, 10, 8}, 2, 0}, // nothing to write
  };
  for (DType dt : kAllTypes)
    for (const Case &c : cases) {
      const int64_t axis =
          c.axis < 0 ? c.axis + int64_t(c.cache.size()) : c.axis;
      Shape u = c.cache;
      u[axis] = c.n;
      const int64_t dim = c.cache[axis];
      const HostTensor cache = randomTensor(dt, c.cache, rng, -50, 50);
      const HostTensor update = randomTensor(dt, u, rng, -50, 50);
      for (int64_t offset : {int64_t(0), (dim - c.n) / 2, dim - c.n})
        expectCacheWrite(cache, update, c.axis, offset);
    }
}

TEST_F(DataMovementTest, CacheWriteOutOfRangeWritesNothing) {
  // The CPU kernel raises an error; the device, which cannot report one
  // without a host sync, must leave the cache as it was.
  const HostTensor cache = randomTensor(DType::BF16, {2, 3, 10, 8}, rng);
  const HostTensor update = randomTensor(DType::BF16, {2, 3, 2, 8}, rng);
  for (int64_t offset : {int64_t(-1), int64_t(9), int64_t(1) << 40}) {
    const HostTensor at = tensorOf(DType::I64, {1}, {double(offset)});
    const ops::CacheWrite op{2};
    EXPECT_THROW(runCpu(op, {update, at}, {cache}, true), Error);
    const std::vector<HostTensor> gpu =
        runCuda(op, {update, at}, {cache}, /*inPlace=*/true);
    EXPECT_TRUE(gpu[0].bytes == cache.bytes) << "offset " << offset;
  }
  // Known from the shapes: no offset fits.
  try {
    runCuda(ops::CacheWrite{2},
            {randomTensor(DType::BF16, {2, 3, 11, 8}, rng),
             tensorOf(DType::I64, {1}, {0})},
            {cache}, true);
    ADD_FAILURE() << "an update longer than the cache was accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("cache_write:"), std::string::npos)
        << e.what();
  }
}

TEST_F(DataMovementTest, CacheWriteOneGraphServesEveryPosition) {
  // A decode step's write captured once and replayed at positions 0..15
  // (the offset changes in device memory between replays) fills the cache
  // as sixteen separate CPU calls do.
  const int64_t S = 16;
  HostTensor cpuCache = randomTensor(DType::F16, {2, 4, S, 64}, rng);
  HostTensor update = randomTensor(DType::F16, {2, 4, 1, 64}, rng);
  CapturedCall step(ops::CacheWrite{2},
                    {update, tensorOf(DType::I64, {1}, {0})}, {cpuCache});
  for (int64_t position = 0; position < S; ++position) {
    update = randomTensor(DType::F16, {2, 4, 1, 64}, rng);
    const HostTensor at = tensorOf(DType::I64, {1}, {double(position)});
    step.setOperand(0, update);
    step.setOperand(1, at);
    const std::vector<HostTensor> gpu = step.replay();
    cpuCache = runCpu(ops::CacheWrite{2}, {update, at}, {cpuCache}, true)[0];
    ASSERT_TRUE(gpu[0].bytes == cpuCache.bytes) << "position " << position;
  }
}

} // namespace
} // namespace hybrid::cuda::test
