// attention, rotary and embedding against naive references.
#include "KernelTestSupport.h"

#include <array>
#include <chrono>
#include <limits>

namespace hybrid::cpu::test {
namespace {

struct AttentionCase {
  int64_t B, Hq, Hkv, T, S, Dh;
  bool causal = false;
  int64_t window = 0;
  Shape maskShape; // empty: no mask
  bool alibi = false;
  int64_t Dv = 0;         // 0: Dh
  int64_t keyLength = -1; // the key_length operand; -1: absent
  /// Leading padding keys of each batch row (the key_mask operand); empty:
  /// absent.
  std::vector<int64_t> padding = {};
  DType keyMaskType = DType::I64;
  int64_t dv() const { return Dv ? Dv : Dh; }
  /// The keys that exist (S').
  int64_t keys() const { return keyLength >= 0 ? keyLength : S; }
};

/// Attention as written in the op's description, in double: scores, then a
/// softmax over the visible keys (the first S' = key_length, less the
/// row's padding, within the causal and window limits aligned to the end
/// of the S'); no visible key (or only -inf) gives 0.
std::vector<double> naiveAttention(const AttentionCase &c, const HostTensor &q,
                                   const HostTensor &k, const HostTensor &v,
                                   const HostTensor *mask,
                                   const HostTensor *slopes, double scale) {
  const int64_t Dv = c.dv();
  std::vector<double> out(c.B * c.Hq * c.T * Dv, 0.0);
  const int64_t group = c.Hq / c.Hkv;
  const int64_t Sp = c.keys();
  std::vector<double> s(c.S);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.T; ++i) {
        const int64_t kvh = h / group;
        std::fill(s.begin(), s.end(), -INFINITY);
        for (int64_t j = 0; j < Sp; ++j) {
          if (c.causal && j > i + Sp - c.T)
            continue;
          if (c.window > 0 && j <= i + Sp - c.T - c.window)
            continue;
          if (!c.padding.empty() && j < c.padding[b])
            continue;
          double dot = 0;
          for (int64_t d = 0; d < c.Dh; ++d)
            dot += q.at(((b * c.Hq + h) * c.T + i) * c.Dh + d) *
                   k.at(((b * c.Hkv + kvh) * c.S + j) * c.Dh + d);
          s[j] = dot * scale;
          if (mask)
            s[j] += mask->at(broadcastIndex({b, h, i, j}, mask->shape));
          if (slopes)
            s[j] += slopes->at(h) * double(j - i);
        }
        double m = -INFINITY;
        for (double x : s)
          m = std::max(m, x);
        if (m == -INFINITY)
          continue;
        double sum = 0;
        for (double x : s)
          sum += std::exp(x - m);
        for (int64_t j = 0; j < Sp; ++j) {
          double p = std::exp(s[j] - m) / sum;
          if (p == 0)
            continue;
          for (int64_t d = 0; d < Dv; ++d)
            out[((b * c.Hq + h) * c.T + i) * Dv + d] +=
                p * v.at(((b * c.Hkv + kvh) * c.S + j) * Dv + d);
        }
      }
  return out;
}

std::string describe(const AttentionCase &c, DType dt) {
  return std::string("attention ") + dtypeName(dt) + " B" +
         std::to_string(c.B) + " Hq" + std::to_string(c.Hq) + " Hkv" +
         std::to_string(c.Hkv) + " T" + std::to_string(c.T) + " S" +
         std::to_string(c.S) + " Dh" + std::to_string(c.Dh) + " Dv" +
         std::to_string(c.dv()) + " causal" + std::to_string(c.causal) +
         " window" + std::to_string(c.window) + " mask" +
         shapeToString(c.maskShape) + " alibi" + std::to_string(c.alibi) +
         " key_length" + std::to_string(c.keyLength) + " padded" +
         std::to_string(!c.padding.empty());
}

/// The key_length and key_mask operands of a case (empty when absent).
HostTensor keyLengthOf(const AttentionCase &c) {
  return c.keyLength >= 0 ? i64({1}, {c.keyLength}) : HostTensor();
}
HostTensor keyMaskOf(const AttentionCase &c) {
  if (c.padding.empty())
    return HostTensor();
  HostTensor mask(c.keyMaskType, {c.B, c.S});
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = 0; j < c.S; ++j) // any non-zero value is a token
      mask.set(b * c.S + j, j < c.padding[b] ? 0 : 1 + j % 3);
  return mask;
}

