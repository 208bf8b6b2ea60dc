// matmul (NumPy semantics) and linear against naive triple loops, linear's
// epilogue (activation, residual) against double-precision formulas.
#include "KernelTestSupport.h"

#include <cmath>

namespace hybrid::cpu::test {
namespace {

/// The activations in double, from their definitions.
double activationRef(Activation a, double x) {
  const double pi = 3.14159265358979323846;
  switch (a) {
  case Activation::None:
    return x;
  case Activation::Relu:
    return x > 0 ? x : 0;
  case Activation::GeluErf:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case Activation::GeluTanh:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)));
  case Activation::Silu:
    return x / (1 + std::exp(-x));
  }
  return x;
}

/// NumPy matmul, written out: promote 1-D operands, broadcast the batch
/// dimensions, and sum products in double.
std::vector<double> naiveMatmul(const HostTensor &a, const HostTensor &b,
                                Shape &outShape) {
  Shape sa = a.shape, sb = b.shape;
  bool dropM = sa.size() == 1, dropN = sb.size() == 1;
  if (dropM)
    sa.insert(sa.begin(), 1);
  if (dropN)
    sb.push_back(1);
  int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  size_t rank = std::max(ba.size(), bb.size());
  Shape batch(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - ba.size() ? 1 : ba[i - (rank - ba.size())];
    int64_t y = i < rank - bb.size() ? 1 : bb[i - (rank - bb.size())];
    batch[i] = x == 1 ? y : x;
  }
  Shape full = batch;
  full.push_back(M);
  full.push_back(N);
  std::vector<double> out(numElements(full));
  for (int64_t t = 0; t < numElements(batch); ++t) {
    auto idx = unravel(t, batch);
    int64_t ia = broadcastIndex(idx, ba), ib = broadcastIndex(idx, bb);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double sum = 0;
        for (int64_t k = 0; k < K; ++k)
          sum += a.at(ia * M * K + m * K + k) * b.at(ib * K * N + k * N + n);
        out[(t * M + m) * N + n] = sum;
      }
  }
  outShape = batch;
  if (!dropM)
    outShape.push_back(M);
  if (!dropN)
    outShape.push_back(N);
  return out;
}

TEST(MatMul, ShapesAndBroadcasting) {
  Random rng(50);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},
      {{4}, {4, 5}},
      {{3, 4}, {4}},
      {{4}, {4}},
      {{2, 3, 4}, {4, 5}},
      {{4, 5}, {2, 5, 3}},
      {{2, 1, 3, 4}, {5, 4, 2}},
      {{2, 3, 4}, {2, 4, 5}},
      {{1, 3, 4}, {6, 4, 2}},
      {{3, 0}, {0, 2}},
      {{0, 3}, {3, 2}},
      {{2, 3, 4}, {4}},
      {{4}, {3, 4, 2}},
      {{100, 70}, {70, 90}},
      {{8, 33, 64}, {8, 64, 65}},
      {{3, 1, 200}, {200, 130}},
      {{2, 12, 1, 64}, {2, 12, 64, 40}},
      // More than one block of rows, columns and depth (bf16/f16 convert
      // 128 x 256 x 256 blocks).
      {{2, 131, 259}, {259, 301}},
      {{3, 1, 129, 33}, {2, 33, 257}}};
  for (DType dt : kFloatTypes)
    for (auto &[sa, sb] : cases) {
      HostTensor a = rng.floats(dt, sa), b = rng.floats(dt, sb);
      Shape out;
      std::vector<double> want = naiveMatmul(a, b, out);
      HostTensor got = run(ops::MatMul{}, {&a, &b}, dt, out);
      const Tolerance tol = toleranceFor(dt, 1e-4, 1e-4);
      expectNear(got, want, tol.atol, tol.rtol,
                 "matmul " + std::string(dtypeName(dt)) + " " +
                     shapeToString(sa) + " x " + shapeToString(sb));
    }
}

