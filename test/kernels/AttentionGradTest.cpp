// attention_grad (attention's backward) against a double-precision
// reference written from the op's definition: odd sizes, causal limits
// with T = S and T < S, sliding windows, left padding (with rows and a
// whole batch row that see no key), additive masks of several broadcast
// shapes (with -inf), ALiBi slopes, grouped KV heads (2 and 4 query heads
// per KV head), f32, bf16 and f16; the gradient of the forward kernel
// (ALiBi, causal, T < S, grouped heads) by finite differences; and its
// errors.
#include "KernelTestSupport.h"

#include <array>
#include <cmath>
#include <limits>

namespace hybrid::cpu::test {
namespace {

struct GradCase {
  const char *name;
  int64_t B, Hq, Hkv, T, S, Dh, Dv;
  bool causal = false;
  int64_t window = 0;
  Shape maskShape = {}; ///< empty: no mask
  /// Leading padding keys per batch row (key_mask); empty: no key mask.
  std::vector<int64_t> padding = {};
  DType keyMaskType = DType::I64;
  bool alibi = false; ///< one slope per query head
};

const GradCase kCases[] = {
    {"plain odd", 2, 3, 3, 7, 11, 5, 6},
    {"causal", 2, 2, 2, 13, 13, 9, 9, true},
    {"causal T < S", 1, 2, 1, 5, 9, 7, 7, true},
    {"sliding window", 1, 2, 2, 17, 17, 6, 6, true, 4},
    {"window without causal", 1, 1, 1, 9, 9, 3, 3, false, 3},
    {"left padding", 3, 2, 2, 10, 10, 5, 5, true, 0, {}, {0, 3, 10}},
    {"left padding i32", 2, 2, 1, 6, 6, 4, 4, false, 0, {}, {2, 6}, DType::I32},
    {"mask [B,1,T,S]", 2, 2, 2, 6, 7, 5, 5, false, 0, {2, 1, 6, 7}},
    {"mask [T,S] causal", 1, 2, 2, 8, 8, 4, 4, true, 0, {8, 8}},
    {"mask [B,1,1,S] padded",
     2,
     2,
     2,
     5,
     5,
     3,
     3,
     true,
     0,
     {2, 1, 1, 5},
     {1, 0}},
    {"gqa 2", 2, 4, 2, 9, 9, 7, 5, true},
    {"gqa 4 padded window", 2, 8, 2, 11, 11, 3, 3, true, 5, {}, {4, 0}},
    {"alibi causal", 2, 4, 4, 9, 9, 5, 5, true, 0, {}, {}, DType::I64, true},
    {"alibi T < S gqa padded",
     2,
     4,
     2,
     5,
     8,
     4,
     4,
     true,
     0,
     {},
     {2, 0},
     DType::I64,
     true},
    {"alibi window mask",
     1,
     2,
     2,
     10,
     10,
     3,
     3,
     true,
     4,
     {1, 1, 10, 10},
     {},
     DType::I64,
     true},
};

struct Inputs {
  HostTensor q, k, v, gradOut, mask, keyMask, slopes;
  bool hasMask = false, hasKeyMask = false, hasSlopes = false;
  const HostTensor *maskOrNull() const { return hasMask ? &mask : nullptr; }
  const HostTensor *slopesOrNull() const {
    return hasSlopes ? &slopes : nullptr;
  }
  const HostTensor *keyMaskOrNull() const {
    return hasKeyMask ? &keyMask : nullptr;
  }
};

/// Random inputs (never zeros); the mask holds -inf at a few places and in
/// every entry of its first row, so that row sees no key at all.
Inputs makeInputs(const GradCase &c, DType dt, Random &rng) {
  Inputs in;
  in.q = rng.floats(dt, {c.B, c.Hq, c.T, c.Dh}, 0.1f, 1.5f);
  in.k = rng.floats(dt, {c.B, c.Hkv, c.S, c.Dh}, -1.5f, -0.1f);
  in.v = rng.floats(dt, {c.B, c.Hkv, c.S, c.Dv}, 0.2f, 2.0f);
  in.gradOut = rng.floats(dt, {c.B, c.Hq, c.T, c.Dv}, -2.0f, -0.2f);
  for (HostTensor *t : {&in.q, &in.k})
    for (int64_t e = 0; e < t->numel(); e += 3)
      t->set(e, -t->at(e)); // both signs
  if (!c.maskShape.empty()) {
    in.hasMask = true;
    in.mask = rng.floats(dt, c.maskShape, -1.0f, 1.0f);
    const int64_t S = c.maskShape.back();
    for (int64_t e = 0; e < in.mask.numel(); e += 5)
      in.mask.set(e, -std::numeric_limits<double>::infinity());
    if (c.maskShape.size() >= 2 && c.maskShape[c.maskShape.size() - 2] > 1)
      for (int64_t j = 0; j < S; ++j)
        in.mask.set(j, -std::numeric_limits<double>::infinity());
  }
  if (c.alibi) { // BLOOM's are 2^(-8 h / Hq); larger ones move p more
    in.hasSlopes = true;
    in.slopes = rng.floats(dt, {c.Hq}, 0.05f, 0.8f);
  }
  if (!c.padding.empty()) {
    in.hasKeyMask = true;
    in.keyMask = HostTensor(c.keyMaskType, {c.B, c.S});
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.S; ++j)
        in.keyMask.set(b * c.S + j, j < c.padding[b] ? 0 : 1);
  }
  return in;
}

/// The gradients as the op defines them, in double: p = softmax over the
/// visible keys (causal and window limits aligned to the end of the keys,
/// no padding) of q k^T scale + mask + slope_h (j - i) (none visible: p =
/// 0), dv = p^T dO,
/// dp = dO v^T, ds = p (dp - rowsum(dp p)), dq = ds k scale,
/// dk = ds^T q scale, query heads summed into their KV head.
std::array<std::vector<double>, 3> reference(const GradCase &c,
                                             const Inputs &in, double scale) {
  std::vector<double> dq(c.B * c.Hq * c.T * c.Dh, 0.0),
      dk(c.B * c.Hkv * c.S * c.Dh, 0.0), dv(c.B * c.Hkv * c.S * c.Dv, 0.0);
  const int64_t group = c.Hq / c.Hkv;
  std::vector<double> s(c.S), p(c.S), dp(c.S);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.T; ++i) {
        const int64_t kv = h / group, last = i + c.S - c.T;
        auto qAt = [&](int64_t d) {
          return in.q.at(((b * c.Hq + h) * c.T + i) * c.Dh + d);
        };
        auto oAt = [&](int64_t d) {
          return in.gradOut.at(((b * c.Hq + h) * c.T + i) * c.Dv + d);
        };
        auto kRow = ((b * c.Hkv + kv) * c.S) * c.Dh;
        auto vRow = ((b * c.Hkv + kv) * c.S) * c.Dv;
        double max = -INFINITY;
        for (int64_t j = 0; j < c.S; ++j) {
          s[j] = -INFINITY;
          if ((c.causal && j > last) ||
              (c.window > 0 && j <= last - c.window) ||
              (!c.padding.empty() && j < c.padding[b]))
            continue;
          double dot = 0;
          for (int64_t d = 0; d < c.Dh; ++d)
            dot += qAt(d) * in.k.at(kRow + j * c.Dh + d);
          s[j] = dot * scale;
          if (in.hasMask)
            s[j] += in.mask.at(broadcastIndex({b, h, i, j}, c.maskShape));
          if (c.alibi)
            s[j] += in.slopes.at(h) * static_cast<double>(j - i);
          max = std::max(max, s[j]);
        }
        if (max == -INFINITY)
          continue; // sees no key: p = 0, no gradient
        double sum = 0;
        for (int64_t j = 0; j < c.S; ++j)
          sum += p[j] = std::exp(s[j] - max);
        double D = 0;
        for (int64_t j = 0; j < c.S; ++j) {
          p[j] /= sum;
          dp[j] = 0;
          for (int64_t d = 0; d < c.Dv; ++d)
            dp[j] += oAt(d) * in.v.at(vRow + j * c.Dv + d);
          D += dp[j] * p[j];
        }
        for (int64_t j = 0; j < c.S; ++j) {
          const double ds = p[j] * (dp[j] - D) * scale;
          for (int64_t d = 0; d < c.Dh; ++d) {
            dq[((b * c.Hq + h) * c.T + i) * c.Dh + d] +=
                ds * in.k.at(kRow + j * c.Dh + d);
            dk[kRow + j * c.Dh + d] += ds * qAt(d);
          }
          for (int64_t d = 0; d < c.Dv; ++d)
            dv[vRow + j * c.Dv + d] += p[j] * oAt(d);
        }
      }
  return {dq, dk, dv};
}