/// Runs the kernel on a case's operands (absent ones as the case says).
HostTensor runAttention(const AttentionCase &c, double scale,
                        const HostTensor &q, const HostTensor &k,
                        const HostTensor &v, const HostTensor *mask,
                        const HostTensor *slopes) {
  const HostTensor length = keyLengthOf(c), keyMask = keyMaskOf(c);
  HostTensor got(q.dtype, {c.B, c.Hq, c.T, c.dv()});
  runKernel(ops::Attention{scale, c.causal, c.window},
            {&q, &k, &v, mask, slopes, c.keyLength >= 0 ? &length : nullptr,
             c.padding.empty() ? nullptr : &keyMask},
            got);
  return got;
}

void checkAttention(const AttentionCase &c, uint32_t seed,
                    DType dt = DType::F32) {
  Random rng(seed);
  HostTensor q = rng.floats(dt, {c.B, c.Hq, c.T, c.Dh});
  HostTensor k = rng.floats(dt, {c.B, c.Hkv, c.S, c.Dh});
  HostTensor v = rng.floats(dt, {c.B, c.Hkv, c.S, c.dv()});
  HostTensor mask = rng.floats(dt, c.maskShape, -3, 1);
  // Some fully masked entries, as padding masks have.
  for (int64_t e = 0; e < mask.numel(); e += 5)
    mask.set(e, -INFINITY);
  HostTensor slopes = rng.floats(dt, {c.Hq}, 0.01f, 0.5f);
  if (c.keyLength >= 0) {
    // Slots past key_length are an unfilled cache: they must not be read.
    if (!c.maskShape.empty() && c.maskShape.back() == c.S)
      for (int64_t e = 0; e < mask.numel(); ++e)
        if (e % c.S >= c.keyLength)
          mask.set(e, NAN);
    for (int64_t e = 0; e < k.numel(); ++e)
      if (e / c.Dh % c.S >= c.keyLength)
        k.set(e, NAN);
    for (int64_t e = 0; e < v.numel(); ++e)
      if (e / c.dv() % c.S >= c.keyLength)
        v.set(e, NAN);
  }
  const double scale = 1 / std::sqrt(double(c.Dh));
  const bool hasMask = !c.maskShape.empty();
  std::vector<double> want =
      naiveAttention(c, q, k, v, hasMask ? &mask : nullptr,
                     c.alibi ? &slopes : nullptr, scale);
  // The kernel scales in f32.
  HostTensor got =
      runAttention(c, double(float(scale)), q, k, v, hasMask ? &mask : nullptr,
                   c.alibi ? &slopes : nullptr);
  for (int64_t e = 0; e < got.numel(); ++e)
    ASSERT_FALSE(std::isnan(got.at(e))) << "NaN at " << e;
  const Tolerance tol = toleranceFor(dt, 2e-5, 1e-4);
  expectNear(got, want, tol.atol, tol.rtol, describe(c, dt));
}

TEST(Attention, MatchesNaiveReference) {
  // Small (one block) and large (many blocks) problems; prefill (T == S),
  // decode (T == 1) and chunked (T < S) queries; more queries than keys.
  const std::vector<std::array<int64_t, 6>> sizes = {
      {1, 2, 2, 1, 1, 4},     {2, 4, 2, 1, 9, 8},   {1, 4, 1, 5, 5, 8},
      {2, 6, 3, 3, 7, 16},    {1, 2, 2, 6, 4, 8},   {1, 4, 2, 96, 96, 32},
      {2, 2, 1, 70, 150, 64}, {1, 3, 3, 1, 300, 64}};
  uint32_t seed = 60;
  for (DType dt : kFloatTypes)
    for (auto [B, Hq, Hkv, T, S, Dh] : sizes)
      for (bool causal : {false, true})
        for (int64_t window : {int64_t(0), int64_t(3)})
          for (int maskKind = 0; maskKind < 3; ++maskKind)
            for (bool alibi : {false, true}) {
              AttentionCase c{B, Hq, Hkv, T, S, Dh, causal, window, {}, alibi};
              if (maskKind == 1)
                c.maskShape = {B, 1, T, S}; // HF 4-D padding/causal mask
              else if (maskKind == 2)
                c.maskShape = {S}; // broadcast from the right
              checkAttention(c, seed++, dt);
            }
}

