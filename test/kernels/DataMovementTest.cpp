// Data-movement kernels (transpose, broadcast_to, slice, concat, gather,
// gather_nd, select, copy, trilu, cache_write) against index-by-index
// references on all six dtypes, and cumsum and iota on the float and integer
// ones.
#include "KernelTestSupport.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace hybrid::cpu::test {
namespace {

const int64_t kMax = std::numeric_limits<int64_t>::max();
const int64_t kMin = std::numeric_limits<int64_t>::min();

/// Copies element `from` of src to element `to` of dst (same dtype).
void copyElement(const HostTensor &src, int64_t from, HostTensor &dst,
                 int64_t to) {
  size_t es = dtypeSize(src.dtype);
  std::memcpy(dst.b() + to * es, src.b() + from * es, es);
}

TEST(Transpose, EveryPermutationUpToRank4) {
  Random rng(20);
  // Small shapes take the strided copy, larger ones the tiled one.
  const std::vector<Shape> shapes = {
      {},         {5},      {3, 4},      {2, 3, 4},   {2, 1, 3, 5},
      {3, 0, 2},  {70, 90}, {3, 40, 50}, {16, 9, 33}, {2, 33, 1, 17, 8},
      {41, 2, 37}};
  for (DType dt : kAllTypes)
    for (const Shape &in : shapes) {
      std::vector<int64_t> perm(in.size());
      std::iota(perm.begin(), perm.end(), 0);
      do {
        HostTensor x = rng.of(dt, in);
        Shape out(in.size());
        for (size_t i = 0; i < in.size(); ++i)
          out[i] = in[perm[i]];
        HostTensor want(dt, out);
        for (int64_t k = 0; k < want.numel(); ++k) {
          auto idx = unravel(k, out);
          std::vector<int64_t> src(in.size());
          for (size_t i = 0; i < in.size(); ++i)
            src[perm[i]] = idx[i];
          copyElement(x, ravel(src, in), want, k);
        }
        // Negative perm entries name the same dimensions.
        std::vector<int64_t> negPerm = perm;
        for (int64_t &p : negPerm)
          p -= static_cast<int64_t>(in.size());
        for (const auto &p : {perm, negPerm}) {
          HostTensor got = run(ops::Transpose{p}, {&x}, dt, out);
          expectEqual(got, want, "transpose " + shapeToString(in));
        }
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
}

TEST(Transpose, RejectsBadPerms) {
  HostTensor x(DType::F32, {2, 3});
  EXPECT_NE(
      errorOf(ops::Transpose{{0, 0}}, {&x}, HostTensor(DType::F32, {3, 2})),
      "");
  EXPECT_NE(errorOf(ops::Transpose{{1}}, {&x}, HostTensor(DType::F32, {3, 2})),
            "");
  EXPECT_NE(
      errorOf(ops::Transpose{{1, 0}}, {&x}, HostTensor(DType::F32, {2, 3})),
      "");
}

TEST(BroadcastTo, MatchesReference) {
  Random rng(21);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{}, {3, 2}},
      {{1}, {4}},
      {{3}, {2, 3}},
      {{2, 1}, {2, 5}},
      {{1, 3, 1}, {4, 3, 2}},
      {{2, 3}, {2, 3}},
      {{5, 1, 1}, {2, 5, 64, 130}},
      {{1}, {0, 3}}};
  for (DType dt : kAllTypes)
    for (auto &[in, out] : cases) {
      HostTensor x = rng.of(dt, in);
      HostTensor want(dt, out);
      for (int64_t k = 0; k < want.numel(); ++k)
        copyElement(x, broadcastIndex(unravel(k, out), in), want, k);
      HostTensor got = run(ops::BroadcastTo{}, {&x}, dt, out);
      expectEqual(got, want,
                  "broadcast_to " + shapeToString(in) + " -> " +
                      shapeToString(out));
    }
  HostTensor x(DType::F32, {3});
  EXPECT_NE(errorOf(ops::BroadcastTo{}, {&x}, HostTensor(DType::F32, {4})), "");
}

/// The indices a slice visits, per the ONNX Slice text: negative bounds
/// count from the end; with a positive step both clamp to [0, dim], with a
/// negative one start clamps to [0, dim - 1] and end to [-1, dim - 1].
/// (This differs from Python's slice for a start below -dim with a negative
/// step, where Python gives nothing and ONNX Runtime gives element 0.)
std::vector<int64_t> sliceIndices(int64_t start, int64_t end, int64_t step,
                                  int64_t dim) {
  std::vector<int64_t> out;
  if (dim == 0)
    return out;
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::min(std::max(start, int64_t(0)), dim);
    end = std::min(std::max(end, int64_t(0)), dim);
    for (int64_t i = start; i < end; i += step)
      out.push_back(i);
  } else {
    start = std::min(std::max(start, int64_t(0)), dim - 1);
    end = std::min(std::max(end, int64_t(-1)), dim - 1);
    for (int64_t i = start; i > end; i += step)
      out.push_back(i);
  }
  return out;
}