double maxAbs(const std::vector<double> &v) {
  double m = 0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

TEST(AttentionGrad, MatchesDoubleReference) {
  Random rng(77);
  const char *names[] = {"dq", "dk", "dv"};
  for (const GradCase &c : kCases)
    for (DType dt : kFloatTypes) {
      const Inputs in = makeInputs(c, dt, rng);
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
      const ops::AttentionGrad op{scale, c.causal, c.window};
      HostTensor dq(dt, in.q.shape), dk(dt, in.k.shape), dv(dt, in.v.shape);
      runKernelOnResults(op,
                         {&in.q, &in.k, &in.v, &in.gradOut, in.maskOrNull(),
                          in.slopesOrNull(), in.keyMaskOrNull()},
                         {&dq, &dk, &dv});
      const auto want = reference(c, in, scale);
      const HostTensor *got[] = {&dq, &dk, &dv};
      for (int r = 0; r < 3; ++r) {
        // Sums of products computed in f32 (1e-5 of the largest gradient);
        // bf16 and f16 round each result once.
        const double largest = maxAbs(want[r]);
        const Tolerance tol = toleranceFor(dt, 1e-5, 1e-5);
        expectNear(*got[r], want[r], tol.atol * std::max(largest, 1.0),
                   tol.rtol,
                   std::string(c.name) + " " + dtypeName(dt) + " " + names[r]);
      }
    }
}

/// sum(attention(q, k, v) o gradOut) by the forward kernel, in double.
double forwardDot(const GradCase &c, const Inputs &in, double scale,
                  const HostTensor &q, const HostTensor &k,
                  const HostTensor &v) {
  HostTensor out(DType::F32, in.gradOut.shape);
  runKernel(ops::Attention{scale, c.causal, c.window},
            {&q, &k, &v, in.maskOrNull(), in.slopesOrNull(), nullptr,
             in.keyMaskOrNull()},
            out);
  double sum = 0;
  for (int64_t e = 0; e < out.numel(); ++e)
    sum += out.at(e) * in.gradOut.at(e);
  return sum;
}

TEST(AttentionGrad, IsTheForwardKernelsDerivative) {
  // The backward's bias is the forward's: central differences of the
  // forward kernel (ALiBi, an additive mask, causal with T < S, grouped
  // heads, padding) along every element of q, k and v, in f32.
  const GradCase c{"fd",         2,      4,          2,   4, 6, 3, 3, true, 0,
                   {2, 1, 4, 6}, {1, 0}, DType::I64, true};
  Random rng(11);
  Inputs in = makeInputs(c, DType::F32, rng);
  for (int64_t e = 0; e < in.mask.numel(); ++e) // finite: no -inf rows
    if (std::isinf(in.mask.at(e)))
      in.mask.set(e, -2.0);
  const double scale = 0.7;
  HostTensor dq(DType::F32, in.q.shape), dk(DType::F32, in.k.shape),
      dv(DType::F32, in.v.shape);
  runKernelOnResults(ops::AttentionGrad{scale, c.causal, c.window},
                     {&in.q, &in.k, &in.v, &in.gradOut, in.maskOrNull(),
                      in.slopesOrNull(), in.keyMaskOrNull()},
                     {&dq, &dk, &dv});
  const HostTensor *grads[] = {&dq, &dk, &dv};
  const double eps = 1e-2;
  for (int which = 0; which < 3; ++which) {
    for (int64_t e = 0; e < grads[which]->numel(); ++e) {
      HostTensor x[3] = {in.q, in.k, in.v};
      const double at = x[which].at(e);
      x[which].set(e, at + eps);
      const double up = forwardDot(c, in, scale, x[0], x[1], x[2]);
      x[which].set(e, at - eps);
      const double down = forwardDot(c, in, scale, x[0], x[1], x[2]);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grads[which]->at(e), numeric,
                  2e-3 * std::max(1.0, std::fabs(numeric)))
          << "operand " << which << " element " << e;
    }
  }
}