TEST(Attention, BlocksOfQueriesAndKeys) {
  // Several 64-query and 256-key blocks, windows that end inside blocks,
  // chunked prefill (T < S), a value width other than the key's, and masks
  // that hide whole key blocks from some rows.
  uint32_t seed = 100;
  for (DType dt : kFloatTypes)
    for (bool causal : {false, true})
      for (int64_t window : {int64_t(0), int64_t(5), int64_t(300)}) {
        checkAttention({1, 2, 1, 130, 600, 16, causal, window, {}, false, 24},
                       seed++, dt);
        checkAttention(
            {2, 2, 2, 200, 200, 32, causal, window, {2, 1, 200, 200}, true},
            seed++, dt);
      }
}

TEST(Attention, MidSizePrefillMatchesReference) {
  // T = S = 1,500: 24 query blocks by 6 key blocks per head.
  checkAttention({1, 2, 1, 1500, 1500, 64, true, 0, {}, false}, 110);
  checkAttention({1, 1, 1, 1500, 1500, 64, false, 0, {}, false}, 111,
                 DType::BF16);
}

TEST(Attention, ScratchDoesNotGrowWithTheSequence) {
  // Llama at T = 20,000 once needed 3.2 GB of score matrices outside any
  // plan; blocks keep scratch to a few hundred KB per thread.
  for (DType dt : kFloatTypes)
    for (int64_t T :
         {int64_t(1), int64_t(2000), int64_t(20000), int64_t(30000)}) {
      const Op op = ops::Attention{0.125, true};
      KernelCall call;
      call.op = &op;
      call.operands = {ConstTensor(nullptr, dt, {1, 32, T, 64}),
                       ConstTensor(nullptr, dt, {1, 8, 30000, 64}),
                       ConstTensor(nullptr, dt, {1, 8, 30000, 64}),
                       ConstTensor::absent(),
                       ConstTensor::absent(),
                       ConstTensor::absent(),
                       ConstTensor::absent()};
      Tensor result;
      result.dtype = dt;
      result.shape = {1, 32, T, 64};
      call.results = {result};
      const size_t bytes = scratchBytes(findKernel(op), call, 16);
      EXPECT_GT(bytes, 0u);
      EXPECT_LT(bytes, size_t(64) << 20) << dtypeName(dt) << " T " << T;
      if (T > 1)
        EXPECT_LT(bytes, size_t(8) << 20) << dtypeName(dt) << " T " << T;
    }
}

