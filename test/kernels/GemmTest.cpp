// The f32 GEMM's contract (Gemm.h): every element is one fixed FMA chain,
// so the fast kernel equals referenceGemm bit for bit and a row's bits do
// not depend on M, its place in the matrix, the leading dimensions or the
// thread count (batch invariance); both are close to a double reference.
// Linear, matmul and attention inherit it: a row alone equals the same row
// in a batch, and a left-padded query equals the same query unpadded.
#include "KernelTestSupport.h"

#include "cpu/Gemm.h"

#include <cstring>

namespace hybrid::cpu::test {
namespace {

/// A row-major matrix of random non-zero floats with `ld` >= cols.
std::vector<float> randomMatrix(Random &rng, int64_t rows, int64_t ld) {
  std::vector<float> m(rows * ld);
  for (float &x : m) {
    x = rng.uniform(-2, 2);
    if (x == 0)
      x = 1;
  }
  return m;
}

struct Product {
  bool transA, transB;
  int64_t M, N, K;
  float alpha, beta;
  int64_t pad = 0; // added to every leading dimension
  int64_t lda() const { return (transA ? M : K) + pad; }
  int64_t ldb() const { return (transB ? K : N) + pad; }
  int64_t ldc() const { return N + pad; }
  std::string name() const {
    return std::to_string(M) + "x" + std::to_string(N) + "x" +
           std::to_string(K) + (transA ? " A^T" : "") + (transB ? " B^T" : "") +
           " alpha " + std::to_string(alpha) + " beta " + std::to_string(beta) +
           " pad " + std::to_string(pad);
  }
};

struct Operands {
  std::vector<float> A, B, C;
};

Operands operandsOf(const Product &p, uint32_t seed) {
  Random rng(seed);
  Operands o;
  o.A = randomMatrix(rng, p.transA ? p.K : p.M, p.lda());
  o.B = randomMatrix(rng, p.transB ? p.N : p.K, p.ldb());
  o.C = randomMatrix(rng, p.M, p.ldc());
  return o;
}

/// C after gemm (or referenceGemm) on a copy of o.C.
std::vector<float> product(const Product &p, const Operands &o,
                           bool reference = false) {
  std::vector<float> C = o.C;
  (reference ? referenceGemm : gemm)(p.transA, p.transB, p.M, p.N, p.K, p.alpha,
                                     o.A.data(), p.lda(), o.B.data(), p.ldb(),
                                     p.beta, C.data(), p.ldc());
  return C;
}

bool sameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

void expectSameBits(const std::vector<float> &got,
                    const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t e = 0; e < got.size() && failures < 5; ++e)
    if (!sameBits(got[e], want[e])) {
      ADD_FAILURE() << what << " element " << e << ": got " << got[e]
                    << ", want " << want[e];
      ++failures;
    }
}

const std::vector<Product> kProducts = {
    // Full tiles, edge rows (M % 6) and columns (N % 16), K across chunks of
    // 256 and K = 0, every transpose, alpha/beta cases and padded strides;
    // M <= 6 with B not transposed reads B in place.
    {false, false, 12, 32, 64, 1, 0},    {false, true, 7, 33, 300, 1, 0},
    {true, false, 13, 17, 5, 0.5f, 1},   {true, true, 1, 70, 513, 1, 0.25f},
    {false, false, 5, 3, 1, 2, -1},      {false, true, 31, 129, 257, 0.125f, 0},
    {true, false, 6, 16, 0, 1, 0.5f},    {false, false, 1, 1, 1000, 1, 1},
    {false, true, 50, 200, 64, 1, 0, 3}, {true, true, 19, 65, 77, -1, 2, 5},
    {false, false, 4, 50, 600, 1, 0, 2}, {true, false, 3, 40, 20, 0.5f, 1}};

TEST(Gemm, EqualsTheReferenceSequenceBitwise) {
  uint32_t seed = 700;
  for (const Product &p : kProducts) {
    const Operands o = operandsOf(p, seed++);
    expectSameBits(product(p, o), product(p, o, true), p.name());
  }
}

TEST(Gemm, CloseToDoublePrecision) {
  uint32_t seed = 720;
  for (const Product &p : kProducts) {
    const Operands o = operandsOf(p, seed++);
    const std::vector<float> got = product(p, o);
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n) {
        double sum = 0, size = 0;
        for (int64_t k = 0; k < p.K; ++k) {
          const double a =
              p.transA ? o.A[k * p.lda() + m] : o.A[m * p.lda() + k];
          const double b =
              p.transB ? o.B[n * p.ldb() + k] : o.B[k * p.ldb() + n];
          sum += a * b;
          size += std::fabs(a * b);
        }
        const double c = o.C[m * p.ldc() + n];
        const double want = p.alpha * sum + (p.beta == 0 ? 0 : p.beta * c);
        const double bound =
            1e-6 * (std::fabs(p.alpha) * size + std::fabs(p.beta * c)) + 1e-30;
        ASSERT_NEAR(got[m * p.ldc() + n], want, bound)
            << p.name() << " at " << m << ", " << n;
      }
  }
}