TEST(Slice, RandomSlicesMatchOnnxSemantics) {
  Random rng(22);
  const std::vector<Shape> shapes = {
      {7}, {4, 5}, {3, 4, 6}, {2, 3, 4, 5}, {0, 4}};
  const int64_t specials[] = {kMax, kMin, -1, 0, 1};
  for (DType dt : kAllTypes)
    for (const Shape &in : shapes)
      for (int trial = 0; trial < 40; ++trial) {
        HostTensor x = rng.of(dt, in);
        int64_t rank = in.size();
        std::vector<int64_t> axes, starts, ends, steps;
        for (int64_t d = 0; d < rank; ++d) {
          if (rng.integer(0, 2) == 0)
            continue;
          axes.push_back(rng.integer(0, 1) ? d : d - rank);
          int64_t dim = in[d];
          auto pick = [&]() {
            return rng.integer(0, 4) == 0 ? specials[rng.integer(0, 4)]
                                          : rng.integer(-dim - 2, dim + 2);
          };
          starts.push_back(pick());
          ends.push_back(pick());
          int64_t step = rng.integer(1, 3) * (rng.integer(0, 1) ? 1 : -1);
          steps.push_back(step);
        }
        // Reference: per-dimension index lists, then a full product.
        std::vector<std::vector<int64_t>> pick(rank);
        for (int64_t d = 0; d < rank; ++d) {
          pick[d].resize(in[d]);
          std::iota(pick[d].begin(), pick[d].end(), 0);
        }
        for (size_t a = 0; a < axes.size(); ++a) {
          int64_t d = axes[a] < 0 ? axes[a] + rank : axes[a];
          pick[d] = sliceIndices(starts[a], ends[a], steps[a], in[d]);
        }
        Shape out(rank);
        for (int64_t d = 0; d < rank; ++d)
          out[d] = pick[d].size();
        HostTensor want(dt, out);
        for (int64_t k = 0; k < want.numel(); ++k) {
          auto idx = unravel(k, out);
          for (int64_t d = 0; d < rank; ++d)
            idx[d] = pick[d][idx[d]];
          copyElement(x, ravel(idx, in), want, k);
        }
        HostTensor got =
            run(ops::Slice{axes, starts, ends, steps}, {&x}, dt, out);
        expectEqual(got, want, "slice " + shapeToString(in));
      }
}

TEST(Slice, ReversesWithExtremeBounds) {
  HostTensor x = i64({5}, {0, 1, 2, 3, 4});
  HostTensor got =
      run(ops::Slice{{0}, {-1}, {kMin}, {-1}}, {&x}, DType::I64, {5});
  expectEqual(got, i64({5}, {4, 3, 2, 1, 0}));
  HostTensor huge =
      run(ops::Slice{{0}, {1}, {kMax}, {kMax}}, {&x}, DType::I64, {1});
  expectEqual(huge, i64({1}, {1}));
  EXPECT_NE(errorOf(ops::Slice{{0}, {0}, {5}, {0}}, {&x},
                    HostTensor(DType::I64, {5})),
            "");
  EXPECT_NE(errorOf(ops::Slice{{0}, {0}, {5}, {1}}, {&x},
                    HostTensor(DType::I64, {4})),
            "");
}