TEST(Attention, FullyMaskedRowsAreZero) {
  // T > S with causal: the first queries see no key at all.
  AttentionCase c{1, 2, 1, 4, 2, 4, true, 0, {}, false};
  checkAttention(c, 70);
  // A mask of -inf everywhere.
  Random rng(71);
  HostTensor q = rng.f32({1, 1, 2, 4}), k = rng.f32({1, 1, 3, 4}),
             v = rng.f32({1, 1, 3, 4});
  HostTensor mask = f32({3}, {-INFINITY, -INFINITY, -INFINITY});
  HostTensor got(DType::F32, {1, 1, 2, 4});
  runKernel(ops::Attention{0.5}, {&q, &k, &v, &mask, nullptr, nullptr, nullptr},
            got);
  for (int64_t e = 0; e < got.numel(); ++e)
    EXPECT_EQ(got.f()[e], 0.0f);
  // The same with several query rows per block.
  HostTensor q2 = rng.f32({1, 1, 64, 64}), k2 = rng.f32({1, 1, 64, 64}),
             v2 = rng.f32({1, 1, 64, 64});
  HostTensor mask2(DType::F32, {64, 64});
  for (int64_t e = 0; e < mask2.numel(); ++e)
    mask2.f()[e] = e < 64 ? -INFINITY : 0.0f; // row 0 fully masked
  HostTensor got2(DType::F32, {1, 1, 64, 64});
  runKernel(ops::Attention{0.125},
            {&q2, &k2, &v2, &mask2, nullptr, nullptr, nullptr}, got2);
  for (int64_t e = 0; e < 64; ++e)
    EXPECT_EQ(got2.f()[e], 0.0f);
  for (int64_t e = 64; e < got2.numel(); ++e)
    ASSERT_TRUE(std::isfinite(got2.f()[e]));
}

TEST(Attention, WindowsAtTheEdges) {
  // A window as long as the keys, or far longer, limits nothing; a window of
  // 1 sees only the aligned key.
  for (int64_t window :
       {int64_t(1), int64_t(7), std::numeric_limits<int64_t>::max()})
    for (bool causal : {false, true}) {
      checkAttention({1, 2, 1, 3, 7, 8, causal, window, {}, false}, 90);
      checkAttention({1, 2, 2, 80, 80, 64, causal, window, {}, false}, 91);
    }
}

TEST(Attention, KeyLengthCountsTheFilledSlots) {
  // A cache of S slots holding S' keys (the rest NaN): decode steps (T = 1),
  // chunked prefill (T > 1, on both paths), S' < T (the first causal rows
  // see nothing), S' = 0 and S' = S.
  const std::vector<std::array<int64_t, 7>> sizes = {
      // B, Hq, Hkv, T, S, Dh, S'
      {2, 4, 2, 1, 9, 8, 5},       {1, 2, 1, 1, 300, 64, 20},
      {2, 4, 2, 3, 16, 8, 7},      {1, 2, 2, 5, 12, 8, 3},
      {1, 2, 1, 4, 8, 8, 0},       {1, 2, 1, 3, 10, 8, 10},
      {1, 2, 1, 70, 600, 64, 300}, {2, 2, 2, 100, 700, 32, 150},
      {1, 3, 1, 9, 400, 16, 261}};
  uint32_t seed = 200;
  for (DType dt : kFloatTypes)
    for (auto [B, Hq, Hkv, T, S, Dh, keys] : sizes)
      for (bool causal : {false, true})
        for (int64_t window : {int64_t(0), int64_t(4)})
          for (int maskKind = 0; maskKind < 3; ++maskKind) {
            AttentionCase c{B, Hq, Hkv, T, S, Dh, causal, window, {}, false};
            c.keyLength = keys;
            c.alibi = maskKind != 1;
            if (maskKind == 1)
              c.maskShape = {B, 1, T, S};
            else if (maskKind == 2)
              c.maskShape = {S};
            checkAttention(c, seed++, dt);
          }
}

TEST(Attention, KeyMaskHidesLeftPadding) {
  // Left-padded prompts of a batch: the prompt itself, a decode step in a
  // cache, a chunk that meets a row of padding only (zeros), and the GEMM
  // path; i32 and i64 masks, with the other limits and biases.
  uint32_t seed = 300;
  for (DType dt : kFloatTypes)
    for (DType maskType : {DType::I32, DType::I64})
      for (bool causal : {false, true}) {
        auto padded = [&](AttentionCase c, std::vector<int64_t> padding) {
          c.padding = std::move(padding);
          c.keyMaskType = maskType;
          checkAttention(c, seed++, dt);
        };
        padded({3, 4, 2, 6, 6, 8, causal, 0, {}, false}, {0, 2, 5});
        padded({3, 4, 2, 1, 12, 8, causal, 0, {}, true, 0, 7}, {0, 2, 5});
        padded({3, 4, 2, 3, 12, 8, causal, 2, {3, 1, 1, 12}, true, 0, 9},
               {0, 2, 9});
        padded({2, 2, 1, 80, 400, 32, causal, 0, {2, 1, 80, 400}, true, 0, 300},
               {0, 37});
        padded({2, 2, 2, 90, 90, 32, causal, 30, {}, false}, {70, 0});
      }
}