TEST(AttentionGrad, RowWithoutKeysHasZeroGradient) {
  // Batch row 1 is all padding: its query gradients and its keys' and
  // values' gradients are exactly zero (not NaN).
  const GradCase c{"all padding", 2, 2, 1, 4, 4, 3, 3, true, 0, {}, {1, 4}};
  Random rng(5);
  const Inputs in = makeInputs(c, DType::F32, rng);
  HostTensor dq(DType::F32, in.q.shape), dk(DType::F32, in.k.shape),
      dv(DType::F32, in.v.shape);
  runKernelOnResults(
      ops::AttentionGrad{0.5, true, 0},
      {&in.q, &in.k, &in.v, &in.gradOut, nullptr, nullptr, &in.keyMask},
      {&dq, &dk, &dv});
  for (int64_t e = dq.numel() / 2; e < dq.numel(); ++e)
    ASSERT_EQ(dq.at(e), 0.0) << e;
  for (const HostTensor *t : {&dk, &dv})
    for (int64_t e = t->numel() / 2; e < t->numel(); ++e)
      ASSERT_EQ(t->at(e), 0.0) << e;
  // Row 0's first query sees only padding too.
  for (int64_t d = 0; d < c.Dh; ++d)
    EXPECT_EQ(dq.at(d), 0.0);
}