TEST(Concat, AlongEveryAxis) {
  Random rng(23);
  for (DType dt : kAllTypes)
    for (int64_t axis = -3; axis < 3; ++axis) {
      int64_t a = axis < 0 ? axis + 3 : axis;
      Shape base = {2, 3, 4};
      std::vector<HostTensor> inputs;
      for (int64_t len : {1, 0, 3, 2}) {
        Shape s = base;
        s[a] = len;
        inputs.push_back(rng.of(dt, s));
      }
      Shape out = base;
      out[a] = 6;
      HostTensor want(dt, out);
      for (int64_t k = 0; k < want.numel(); ++k) {
        auto idx = unravel(k, out);
        int64_t pos = idx[a];
        for (const HostTensor &t : inputs) {
          if (pos < t.shape[a]) {
            idx[a] = pos;
            copyElement(t, ravel(idx, t.shape), want, k);
            break;
          }
          pos -= t.shape[a];
        }
      }
      HostTensor got =
          run(ops::Concat{axis},
              {&inputs[0], &inputs[1], &inputs[2], &inputs[3]}, dt, out);
      expectEqual(got, want, "concat axis " + std::to_string(axis));
    }
  HostTensor p(DType::F32, {2, 3}), q(DType::F32, {3, 3});
  EXPECT_NE(errorOf(ops::Concat{1}, {&p, &q}, HostTensor(DType::F32, {2, 6})),
            "");
}

TEST(Gather, AxesAndNegativeIndices) {
  Random rng(24);
  const Shape data = {4, 5, 3};
  const std::vector<Shape> indexShapes = {{}, {2}, {2, 3}};
  for (DType dt : kAllTypes)
    for (int64_t axis = -3; axis < 3; ++axis)
      for (const Shape &is : indexShapes) {
        int64_t a = axis < 0 ? axis + 3 : axis;
        HostTensor x = rng.of(dt, data);
        // Indices alternate between i64 and i32.
        const DType it = (axis + 3) % 2 ? DType::I32 : DType::I64;
        HostTensor idx = rng.integers(it, is, -data[a], data[a] - 1);
        Shape out(data.begin(), data.begin() + a);
        out.insert(out.end(), is.begin(), is.end());
        out.insert(out.end(), data.begin() + a + 1, data.end());
        HostTensor want(dt, out);
        for (int64_t k = 0; k < want.numel(); ++k) {
          auto o = unravel(k, out);
          std::vector<int64_t> iIdx(o.begin() + a, o.begin() + a + is.size());
          int64_t v = static_cast<int64_t>(idx.at(ravel(iIdx, is)));
          std::vector<int64_t> src(o.begin(), o.begin() + a);
          src.push_back(v < 0 ? v + data[a] : v);
          src.insert(src.end(), o.begin() + a + is.size(), o.end());
          copyElement(x, ravel(src, data), want, k);
        }
        HostTensor got = run(ops::Gather{axis}, {&x, &idx}, dt, out);
        expectEqual(got, want, "gather axis " + std::to_string(axis));
      }
  HostTensor x(DType::F32, {4, 2});
  HostTensor bad = i64({2}, {1, 4});
  std::string err =
      errorOf(ops::Gather{}, {&x, &bad}, HostTensor(DType::F32, {2, 2}));
  EXPECT_NE(err.find("index 4"), std::string::npos) << err;
  HostTensor bad2 = i64({1}, {-5}).to(DType::I32);
  EXPECT_NE(errorOf(ops::Gather{}, {&x, &bad2}, HostTensor(DType::F32, {1, 2})),
            "");
  HostTensor floatIndex = f32({1}, {1});
  EXPECT_NE(
      errorOf(ops::Gather{}, {&x, &floatIndex}, HostTensor(DType::F32, {1, 2}))
          .find("unsupported element type f32 for indices"),
      std::string::npos);
}