TEST(Attention, CacheOfCapacityEqualsTheFilledKeysAlone) {
  // What the decode step relies on: attention over a cache of capacity C
  // holding n keys equals attention over those n keys alone, bitwise (the
  // same blocks, the same arithmetic in the same order).
  struct Size {
    int64_t T, n, C, Dh;
  };
  const Size sizes[] = {{1, 20, 512, 64},
                        {4, 20, 64, 16},
                        {64, 300, 1024, 64},
                        {100, 700, 1000, 32}};
  const int64_t B = 2, Hq = 4, Hkv = 2;
  uint32_t seed = 400;
  for (DType dt : kFloatTypes)
    for (const Size &z : sizes)
      for (bool withMasks : {false, true}) {
        Random rng(seed++);
        HostTensor q = rng.floats(dt, {B, Hq, z.T, z.Dh});
        HostTensor kc(dt, {B, Hkv, z.C, z.Dh}), vc(dt, {B, Hkv, z.C, z.Dh});
        HostTensor k = rng.floats(dt, {B, Hkv, z.n, z.Dh}),
                   v = rng.floats(dt, {B, Hkv, z.n, z.Dh});
        const size_t es = dtypeSize(dt), row = z.Dh * es;
        for (int64_t e = 0; e < kc.numel(); ++e) {
          kc.set(e, NAN);
          vc.set(e, NAN);
        }
        for (int64_t bh = 0; bh < B * Hkv; ++bh) {
          std::memcpy(kc.b() + bh * z.C * row, k.b() + bh * z.n * row,
                      z.n * row);
          std::memcpy(vc.b() + bh * z.C * row, v.b() + bh * z.n * row,
                      z.n * row);
        }
        HostTensor mask = rng.floats(dt, {B, 1, z.T, z.n}, -2, 1);
        HostTensor maskC(dt, {B, 1, z.T, z.C});
        for (int64_t r = 0; r < B * z.T; ++r)
          for (int64_t j = 0; j < z.C; ++j)
            maskC.set(r * z.C + j, j < z.n ? mask.at(r * z.n + j) : NAN);
        HostTensor slopes = rng.floats(dt, {Hq}, 0.01f, 0.5f);
        HostTensor keyMask(DType::I64, {B, z.n}),
            keyMaskC(DType::I64, {B, z.C});
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < z.C; ++j) {
            const bool token = j >= 3 * b;
            keyMaskC.i()[b * z.C + j] = token;
            if (j < z.n)
              keyMask.i()[b * z.n + j] = token;
          }
        HostTensor length = i64({1}, {z.n});
        const Op op = ops::Attention{0.125, true, 0};
        HostTensor alone(dt, {B, Hq, z.T, z.Dh}), cached(dt, alone.shape);
        runKernel(op,
                  {&q, &k, &v, withMasks ? &mask : nullptr,
                   withMasks ? &slopes : nullptr, nullptr,
                   withMasks ? &keyMask : nullptr},
                  alone);
        runKernel(op,
                  {&q, &kc, &vc, withMasks ? &maskC : nullptr,
                   withMasks ? &slopes : nullptr, &length,
                   withMasks ? &keyMaskC : nullptr},
                  cached);
        const std::string what =
            std::string(dtypeName(dt)) + " T" + std::to_string(z.T) + " n" +
            std::to_string(z.n) + " C" + std::to_string(z.C);
        expectEqual(cached, alone, what);
      }
}