TEST(MatMul, RejectsMismatches) {
  Random rng(51);
  HostTensor a = rng.f32({3, 4}), b = rng.f32({5, 2}), s = rng.f32({});
  EXPECT_NE(errorOf(ops::MatMul{}, {&a, &b}, HostTensor(DType::F32, {3, 2}))
                .find("inner dimensions"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::MatMul{}, {&a, &s}, HostTensor(DType::F32, {3})), "");
  HostTensor c = rng.f32({2, 3, 4}), d = rng.f32({3, 4, 5});
  EXPECT_NE(errorOf(ops::MatMul{}, {&c, &d}, HostTensor(DType::F32, {3, 3, 5})),
            "");
  HostTensor i = rng.i64({4, 5});
  EXPECT_NE(errorOf(ops::MatMul{}, {&a, &i}, HostTensor(DType::F32, {3, 5})),
            "");
  HostTensor ii = rng.i64({3, 4});
  EXPECT_NE(errorOf(ops::MatMul{}, {&ii, &i}, HostTensor(DType::I64, {3, 5}))
                .find("unsupported element type i64"),
            std::string::npos);
  HostTensor h = rng.floats(DType::F16, {4, 5});
  EXPECT_NE(errorOf(ops::MatMul{}, {&a, &h}, HostTensor(DType::F32, {3, 5}))
                .find("same element type"),
            std::string::npos);
}