TEST(GatherNd, OnnxExamples) {
  // The examples of the ONNX GatherND specification.
  HostTensor d1 = i64({2, 2}, {0, 1, 2, 3});
  HostTensor i1 = i64({2, 2}, {0, 0, 1, 1});
  expectEqual(run(ops::GatherNd{}, {&d1, &i1}, DType::I64, {2}),
              i64({2}, {0, 3}));
  HostTensor i2 = i64({2, 1}, {1, 0});
  expectEqual(run(ops::GatherNd{}, {&d1, &i2}, DType::I64, {2, 2}),
              i64({2, 2}, {2, 3, 0, 1}));
  HostTensor d3 = i64({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  HostTensor i3 = i64({2, 2}, {0, 1, 1, 0});
  expectEqual(run(ops::GatherNd{}, {&d3, &i3}, DType::I64, {2, 2}),
              i64({2, 2}, {2, 3, 4, 5}));
  HostTensor i4 = i64({2, 1, 2}, {0, 1, 1, 0});
  expectEqual(run(ops::GatherNd{}, {&d3, &i4}, DType::I64, {2, 1, 2}),
              i64({2, 1, 2}, {2, 3, 4, 5}));
  HostTensor i5 = i64({2, 1}, {1, 0});
  expectEqual(run(ops::GatherNd{1}, {&d3, &i5}, DType::I64, {2, 2}),
              i64({2, 2}, {2, 3, 4, 5}));
  HostTensor neg = i64({1, 2}, {-1, -2});
  expectEqual(run(ops::GatherNd{}, {&d1, &neg}, DType::I64, {1}),
              i64({1}, {2}));
  HostTensor bad = i64({1, 2}, {2, 0});
  EXPECT_NE(errorOf(ops::GatherNd{}, {&d1, &bad}, HostTensor(DType::I64, {1})),
            "");
}

TEST(GatherNd, RandomBatchDims) {
  Random rng(25);
  for (DType dt : kAllTypes)
    for (int64_t b = 0; b <= 1; ++b)
      for (int64_t k = 1; k <= 3 - b; ++k) {
        Shape data = {3, 4, 2, 5};
        Shape is = {3, 2, k};
        if (b == 0)
          is = {2, 3, k};
        HostTensor x = rng.of(dt, data);
        HostTensor idx(k % 2 ? DType::I64 : DType::I32, is);
        for (int64_t t = 0; t < idx.numel(); ++t) {
          int64_t dim = data[b + t % k];
          idx.set(t, double(rng.integer(-dim, dim - 1)));
        }
        Shape out(is.begin(), is.end() - 1);
        out.insert(out.end(), data.begin() + b + k, data.end());
        HostTensor want(dt, out);
        for (int64_t e = 0; e < want.numel(); ++e) {
          auto o = unravel(e, out);
          // o = [batch..., tuple index..., slice index...]
          std::vector<int64_t> tupleIdx(o.begin(), o.begin() + is.size() - 1);
          tupleIdx.push_back(0);
          std::vector<int64_t> src(o.begin(), o.begin() + b);
          for (int64_t j = 0; j < k; ++j) {
            tupleIdx.back() = j;
            int64_t v = static_cast<int64_t>(idx.at(ravel(tupleIdx, is)));
            src.push_back(v < 0 ? v + data[b + j] : v);
          }
          src.insert(src.end(), o.begin() + is.size() - 1, o.end());
          copyElement(x, ravel(src, data), want, e);
        }
        HostTensor got = run(ops::GatherNd{b}, {&x, &idx}, dt, out);
        expectEqual(got, want,
                    "gather_nd b=" + std::to_string(b) +
                        " k=" + std::to_string(k));
      }
}

TEST(Select, BroadcastsAllThree) {
  Random rng(26);
  const std::vector<std::vector<Shape>> cases = {
      {{2, 3}, {2, 3}, {2, 3}}, {{}, {4}, {4}},
      {{3, 1}, {1, 4}, {}},     {{2, 1, 5}, {3, 1}, {5}},
      {{1}, {0, 2}, {2}},       {{256, 300}, {300}, {256, 1}}};
  for (DType dt : kAllTypes)
    for (const auto &c : cases) {
      HostTensor cond = rng.boolean(c[0]), l = rng.of(dt, c[1]),
                 r = rng.of(dt, c[2]);
      // Broadcast shape of the three, computed naively.
      Shape out;
      size_t rank = 0;
      for (const Shape &s : c)
        rank = std::max(rank, s.size());
      out.assign(rank, 1);
      for (const Shape &s : c)
        for (size_t i = 0; i < s.size(); ++i)
          if (s[i] != 1)
            out[rank - s.size() + i] = s[i];
      HostTensor want(dt, out);
      for (int64_t k = 0; k < want.numel(); ++k) {
        auto idx = unravel(k, out);
        bool pickLeft = cond.b()[broadcastIndex(idx, c[0])];
        const HostTensor &src = pickLeft ? l : r;
        copyElement(src, broadcastIndex(idx, src.shape), want, k);
      }
      HostTensor got = run(ops::Select{}, {&cond, &l, &r}, dt, out);
      expectEqual(got, want, std::string("select ") + dtypeName(dt));
    }
  HostTensor notBool = rng.f32({2}), a = rng.f32({2});
  EXPECT_NE(
      errorOf(ops::Select{}, {&notBool, &a, &a}, HostTensor(DType::F32, {2})),
      "");
}

TEST(Copy, CopyAndReshapeMoveBytes) {
  Random rng(27);
  for (DType dt : kAllTypes) {
    HostTensor x = rng.of(dt, {3, 4});
    HostTensor c = run(ops::Copy{}, {&x}, dt, {3, 4});
    expectEqual(c, x, "copy");
    HostTensor r = run(ops::Copy{}, {&x}, dt, {2, 6});
    EXPECT_EQ(std::memcmp(r.b(), x.b(), 12 * dtypeSize(dt)), 0);
    EXPECT_NE(errorOf(ops::Copy{}, {&x}, HostTensor(dt, {5})), "");
  }
}

TEST(Trilu, UpperAndLowerForManyDiagonals) {
  Random rng(28);
  const std::vector<Shape> shapes = {{4, 4},    {3, 5}, {5, 2},
                                     {2, 3, 4}, {0, 3}, {1, 1}};
  const int64_t ks[] = {kMin, -7, -2, -1, 0, 1, 2, 7, kMax};
  for (DType dt : kAllTypes)
    for (const Shape &s : shapes)
      for (int64_t k : ks)
        for (int upper = 0; upper <= 1; ++upper) {
          HostTensor x = rng.of(dt, s);
          HostTensor want(dt, s);
          for (int64_t e = 0; e < x.numel(); ++e) {
            auto idx = unravel(e, s);
            double i = idx[s.size() - 2], j = idx[s.size() - 1];
            bool keep = upper ? j - i >= double(k) : j - i <= double(k);
            if (keep)
              copyElement(x, e, want, e);
          }
          HostTensor got =
              run(ops::Trilu{static_cast<bool>(upper), k}, {&x}, dt, s);
          expectEqual(got, want, "trilu k=" + std::to_string(k));
        }
  HostTensor v(DType::F32, {3});
  EXPECT_NE(errorOf(ops::Trilu{}, {&v}, HostTensor(DType::F32, {3})), "");
}

TEST(CumSum, AxesExclusiveReverse) {
  Random rng(29);
  const Shape s = {3, 7, 5};
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32})
    for (int64_t axis = -3; axis < 3; ++axis)
      for (int exclusive = 0; exclusive <= 1; ++exclusive)
        for (int reverse = 0; reverse <= 1; ++reverse) {
          HostTensor x = rng.of(dt, s);
          int64_t a = axis < 0 ? axis + 3 : axis;
          std::vector<double> want(x.numel());
          for (int64_t e = 0; e < x.numel(); ++e) {
            auto idx = unravel(e, s);
            double sum = 0;
            for (int64_t j = 0; j < s[a]; ++j) {
              bool in = reverse ? (exclusive ? j > idx[a] : j >= idx[a])
                                : (exclusive ? j < idx[a] : j <= idx[a]);
              if (!in)
                continue;
              auto src = idx;
              src[a] = j;
              sum += x.at(ravel(src, s));
            }
            want[e] = sum;
          }
          HostTensor got = run(ops::CumSum{axis, static_cast<bool>(exclusive),
                                           static_cast<bool>(reverse)},
                               {&x}, dt, s);
          const Tolerance tol = toleranceFor(dt, 1e-5, 1e-5);
          expectNear(got, want, tol.atol, tol.rtol,
                     std::string("cumsum ") + dtypeName(dt));
        }
  HostTensor b = rng.boolean({3});
  EXPECT_NE(errorOf(ops::CumSum{}, {&b}, HostTensor(DType::Bool, {3})), "");
}