TEST(Attention, KeyLengthBoundsTheWork) {
  // A decode step at position 16 of a 16,384-slot cache pays for 16 keys:
  // timed against the full cache, with a margin no busy host erases (the
  // expected ratio is about 1,000).
  const int64_t C = 16384;
  Random rng(500);
  HostTensor q = rng.f32({1, 8, 1, 64}), kv = rng.f32({1, 8, C, 64});
  HostTensor out(DType::F32, q.shape);
  auto best = [&](int64_t n) {
    HostTensor length = i64({1}, {n});
    double fastest = 1e30;
    for (int rep = 0; rep < 7; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      runKernel(ops::Attention{0.125, true},
                {&q, &kv, &kv, nullptr, nullptr, &length, nullptr}, out);
      fastest = std::min(fastest, std::chrono::duration<double>(
                                      std::chrono::steady_clock::now() - t0)
                                      .count());
    }
    return fastest;
  };
  const double full = best(C), filled = best(16);
  EXPECT_LT(filled * 20, full) << "16 keys: " << filled * 1e3
                               << " ms, 16,384 keys: " << full * 1e3 << " ms";
}

TEST(Attention, RejectsBadKeyLengthAndKeyMask) {
  Random rng(501);
  HostTensor q = rng.f32({2, 2, 1, 4}), k = rng.f32({2, 1, 5, 4}),
             v = rng.f32({2, 1, 5, 4});
  const HostTensor result(DType::F32, {2, 2, 1, 4});
  auto error = [&](const HostTensor *length, const HostTensor *keyMask) {
    return errorOf(ops::Attention{0.5, true},
                   {&q, &k, &v, nullptr, nullptr, length, keyMask}, result);
  };
  for (int64_t n : {int64_t(6), int64_t(-1)}) {
    HostTensor length = i64({1}, {n});
    const std::string err = error(&length, nullptr);
    EXPECT_NE(err.find("key_length " + std::to_string(n)), std::string::npos)
        << err;
    EXPECT_NE(err.find("[0, 5]"), std::string::npos) << err;
  }
  HostTensor narrow = i64({1}, {3}).to(DType::I32), two = i64({2}, {3, 3});
  EXPECT_NE(error(&narrow, nullptr).find("key_length must be i64"),
            std::string::npos);
  EXPECT_NE(error(&two, nullptr).find("one element"), std::string::npos);
  HostTensor wide = i64({2, 6}, std::vector<int64_t>(12, 1));
  HostTensor floats = rng.f32({2, 5});
  EXPECT_NE(error(nullptr, &wide).find("key_mask has shape"),
            std::string::npos);
  EXPECT_NE(error(nullptr, &floats).find("unsupported element type f32"),
            std::string::npos);
  // The five operands of the older contract are not enough.
  EXPECT_NE(errorOf(ops::Attention{}, {&q, &k, &v, nullptr, nullptr}, result)
                .find("expected 7 operand(s)"),
            std::string::npos);
}