TEST(Linear, TransposedAndPlainWeightsWithBias) {
  Random rng(52);
  struct Case {
    Shape in;
    int64_t N;
  };
  // K is the input's last dimension; the last cases span several of the
  // 128 x 256 x 256 blocks that bf16/f16 convert.
  const std::vector<Case> cases = {
      {{7}, 9},     {{3, 7}, 9},         {{2, 5, 7}, 9}, {{0, 7}, 9},
      {{64, 7}, 9}, {{3, 43, 261}, 263}, {{1, 300}, 517}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      for (int trans = 0; trans <= 1; ++trans)
        for (int hasBias = 0; hasBias <= 1; ++hasBias) {
          const int64_t N = c.N, K = c.in.back();
          HostTensor x = rng.floats(dt, c.in);
          HostTensor w = rng.floats(dt, trans ? Shape{N, K} : Shape{K, N});
          HostTensor bias = rng.floats(dt, {N});
          Shape out = c.in;
          out.back() = N;
          std::vector<double> want(numElements(out));
          for (int64_t m = 0; m < numElements(out) / N; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double sum = hasBias ? bias.at(n) : 0;
              for (int64_t k = 0; k < K; ++k)
                sum += x.at(m * K + k) *
                       (trans ? w.at(n * K + k) : w.at(k * N + n));
              want[m * N + n] = sum;
            }
          HostTensor got(dt, out);
          runKernel(ops::Linear{trans != 0},
                    {&x, &w, hasBias ? &bias : nullptr, nullptr}, got);
          const Tolerance tol = toleranceFor(dt, 1e-4, 1e-5);
          expectNear(got, want, tol.atol, tol.rtol,
                     "linear " + std::string(dtypeName(dt)) + " " +
                         shapeToString(c.in) + " trans " +
                         std::to_string(trans) + " bias " +
                         std::to_string(hasBias));
        }
}

TEST(Linear, EpilogueActivationsAndResidual) {
  Random rng(54);
  // Rows of K = 40 products of values in [-1, 1): pre-activations spread
  // over about [-5, 5], both sides of every activation's bend. The shapes
  // are the f32 path (one pass after the GEMM) and blocks of the bf16/f16
  // path (the epilogue per converted block).
  const std::vector<Shape> inputs = {{3, 40}, {2, 67, 40}, {130, 40}};
  const int64_t N = 33, K = 40;
  for (DType dt : kFloatTypes)
    for (const Shape &in : inputs)
      for (int a = 0; a < kActivations; ++a)
        for (int hasResidual = 0; hasResidual <= 1; ++hasResidual) {
          const Activation act = static_cast<Activation>(a);
          const bool trans = (a + hasResidual) % 2 == 0;
          Shape out = in;
          out.back() = N;
          HostTensor x = rng.floats(dt, in);
          HostTensor w = rng.floats(dt, trans ? Shape{N, K} : Shape{K, N});
          HostTensor bias = rng.floats(dt, {N});
          HostTensor residual = rng.floats(dt, out);
          std::vector<double> want(numElements(out));
          for (int64_t m = 0; m < numElements(out) / N; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double sum = bias.at(n);
              for (int64_t k = 0; k < K; ++k)
                sum += x.at(m * K + k) *
                       (trans ? w.at(n * K + k) : w.at(k * N + n));
              want[m * N + n] = activationRef(act, sum) +
                                (hasResidual ? residual.at(m * N + n) : 0);
            }
          HostTensor got(dt, out);
          runKernel(ops::Linear{trans, act},
                    {&x, &w, &bias, hasResidual ? &residual : nullptr}, got);
          const Tolerance tol = toleranceFor(dt, 1e-4, 1e-5);
          expectNear(got, want, tol.atol, tol.rtol,
                     "linear " + std::string(dtypeName(dt)) + " " +
                         shapeToString(in) + " " + activationName(act) +
                         " residual " + std::to_string(hasResidual));
        }
  // A residual of another shape or dtype than the result is an error.
  HostTensor x = rng.f32({2, 3}), w = rng.f32({4, 3});
  HostTensor shortResidual = rng.f32({2, 3});
  EXPECT_NE(errorOf(ops::Linear{}, {&x, &w, nullptr, &shortResidual},
                    HostTensor(DType::F32, {2, 4}))
                .find("residual"),
            std::string::npos);
  HostTensor halfResidual = rng.floats(DType::BF16, {2, 4});
  EXPECT_NE(errorOf(ops::Linear{}, {&x, &w, nullptr, &halfResidual},
                    HostTensor(DType::F32, {2, 4}))
                .find("residual"),
            std::string::npos);
}

TEST(Linear, DefaultsAndErrors) {
  Random rng(53);
  HostTensor x = rng.f32({2, 3}), w = rng.f32({4, 3}), b = rng.f32({4});
  // transpose_weight defaults to true; three operands imply a bias.
  HostTensor got =
      run(ops::Linear{}, {&x, &w, &b, nullptr}, DType::F32, {2, 4});
  for (int64_t m = 0; m < 2; ++m)
    for (int64_t n = 0; n < 4; ++n) {
      double sum = b.f()[n];
      for (int64_t k = 0; k < 3; ++k)
        sum += double(x.f()[m * 3 + k]) * w.f()[n * 3 + k];
      EXPECT_NEAR(got.f()[m * 4 + n], sum, 1e-5);
    }
  HostTensor wrong = rng.f32({4, 5});
  EXPECT_NE(errorOf(ops::Linear{}, {&x, &wrong, nullptr, nullptr},
                    HostTensor(DType::F32, {2, 4}))
                .find("features"),
            std::string::npos);
  HostTensor badBias = rng.f32({5});
  EXPECT_NE(errorOf(ops::Linear{}, {&x, &w, &badBias, nullptr},
                    HostTensor(DType::F32, {2, 4})),
            "");
  // K = 0: the result is the bias.
  for (DType dt : kFloatTypes) {
    HostTensor x0 = rng.floats(dt, {2, 0}), w0 = rng.floats(dt, {4, 0});
    HostTensor b0 = b.to(dt);
    HostTensor y0 = run(ops::Linear{}, {&x0, &w0, &b0, nullptr}, dt, {2, 4});
    for (int64_t k = 0; k < 8; ++k)
      EXPECT_EQ(y0.at(k), b0.at(k % 4)) << dtypeName(dt);
  }
  // Weights of another float dtype than the input are an error.
  HostTensor wh = w.to(DType::BF16);
  EXPECT_NE(errorOf(ops::Linear{}, {&x, &wh, nullptr, nullptr},
                    HostTensor(DType::F32, {2, 4}))
                .find("same element type"),
            std::string::npos);
}

TEST(Linear, NormPrologueIsTheNormThenTheProduct) {
  // linear with a norm prologue against the layer_norm / rms_norm kernel
  // followed by the plain linear: the same bits (one row function, one
  // product), and against a double-precision formula.
  Random rng(55);
  struct Case {
    Shape in;
    int64_t N;
  };
  const std::vector<Case> cases = {
      {{3, 40}, 17}, {{2, 5, 40}, 33}, {{1, 768}, 9}};
  for (DType dt : kFloatTypes)
    for (const Case &c : cases)
      for (NormKind norm : {NormKind::LayerNorm, NormKind::RmsNorm})
        for (int operands = 0; operands < 3; ++operands) {
          const int64_t K = c.in.back(), M = numElements(c.in) / K;
          const bool hasWeight = operands >= 1;
          const bool hasBias = operands == 2 && norm == NormKind::LayerNorm;
          const bool trans = operands != 1;
          Shape out = c.in;
          out.back() = c.N;
          HostTensor x = rng.floats(dt, c.in);
          HostTensor g = rng.floats(dt, {K}), b = rng.floats(dt, {K});
          HostTensor w = rng.floats(dt, trans ? Shape{c.N, K} : Shape{K, c.N});
          HostTensor bias = rng.floats(dt, {c.N});
          const double eps = 1e-5;
          HostTensor normalised(dt, c.in);
          if (norm == NormKind::LayerNorm)
            runKernel(ops::LayerNorm{eps, -1},
                      {&x, hasWeight ? &g : nullptr, hasBias ? &b : nullptr},
                      normalised);
          else
            runKernel(ops::RmsNorm{eps, -1}, {&x, hasWeight ? &g : nullptr},
                      normalised);
          HostTensor unfused(dt, out), fused(dt, out);
          runKernel(ops::Linear{trans, Activation::Relu},
                    {&normalised, &w, &bias, nullptr}, unfused);
          runKernel(ops::Linear{trans, Activation::Relu, norm, eps},
                    {&x, &w, &bias, nullptr, hasWeight ? &g : nullptr,
                     hasBias ? &b : nullptr},
                    fused);
          const std::string what =
              std::string("linear norm ") + dtypeName(dt) + " " +
              shapeToString(c.in) +
              (norm == NormKind::LayerNorm ? " layer" : " rms") +
              (hasWeight ? " weight" : "") + (hasBias ? " bias" : "");
          for (int64_t i = 0; i < fused.numel(); ++i)
            ASSERT_EQ(fused.at(i), unfused.at(i)) << what << " element " << i;
          std::vector<double> want(numElements(out));
          for (int64_t m = 0; m < M; ++m) {
            double mean = 0, sq = 0;
            for (int64_t k = 0; k < K; ++k)
              mean += x.at(m * K + k) / K;
            for (int64_t k = 0; k < K; ++k) {
              const double v = x.at(m * K + k);
              sq +=
                  norm == NormKind::LayerNorm ? (v - mean) * (v - mean) : v * v;
            }
            const double inv = 1 / std::sqrt(sq / K + eps);
            for (int64_t n = 0; n < c.N; ++n) {
              double sum = bias.at(n);
              for (int64_t k = 0; k < K; ++k) {
                double v = x.at(m * K + k);
                v = (norm == NormKind::LayerNorm ? v - mean : v) * inv;
                v = v * (hasWeight ? g.at(k) : 1.0) + (hasBias ? b.at(k) : 0.0);
                sum += v * (trans ? w.at(n * K + k) : w.at(k * c.N + n));
              }
              want[m * c.N + n] = sum > 0 ? sum : 0;
            }
          }
          // The normalised rows are rounded to dt before the product.
          const Tolerance tol = toleranceFor(dt, 1e-4, 1e-5);
          expectNear(fused, want, tol.atol * 4, tol.rtol * 4, what);
        }
  // Bad prologues: a norm_bias on rms_norm, a norm weight of the wrong size.
  HostTensor x = rng.f32({2, 8}), w = rng.f32({4, 8}), g = rng.f32({8});
  HostTensor shortG = rng.f32({7});
  EXPECT_NE(errorOf(ops::Linear{true, Activation::None, NormKind::RmsNorm},
                    {&x, &w, nullptr, nullptr, &g, &g},
                    HostTensor(DType::F32, {2, 4}))
                .find("rms_norm takes no norm_bias"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::Linear{true, Activation::None, NormKind::LayerNorm},
                    {&x, &w, nullptr, nullptr, &shortG, nullptr},
                    HostTensor(DType::F32, {2, 4}))
                .find("norm operand"),
            std::string::npos);
}

/// Runs linear_group's kernel into `results` with exactly the scratch it
/// declares (runKernel takes one result).
void runGroup(const ops::LinearGroup &attrs,
              const std::vector<const HostTensor *> &operands,
              std::vector<HostTensor> &results) {
  const Op op = attrs;
  const KernelEntry entry = findKernel(op);
  ASSERT_NE(entry.run, nullptr);
  KernelCall call;
  call.op = &op;
  for (const HostTensor *t : operands)
    call.operands.push_back(t ? t->cview() : ConstTensor::absent());
  for (HostTensor &r : results)
    call.results.push_back(r.view());
  const size_t bytes = scratchBytes(entry, call, numThreads());
  std::vector<uint64_t> storage(bytes / 8 + 16);
  auto *base = reinterpret_cast<uint8_t *>(storage.data());
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  call.scratch = bytes ? base : nullptr;
  call.scratchBytes = bytes;
  entry.run(call);
}

TEST(LinearGroup, EachMemberIsItsLinearBitForBit) {
  // q, k and v with weights of their own ([N, K]), and the column ranges of
  // one [K, N] weight (GPT-2's c_attn, before cut by slices): every member
  // has exactly the bits of the linear (and slice) it replaces.
  Random rng(58);
  const int64_t K = 100;
  const std::vector<int64_t> widths = {37, 64, 129};
  for (DType dt : kFloatTypes)
    for (Activation act : {Activation::None, Activation::GeluTanh}) {
      const HostTensor x = rng.floats(dt, {3, 5, K});
      std::vector<HostTensor> weights, biases;
      for (int64_t n : widths) {
        weights.push_back(rng.floats(dt, {n, K}));
        biases.push_back(rng.floats(dt, {n}));
      }
      ops::LinearGroup own{true, act, {0, 0, 0}, {37, 64, 129}};
      std::vector<HostTensor> got;
      std::vector<const HostTensor *> operands = {&x};
      for (size_t i = 0; i < widths.size(); ++i) {
        operands.push_back(&weights[i]);
        operands.push_back(&biases[i]);
        got.emplace_back(dt, Shape{3, 5, widths[i]});
      }
      runGroup(own, operands, got);
      for (size_t i = 0; i < widths.size(); ++i) {
        const HostTensor want =
            run(ops::Linear{true, act}, {&x, &weights[i], &biases[i], nullptr},
                dt, {3, 5, widths[i]});
        EXPECT_EQ(got[i].bytes, want.bytes)
            << dtypeName(dt) << " " << activationName(act) << " member " << i;
      }

      const HostTensor fused = rng.floats(dt, {K, 230});
      const HostTensor fusedBias = rng.floats(dt, {230});
      const HostTensor full =
          run(ops::Linear{false, act}, {&x, &fused, &fusedBias, nullptr}, dt,
              {3, 5, 230});
      ops::LinearGroup ranges{false, act, {0, 37, 101}, {37, 101, 230}};
      std::vector<HostTensor> cut;
      for (int64_t n : widths)
        cut.emplace_back(dt, Shape{3, 5, n});
      runGroup(ranges,
               {&x, &fused, &fusedBias, &fused, &fusedBias, &fused, &fusedBias},
               cut);
      for (size_t i = 0; i < widths.size(); ++i) {
        const HostTensor want = run(
            ops::Slice{
                {2}, {ranges.featureBegins[i]}, {ranges.featureEnds[i]}, {1}},
            {&full}, dt, {3, 5, widths[i]});
        EXPECT_EQ(cut[i].bytes, want.bytes)
            << dtypeName(dt) << " " << activationName(act) << " range " << i;
      }
    }
}

TEST(LinearGroup, RejectsMismatches) {
  Random rng(59);
  const HostTensor x = rng.floats(DType::F32, {2, 8});
  const HostTensor w = rng.floats(DType::F32, {6, 8});
  const HostTensor b = rng.floats(DType::F32, {4});
  auto errorOfGroup = [&](const ops::LinearGroup &attrs,
                          const std::vector<const HostTensor *> &operands,
                          Shape out) -> std::string {
    std::vector<HostTensor> results = {HostTensor(DType::F32, out)};
    try {
      runGroup(attrs, operands, results);
    } catch (const Error &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(errorOfGroup({true, Activation::None, {2}, {6}}, {&x, &w, nullptr},
                         {2, 4}),
            "");
  EXPECT_NE(errorOfGroup({true, Activation::None, {2}, {7}}, {&x, &w, nullptr},
                         {2, 5})
                .find("are not a range of its weight's 6"),
            std::string::npos);
  EXPECT_NE(
      errorOfGroup({true, Activation::None, {2}, {6}}, {&x, &w, &b}, {2, 4})
          .find("bias"),
      std::string::npos);
  EXPECT_NE(errorOfGroup({false, Activation::None, {0}, {6}}, {&x, &w, nullptr},
                         {2, 6})
                .find("does not take the input's 8 features"),
            std::string::npos);
  EXPECT_NE(errorOfGroup({true, Activation::None, {0}, {6}}, {&x, &w, nullptr},
                         {2, 5})
                .find("result"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