TEST(Iota, FloatAndInteger) {
  HostTensor i = run(ops::Iota{3, -2}, {}, DType::I64, {5});
  expectEqual(i, i64({5}, {3, 1, -1, -3, -5}));
  HostTensor f = run(ops::Iota{0.5, 0.25}, {}, DType::F32, {4});
  expectNear(f, {0.5, 0.75, 1.0, 1.25}, 0, 0);
  for (DType dt : {DType::I32, DType::BF16, DType::F16})
    expectNear(run(ops::Iota{-7, 3}, {}, dt, {5}), {-7, -4, -1, 2, 5}, 0, 0,
               dtypeName(dt));
  expectNear(run(ops::Iota{0.1, 0.2}, {}, DType::BF16, {3}),
             {double(bf16ToFloat(floatToBf16(0.1f))),
              double(bf16ToFloat(floatToBf16(0.3f))),
              double(bf16ToFloat(floatToBf16(0.5f)))},
             0, 0, "bf16 rounds once");
  HostTensor empty = run(ops::Iota{}, {}, DType::I64, {0});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_NE(errorOf(ops::Iota{}, {}, HostTensor(DType::Bool, {3})), "");
}

TEST(CacheWrite, WritesOnlyTheSliceAtTheOffset) {
  // A KV cache [B, H, C, D] written along the sequence (axis 2) or the
  // heads (axis 1): slices in the middle, at the start, at the end, the
  // whole axis and nothing; the rest of the cache keeps its old bytes.
  Random rng(40);
  const Shape cache = {2, 3, 10, 4};
  struct Case {
    int64_t axis, n, offset;
  };
  const Case cases[] = {{2, 3, 4},  {2, 1, 0}, {2, 2, 8}, {2, 10, 0},
                        {2, 0, 10}, {1, 1, 1}, {1, 2, 1}, {1, 1, 0},
                        {-2, 4, 6}, {3, 2, 2}, {0, 1, 1}};
  for (DType dt : kAllTypes)
    for (const Case &c : cases) {
      const int64_t axis = c.axis < 0 ? c.axis + 4 : c.axis;
      Shape updateShape = cache;
      updateShape[axis] = c.n;
      HostTensor update = rng.of(dt, updateShape);
      HostTensor old = rng.of(dt, cache);
      HostTensor got = old; // the result is the cache, updated in place
      HostTensor offset = i64({1}, {c.offset});
      runKernel(ops::CacheWrite{c.axis}, {&update, &offset}, got);
      HostTensor want = old;
      for (int64_t e = 0; e < update.numel(); ++e) {
        std::vector<int64_t> idx = unravel(e, updateShape);
        idx[axis] += c.offset;
        copyElement(update, e, want, ravel(idx, cache));
      }
      expectEqual(got, want,
                  std::string("cache_write ") + dtypeName(dt) + " axis " +
                      std::to_string(c.axis) + " [" + std::to_string(c.offset) +
                      ", " + std::to_string(c.offset + c.n) + ")");
    }
}