/// Runs an appending attention (results: the output and the two caches,
/// which are the key and value operands' memory); returns its error or "".
std::string runAppending(const Op &op, const std::vector<HostTensor *> &in,
                         HostTensor &out) {
  KernelCall call;
  call.op = &op;
  for (const HostTensor *t : in)
    call.operands.push_back(t ? t->cview() : ConstTensor::absent());
  call.results = {out.view(), in[1]->view(), in[2]->view()};
  const KernelEntry entry = findKernel(op);
  const size_t bytes = scratchBytes(entry, call, numThreads());
  std::vector<uint8_t> storage(bytes + 64); // 64-byte aligned, as promised
  uint8_t *base = storage.data();
  base += (64 - reinterpret_cast<uintptr_t>(base) % 64) % 64;
  call.scratch = bytes ? base : nullptr;
  call.scratchBytes = bytes;
  try {
    entry.run(call);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

// An attention that appends (hrt-fold-kv-appends) is, bit for bit, the two
// cache writes and then the attention; a bad offset is cache_write's error.
TEST(Attention, AppendIsCacheWritesThenAttention) {
  Random rng(91);
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t tn : {1, 3}) {
      const int64_t B = 2, Hq = 4, Hkv = 2, cap = 37, at = 20, D = 24;
      HostTensor q = rng.floats(dt, {B, Hq, tn, D}),
                 keys = rng.floats(dt, {B, Hkv, cap, D}),
                 values = rng.floats(dt, {B, Hkv, cap, D}),
                 newKeys = rng.floats(dt, {B, Hkv, tn, D}),
                 newValues = rng.floats(dt, {B, Hkv, tn, D}),
                 length = i64({1}, {at + tn}), offset = i64({1}, {at});
      ops::Attention attrs{0.25, true};
      HostTensor wantKeys = keys, wantValues = values;
      runKernel(ops::CacheWrite{2}, {&newKeys, &offset}, wantKeys);
      runKernel(ops::CacheWrite{2}, {&newValues, &offset}, wantValues);
      HostTensor want(dt, {B, Hq, tn, D});
      runKernel(
          attrs,
          {&q, &wantKeys, &wantValues, nullptr, nullptr, &length, nullptr},
          want);
      attrs.append = true;
      HostTensor got(dt, {B, Hq, tn, D});
      ASSERT_EQ(runAppending(attrs,
                             {&q, &keys, &values, nullptr, nullptr, &length,
                              nullptr, &newKeys, &newValues, &offset},
                             got),
                "");
      EXPECT_EQ(got.bytes, want.bytes) << dtypeName(dt) << " tn " << tn;
      EXPECT_EQ(keys.bytes, wantKeys.bytes);
      EXPECT_EQ(values.bytes, wantValues.bytes);
      HostTensor past = i64({1}, {cap - tn + 1});
      EXPECT_NE(runAppending(attrs,
                             {&q, &keys, &values, nullptr, nullptr, &length,
                              nullptr, &newKeys, &newValues, &past},
                             got)
                    .find("does not fit"),
                std::string::npos);
    }
}

TEST(Attention, RejectsBadShapes) {
  Random rng(72);
  HostTensor q = rng.f32({1, 3, 2, 4}), k = rng.f32({1, 2, 5, 4}),
             v = rng.f32({1, 2, 5, 4});
  EXPECT_NE(errorOf(ops::Attention{},
                    {&q, &k, &v, nullptr, nullptr, nullptr, nullptr},
                    HostTensor(DType::F32, {1, 3, 2, 4}))
                .find("multiple"),
            std::string::npos);
  HostTensor q2 = rng.f32({1, 2, 2, 4});
  HostTensor badMask = rng.f32({3, 5});
  EXPECT_NE(errorOf(ops::Attention{},
                    {&q2, &k, &v, &badMask, nullptr, nullptr, nullptr},
                    HostTensor(DType::F32, {1, 2, 2, 4}))
                .find("broadcast"),
            std::string::npos);
  HostTensor slopes = rng.f32({3});
  EXPECT_NE(errorOf(ops::Attention{},
                    {&q2, &k, &v, nullptr, &slopes, nullptr, nullptr},
                    HostTensor(DType::F32, {1, 2, 2, 4})),
            "");
}

TEST(Rotary, HalfSplitAndInterleaved) {
  Random rng(73);
  const int64_t B = 2, H = 3, T = 5, D = 18;
  for (DType dt : kFloatTypes)
    for (int64_t R : {int64_t(18), int64_t(8)})
      for (int interleaved = 0; interleaved <= 1; ++interleaved)
        for (int64_t lead : {int64_t(1), B}) {
          HostTensor x = rng.floats(dt, {B, H, T, D});
          HostTensor cos(dt, {lead, T, R}), sin(dt, {lead, T, R});
          // HF layout: per-position angles, each frequency filling a pair.
          for (int64_t b = 0; b < lead; ++b)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t i = 0; i < R / 2; ++i) {
                double angle = (t + 3 * b) * std::pow(10000.0, -2.0 * i / R);
                int64_t p0 = interleaved ? 2 * i : i;
                int64_t p1 = interleaved ? 2 * i + 1 : i + R / 2;
                for (int64_t p : {p0, p1}) {
                  cos.set((b * T + t) * R + p, std::cos(angle));
                  sin.set((b * T + t) * R + p, std::sin(angle));
                }
              }
          std::vector<double> want(x.numel());
          for (int64_t b = 0; b < B; ++b)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t t = 0; t < T; ++t) {
                const int64_t row = ((b * H + h) * T + t) * D;
                auto xr = [&](int64_t d) { return x.at(row + d); };
                double *yr = want.data() + row;
                int64_t cb = lead == 1 ? 0 : b;
                for (int64_t d = 0; d < D; ++d)
                  yr[d] = xr(d);
                // Rotate each pair (x0, x1) by its angle.
                for (int64_t i = 0; i < R / 2; ++i) {
                  int64_t p0 = interleaved ? 2 * i : i;
                  int64_t p1 = interleaved ? 2 * i + 1 : i + R / 2;
                  double c = cos.at((cb * T + t) * R + p0);
                  double s = sin.at((cb * T + t) * R + p0);
                  yr[p0] = xr(p0) * c - xr(p1) * s;
                  yr[p1] = xr(p1) * c + xr(p0) * s;
                }
              }
          HostTensor got = run(ops::Rotary{static_cast<bool>(interleaved)},
                               {&x, &cos, &sin}, dt, x.shape);
          const Tolerance tol = toleranceFor(dt, 1e-5, 1e-5);
          expectNear(got, want, tol.atol, tol.rtol,
                     std::string("rotary ") + dtypeName(dt) + " R" +
                         std::to_string(R) + " interleaved" +
                         std::to_string(interleaved));
        }
  HostTensor x = rng.f32({1, 1, 2, 4}), c = rng.f32({1, 3, 4});
  EXPECT_NE(errorOf(ops::Rotary{}, {&x, &c, &c},
                    HostTensor(DType::F32, {1, 1, 2, 4})),
            "");
  HostTensor odd = rng.f32({1, 2, 3});
  EXPECT_NE(errorOf(ops::Rotary{}, {&x, &odd, &odd},
                    HostTensor(DType::F32, {1, 1, 2, 4})),
            "");
  HostTensor c2 = rng.f32({1, 2, 4}), h2 = c2.to(DType::F16);
  EXPECT_NE(errorOf(ops::Rotary{}, {&x, &h2, &h2},
                    HostTensor(DType::F32, {1, 1, 2, 4}))
                .find("same element type"),
            std::string::npos);
}