TEST(AttentionGrad, RejectsInconsistentCalls) {
  Random rng(3);
  HostTensor q = rng.f32({1, 4, 3, 2}), k = rng.f32({1, 3, 5, 2}),
             v = rng.f32({1, 3, 5, 2}), o = rng.f32({1, 4, 3, 2});
  HostTensor dq(DType::F32, q.shape), dk(DType::F32, k.shape),
      dv(DType::F32, v.shape);
  auto error = [&](const HostTensor &query, const HostTensor &key,
                   const HostTensor &value, const HostTensor &grad,
                   const HostTensor *mask, const HostTensor *keyMask,
                   int64_t window = 0, const HostTensor *slopes = nullptr) {
    try {
      runKernelOnResults(ops::AttentionGrad{1, false, window},
                         {&query, &key, &value, &grad, mask, slopes, keyMask},
                         {&dq, &dk, &dv});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(q, k, v, o, nullptr, nullptr),
            "attention_grad: 4 query heads are not a multiple of 3 KV heads");
  HostTensor k2 = rng.f32({1, 2, 5, 2}), v2 = rng.f32({1, 2, 5, 2});
  dk = HostTensor(DType::F32, k2.shape);
  dv = HostTensor(DType::F32, v2.shape);
  EXPECT_NE(error(q, k2, v2, rng.f32({1, 4, 3, 3}), nullptr, nullptr)
                .find("grad_out"),
            std::string::npos);
  HostTensor mask = rng.f32({1, 4, 2, 5});
  EXPECT_NE(error(q, k2, v2, o, &mask, nullptr).find("does not broadcast"),
            std::string::npos);
  HostTensor keyMask = rng.f32({1, 5});
  EXPECT_NE(error(q, k2, v2, o, nullptr, &keyMask).find("key_mask"),
            std::string::npos);
  EXPECT_NE(error(q, k2, v2, o, nullptr, nullptr, -1).find("sliding window"),
            std::string::npos);
  HostTensor slopes = rng.f32({3});
  EXPECT_EQ(error(q, k2, v2, o, nullptr, nullptr, 0, &slopes),
            "attention_grad: alibi_slopes [3] must hold one slope per query "
            "head (4)");
}

} // namespace
} // namespace hybrid::cpu::test