TEST(Gemm, RowsDoNotDependOnTheBatchOrTheThreads) {
  // Rows [r0, r1) of a product as a product of their own (another M,
  // another place in the tiles, another thread split), on 1 and 3 threads:
  // the same bits as in the whole. Large enough to split over threads.
  const int before = numThreads();
  for (bool transB : {false, true}) {
    const Product whole{false, transB, 203, 333, 300, 1, 0};
    const Operands o = operandsOf(whole, 740 + transB);
    setNumThreads(3);
    const std::vector<float> all = product(whole, o);
    const std::pair<int64_t, int64_t> slices[] = {
        {0, 1}, {5, 6}, {7, 31}, {100, 203}, {1, 200}, {0, 203}};
    for (int threads : {1, 3}) {
      setNumThreads(threads);
      for (auto [r0, r1] : slices) {
        Product part = whole;
        part.M = r1 - r0;
        Operands po;
        po.A.assign(o.A.begin() + r0 * whole.lda(),
                    o.A.begin() + r1 * whole.lda());
        po.B = o.B;
        po.C.assign(part.M * part.ldc(), 0);
        const std::vector<float> got = product(part, po);
        expectSameBits(got,
                       std::vector<float>(all.begin() + r0 * whole.ldc(),
                                          all.begin() + r1 * whole.ldc()),
                       whole.name() + " rows " + std::to_string(r0) + ".." +
                           std::to_string(r1) + " on " +
                           std::to_string(threads) + " threads");
      }
    }
  }
  setNumThreads(before);
}

TEST(Gemm, LinearAndMatMulRowsAloneEqualTheBatch) {
  // Through the kernels, f32 and bf16 (converted blocks, bias in the
  // epilogue): row b of a batch of 40 equals the same row as a batch of 1.
  Random rng(760);
  for (DType dt : kFloatTypes) {
    HostTensor x = rng.floats(dt, {40, 96}), w = rng.floats(dt, {300, 96});
    HostTensor bias = rng.floats(dt, {300});
    HostTensor batch(dt, {40, 300});
    runKernel(ops::Linear{true}, {&x, &w, &bias, nullptr}, batch);
    HostTensor wt = rng.floats(dt, {96, 300});
    HostTensor batchMm(dt, {40, 300});
    runKernel(ops::MatMul{}, {&x, &wt}, batchMm);
    const size_t es = dtypeSize(dt);
    for (int64_t r : {int64_t(0), int64_t(13), int64_t(39)}) {
      HostTensor row(dt, {1, 96}), alone(dt, {1, 300}), aloneMm(dt, {1, 300});
      std::memcpy(row.b(), x.b() + r * 96 * es, 96 * es);
      runKernel(ops::Linear{true}, {&row, &w, &bias, nullptr}, alone);
      runKernel(ops::MatMul{}, {&row, &wt}, aloneMm);
      HostTensor want(dt, {1, 300}), wantMm(dt, {1, 300});
      std::memcpy(want.b(), batch.b() + r * 300 * es, 300 * es);
      std::memcpy(wantMm.b(), batchMm.b() + r * 300 * es, 300 * es);
      const std::string what =
          std::string(dtypeName(dt)) + " row " + std::to_string(r);
      expectEqual(alone, want, "linear " + what);
      expectEqual(aloneMm, wantMm, "matmul " + what);
    }
  }
}