TEST(Embedding, LooksUpRowsAndNamesBadIds) {
  Random rng(74);
  for (DType dt : kAllTypes)
    for (DType it : {DType::I64, DType::I32}) {
      HostTensor table = rng.of(dt, {11, 7});
      HostTensor ids = tensorOf(it, {2, 3}, {0, 10, 3, 3, 1, 7});
      HostTensor got = run(ops::Embedding{}, {&table, &ids}, dt, {2, 3, 7});
      HostTensor want(dt, {2, 3, 7});
      const size_t row = 7 * dtypeSize(dt);
      for (int64_t t = 0; t < 6; ++t)
        std::memcpy(want.b() + t * row,
                    table.b() + static_cast<int64_t>(ids.at(t)) * row, row);
      expectEqual(got, want,
                  std::string("embedding ") + dtypeName(dt) + " ids " +
                      dtypeName(it));
    }
  HostTensor table = rng.f32({10, 6});
  HostTensor bad = i64({3}, {1, 10, 2});
  std::string err =
      errorOf(ops::Embedding{}, {&table, &bad}, HostTensor(DType::F32, {3, 6}));
  EXPECT_NE(err.find("id 10"), std::string::npos) << err;
  EXPECT_NE(err.find("10 rows"), std::string::npos) << err;
  HostTensor negative = i64({1}, {-1}).to(DType::I32);
  EXPECT_NE(errorOf(ops::Embedding{}, {&table, &negative},
                    HostTensor(DType::F32, {1, 6})),
            "");
  HostTensor floatIds = f32({1}, {1});
  EXPECT_NE(errorOf(ops::Embedding{}, {&table, &floatIds},
                    HostTensor(DType::F32, {1, 6}))
                .find("unsupported element type f32 for ids"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