TEST(CacheWrite, LargeWritesSplitOverThreads) {
  // A prefill's keys into a long cache: enough bytes to go parallel.
  Random rng(41);
  HostTensor update = rng.floats(DType::BF16, {4, 8, 300, 64});
  HostTensor got = rng.floats(DType::BF16, {4, 8, 1000, 64});
  HostTensor want = got;
  HostTensor offset = i64({1}, {650});
  runKernel(ops::CacheWrite{2}, {&update, &offset}, got);
  const size_t row = 64 * 2;
  for (int64_t bh = 0; bh < 32; ++bh)
    std::memcpy(want.b() + (bh * 1000 + 650) * row, update.b() + bh * 300 * row,
                300 * row);
  expectEqual(got, want, "cache_write bf16 prefill");
}

TEST(CacheWrite, SlicesPastTheCacheAreErrors) {
  Random rng(42);
  HostTensor update = rng.of(DType::I64, {1, 2, 3, 4});
  HostTensor cache(DType::I64, {1, 2, 8, 4});
  for (int64_t at : {int64_t(6), int64_t(-1), int64_t(100)}) {
    HostTensor offset = i64({1}, {at});
    const std::string err =
        errorOf(ops::CacheWrite{2}, {&update, &offset}, cache);
    // Names the slice, the update and the cache.
    EXPECT_NE(err.find("cache_write: slice [" + std::to_string(at) + ", " +
                       std::to_string(at + 3) + ") along axis 2"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("update [1,2,3,4]"), std::string::npos) << err;
    EXPECT_NE(err.find("result [1,2,8,4] (8 along that axis)"),
              std::string::npos)
        << err;
  }
  HostTensor offset = i64({1}, {0});
  HostTensor narrow = offset.to(DType::I32);
  EXPECT_NE(errorOf(ops::CacheWrite{2}, {&update, &narrow}, cache)
                .find("offset must be i64"),
            std::string::npos);
  HostTensor otherHeads = rng.of(DType::I64, {1, 3, 3, 4});
  EXPECT_NE(errorOf(ops::CacheWrite{2}, {&otherHeads, &offset}, cache)
                .find("outside axis 2"),
            std::string::npos);
  HostTensor otherType = update.to(DType::I32);
  EXPECT_NE(errorOf(ops::CacheWrite{2}, {&otherType, &offset}, cache)
                .find("same element type"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::CacheWrite{4}, {&update, &offset}, cache)
                .find("axis 4 is out of range"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