/// Attention of one batch row's queries over keys with `pad` padding keys
/// in front (key_mask 0), on a cache of `capacity` slots holding
/// pad + n keys (key_length), or over exactly the n keys without a mask
/// when pad < 0; returns the result.
HostTensor paddedAttention(DType dt, const HostTensor &q, const HostTensor &k,
                           const HostTensor &v, int64_t n, int64_t pad,
                           int64_t capacity, bool causal, int64_t window) {
  const int64_t H = q.shape[1], T = q.shape[2], D = q.shape[3];
  const int64_t S = pad < 0 ? n : capacity, p = std::max<int64_t>(pad, 0);
  const size_t es = dtypeSize(dt), row = D * es;
  HostTensor kc(dt, {1, H, S, D}), vc(dt, {1, H, S, D});
  Random junk(1);
  for (int64_t e = 0; e < kc.numel(); ++e) { // padding: any finite value
    kc.set(e, junk.uniform(-50, 50));
    vc.set(e, junk.uniform(-50, 50));
  }
  for (int64_t h = 0; h < H; ++h) {
    std::memcpy(kc.b() + (h * S + p) * row, k.b() + h * n * row, n * row);
    std::memcpy(vc.b() + (h * S + p) * row, v.b() + h * n * row, n * row);
  }
  HostTensor length = i64({1}, {p + n});
  HostTensor keyMask(DType::I64, {1, S});
  for (int64_t j = 0; j < S; ++j)
    keyMask.i()[j] = j >= p;
  HostTensor out(dt, {1, H, T, D});
  runKernel(ops::Attention{0.125, causal, window},
            {&q, &kc, &vc, nullptr, nullptr, pad < 0 ? nullptr : &length,
             pad < 0 ? nullptr : &keyMask},
            out);
  return out;
}

TEST(Gemm, AttentionOfAPaddedQueryEqualsItUnpadded) {
  // Prefill (T = n: several query and key blocks) and decode (T = 1) with
  // 0 and k padding keys in front, on f32 and bf16: the same bits as the
  // keys alone.
  uint32_t seed = 780;
  for (DType dt : kFloatTypes)
    for (auto [T, n] : {std::pair<int64_t, int64_t>{1, 300},
                        {1, 7},
                        {5, 5},
                        {150, 600},
                        {70, 70}})
      for (int64_t window : {int64_t(0), int64_t(100)}) {
        Random rng(seed++);
        const int64_t H = 2, D = 64;
        HostTensor q = rng.floats(dt, {1, H, T, D});
        HostTensor k = rng.floats(dt, {1, H, n, D}),
                   v = rng.floats(dt, {1, H, n, D});
        const HostTensor alone =
            paddedAttention(dt, q, k, v, n, -1, n, true, window);
        for (int64_t pad :
             {int64_t(0), int64_t(3), int64_t(255), int64_t(256), int64_t(301)})
          expectEqual(
              paddedAttention(dt, q, k, v, n, pad, pad + n + 9, true, window),
              alone,
              std::string(dtypeName(dt)) + " T" + std::to_string(T) + " n" +
                  std::to_string(n) + " window" + std::to_string(window) +
                  " pad" + std::to_string(pad));
      }
}

} // namespace
} // namespace hybrid::cpu::test
