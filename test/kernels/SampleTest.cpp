// sample: greedy decoding, the exact token of each draw against a slow
// full-sort reference, reproducibility per seed and counter, and the drawn
// frequencies against the renormalised probabilities (chi-square).
#include "KernelTestSupport.h"

#include "common/TokenWeights.h"
#include "hybrid/Philox.h"

#include <cstdio>
#include <map>
#include <numeric>

namespace hybrid::cpu::test {
namespace {

/// The op's description, slowly: integer weights floor(2^q exp((l - max) /
/// T)) (common/TokenWeights.h; tokens of weight 0 never drawn), every token
/// ranked by weight (ties by index) with a stable full sort, the first
/// top_k kept, then the shortest prefix reaching top_p, then the walk until
/// the cumulative weight exceeds u times the kept total. The sums are exact
/// integers, so the order they are added in cannot matter.
int64_t referenceSample(const std::vector<float> &l, float temperature,
                        float topP, int64_t topK, float u) {
  const int64_t V = static_cast<int64_t>(l.size());
  int64_t best = -1;
  for (int64_t j = 0; j < V; ++j)
    if (!std::isnan(l[j]) && (best < 0 || l[j] > l[best]))
      best = j;
  if (best < 0)
    return 0;
  const float top = l[best];
  if (!(temperature > 0) || top == -INFINITY)
    return best;
  const int q = sampling::weightBits(V);
  std::vector<uint64_t> w(V);
  std::vector<int32_t> ranked;
  for (int64_t j = 0; j < V; ++j) {
    w[j] = sampling::tokenWeight(l[j], top, temperature, q);
    if (w[j] > 0)
      ranked.push_back(static_cast<int32_t>(j));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](int32_t a, int32_t b) { return w[a] > w[b]; });
  const int64_t n = static_cast<int64_t>(ranked.size());
  const int64_t kept = topK > 0 && topK < n ? topK : n;
  uint64_t total = 0;
  for (int64_t i = 0; i < kept; ++i)
    total += w[ranked[i]];
  int64_t walked = kept;
  if (topP < 1) {
    uint64_t cumulative = 0;
    int64_t i = 0;
    while (i < kept) {
      cumulative += w[ranked[i++]];
      if (double(cumulative) >= double(topP) * double(total))
        break;
    }
    walked = i;
    total = cumulative;
  }
  uint64_t cumulative = 0;
  for (int64_t i = 0; i < walked; ++i) {
    cumulative += w[ranked[i]];
    if (double(cumulative) > double(u) * double(total))
      return ranked[i];
  }
  return ranked[walked - 1];
}

/// Runs the kernel on rows of logits with {temperature, top_p, top_k} and
/// {seed, counter}.
HostTensor sample(const HostTensor &logits, float temperature, float topP,
                  float topK, int64_t seed, int64_t counter) {
  HostTensor sampling = f32({3}, {temperature, topP, topK});
  HostTensor rng = i64({2}, {seed, counter});
  return run(ops::Sample{}, {&logits, &sampling, &rng}, DType::I64,
             {logits.shape[0]});
}

TEST(Sample, GreedyTakesTheFirstLargestAndIgnoresNaN) {
  for (DType dt : kFloatTypes)
    for (float temperature : {0.0f, -1.0f, NAN}) {
      HostTensor logits = tensorOf(
          dt, {5, 4}, {1,         3,         3,         2,  // tie: the first
                       NAN,       -1,        NAN,       -2, // NaN ignored
                       -INFINITY, -INFINITY, -INFINITY, -INFINITY, // all -inf
                       NAN,       NAN,       NAN,       NAN,       // nothing: 0
                       0,         0,         INFINITY,  5});
      HostTensor got = sample(logits, temperature, 0.5f, 2, 1, 2);
      expectEqual(got, i64({5}, {1, 1, 0, 0, 2}),
                  std::string("greedy ") + dtypeName(dt));
    }
}

TEST(Sample, TokenWeightsAreScaledExponentials) {
  // Sums of V weights stay exact (below 2^53), and a weight fits 41 bits.
  for (int64_t V : {int64_t(1), int64_t(4095), int64_t(4096), int64_t(8192),
                    int64_t(50257), int64_t(128256), int64_t(INT32_MAX)}) {
    const int q = sampling::weightBits(V);
    EXPECT_LE(q, 40) << "V " << V;
    EXPECT_LT(static_cast<long double>(V) * std::ldexp(1.0L, q),
              std::ldexp(1.0L, 53))
        << "V " << V;
  }
  // floor(2^q e^x) against long double, over the whole range of x that
  // weighs anything: within one unit plus 1e-12 relative.
  Random rng(602);
  for (int q : {40, 36, 30}) {
    const double lowest = -(q + 1) * std::log(2.0);
    for (int i = 0; i < 20000; ++i) {
      const float x = rng.uniform(static_cast<float>(lowest), 0);
      const long double exact =
          std::ldexp(std::exp(static_cast<long double>(x)), q);
      const uint64_t w = sampling::scaledExp(x, q);
      ASSERT_LE(std::fabs(static_cast<long double>(w) - std::floor(exact)),
                1 + 1e-12L * exact)
          << "x " << x << " q " << q;
    }
    EXPECT_EQ(sampling::scaledExp(0.0f, q), uint64_t{1} << q);
    EXPECT_EQ(sampling::scaledExp(-0.0f, q), uint64_t{1} << q);
    EXPECT_EQ(sampling::scaledExp(static_cast<float>(lowest) * 1.01f, q), 0u);
    EXPECT_EQ(sampling::scaledExp(-INFINITY, q), 0u);
    EXPECT_EQ(sampling::scaledExp(NAN, q), 0u);
  }
  // The token's weight: the top one 2^q, NaN and -inf 0, +inf tops alone.
  EXPECT_EQ(sampling::tokenWeight(3, 3, 0.7f, 40), uint64_t{1} << 40);
  EXPECT_EQ(sampling::tokenWeight(NAN, 3, 0.7f, 40), 0u);
  EXPECT_EQ(sampling::tokenWeight(-INFINITY, 3, 0.7f, 40), 0u);
  EXPECT_EQ(sampling::tokenWeight(INFINITY, INFINITY, 2, 40),
            uint64_t{1} << 40);
  EXPECT_EQ(sampling::tokenWeight(1e30f, INFINITY, 2, 40), 0u);
}

TEST(Sample, DrawsExactlyTheReferenceToken) {
  // Random logits (bf16 and f16 ones tie often), with -inf and NaN
  // entries, over every combination of the parameters and their edges.
  Random rng(600);
  uint32_t checked = 0;
  for (DType dt : kFloatTypes)
    for (int64_t V : {int64_t(1), int64_t(7), int64_t(100), int64_t(3000)}) {
      const int64_t B = 24;
      HostTensor logits = rng.floats(dt, {B, V}, -6, 6);
      for (int64_t e = 3; e < logits.numel(); e += 17)
        logits.set(e, -INFINITY);
      for (int64_t e = 5; e < logits.numel(); e += 29)
        logits.set(e, NAN);
      for (float temperature : {0.0f, 0.3f, 1.0f, 4.0f})
        for (float topK : {0.0f, 1.0f, 5.0f, 64.0f, float(V), 2.5f})
          for (float topP : {1.0f, 0.95f, 0.5f, 0.0f}) {
            const int64_t counter = rng.integer(0, 1 << 30);
            HostTensor got =
                sample(logits, temperature, topP, topK, 9, counter);
            for (int64_t b = 0; b < B; ++b) {
              std::vector<float> row(V);
              for (int64_t j = 0; j < V; ++j)
                row[j] = static_cast<float>(logits.at(b * V + j));
              const float u = philoxUniform(9, counter, b);
              ASSERT_EQ(got.i()[b],
                        referenceSample(row, temperature, topP,
                                        static_cast<int64_t>(topK), u))
                  << dtypeName(dt) << " V " << V << " T " << temperature
                  << " top_k " << topK << " top_p " << topP << " row " << b;
              ++checked;
            }
          }
    }
  EXPECT_GT(checked, 10000u);
}

TEST(Sample, SameSeedAndCounterSameTokens) {
  Random rng(601);
  HostTensor logits = rng.f32({256, 1000}, -1, 1); // nearly flat
  HostTensor a = sample(logits, 1, 1, 0, 42, 7);
  expectEqual(sample(logits, 1, 1, 0, 42, 7), a, "same seed and counter");
  auto differing = [&](const HostTensor &b) {
    int n = 0;
    for (int64_t r = 0; r < 256; ++r)
      n += a.i()[r] != b.i()[r];
    return n;
  };
  EXPECT_GT(differing(sample(logits, 1, 1, 0, 42, 8)), 200);
  EXPECT_GT(differing(sample(logits, 1, 1, 0, 43, 7)), 200);
  // Rows draw independently: the same logits in every row differ too.
  HostTensor same(DType::F32, {256, 1000});
  for (int64_t r = 0; r < 256; ++r)
    std::memcpy(same.f() + r * 1000, logits.f(), 1000 * sizeof(float));
  HostTensor rows = sample(same, 1, 1, 0, 42, 7);
  std::map<int64_t, int> seen;
  for (int64_t r = 0; r < 256; ++r)
    ++seen[rows.i()[r]];
  EXPECT_GT(seen.size(), 150u);
}

TEST(Sample, ExtremeTemperaturesAndInfiniteLogits) {
  HostTensor logits = f32({1, 5}, {0.5f, 2, -3, 1.5f, 1});
  // A tiny temperature is the argmax (no overflow to inf or NaN); a huge
  // one is uniform.
  for (int64_t counter = 0; counter < 50; ++counter)
    EXPECT_EQ(sample(logits, 1e-30f, 1, 0, 3, counter).i()[0], 1);
  std::map<int64_t, int> seen;
  for (int64_t counter = 0; counter < 200; ++counter)
    ++seen[sample(logits, 1e30f, 1, 0, 3, counter).i()[0]];
  EXPECT_EQ(seen.size(), 5u);
  // +inf logits share all the probability.
  HostTensor inf = f32({1, 4}, {INFINITY, 7, INFINITY, 1});
  seen.clear();
  for (int64_t counter = 0; counter < 200; ++counter)
    ++seen[sample(inf, 1, 1, 0, 3, counter).i()[0]];
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_GT(seen[0], 60);
  EXPECT_GT(seen[2], 60);
}

/// The 0.999 quantiles of the chi-square distribution, by degrees of
/// freedom (1 to 7).
const double kChiSquare999[] = {0,      10.828, 13.816, 16.266,
                                18.467, 20.515, 22.458, 24.322};

/// The probabilities the op's description gives in double: softmax(l / T),
/// ranked (ties by index), top_k, then the top_p prefix, renormalised.
std::vector<double> keptProbabilities(const std::vector<float> &l, double T,
                                      double topP, int64_t topK) {
  const size_t V = l.size();
  std::vector<double> p(V);
  double sum = 0;
  for (size_t j = 0; j < V; ++j)
    sum += p[j] = std::exp(l[j] / T);
  for (double &x : p)
    x /= sum;
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p[a] > p[b]; });
  size_t kept = topK > 0 && size_t(topK) < V ? size_t(topK) : V;
  double keptSum = 0;
  for (size_t i = 0; i < kept; ++i)
    keptSum += p[order[i]];
  double cumulative = 0;
  size_t prefix = 0;
  while (prefix < kept) {
    cumulative += p[order[prefix++]] / keptSum;
    if (cumulative >= topP)
      break;
  }
  std::vector<double> q(V, 0.0);
  for (size_t i = 0; i < prefix; ++i)
    q[order[i]] = p[order[i]] / cumulative / keptSum;
  return q;
}

/// Pearson's statistic of `counts` against probabilities `q` (cells with
/// q = 0 excluded; cells expecting under 5 draws pooled) and its degrees
/// of freedom.
std::pair<double, int> chiSquare(const std::vector<int64_t> &counts,
                                 const std::vector<double> &q, int64_t draws) {
  std::vector<std::pair<double, int64_t>> cells; // expected, observed
  for (size_t j = 0; j < q.size(); ++j)
    if (q[j] > 0)
      cells.push_back({q[j] * draws, counts[j]});
  std::sort(cells.begin(), cells.end());
  std::vector<std::pair<double, int64_t>> pooled;
  std::pair<double, int64_t> small{0, 0};
  for (const auto &cell : cells) {
    if (small.first < 5 && cell.first < 5) {
      small.first += cell.first;
      small.second += cell.second;
      continue;
    }
    pooled.push_back(cell);
  }
  if (small.first > 0) {
    if (small.first < 5 && !pooled.empty()) {
      pooled.front().first += small.first; // the smallest remaining cell
      pooled.front().second += small.second;
    } else {
      pooled.push_back(small);
    }
  }
  double statistic = 0;
  for (const auto &[expected, observed] : pooled)
    statistic += (observed - expected) * (observed - expected) / expected;
  return {statistic, static_cast<int>(pooled.size()) - 1};
}

TEST(Sample, FrequenciesMatchTheKeptProbabilities) {
  // One fixed distribution over 8 tokens (with a tie: tokens 2 and 3),
  // 50,000 draws per setting: 10 calls of 5,000 rows, each call its own
  // counter. Tokens outside top-k / top-p must never come; the kept ones
  // must come as often as their renormalised probabilities say.
  const std::vector<float> l = {2.0f,  1.0f, 0.5f, 0.5f,
                                -1.0f, 0.0f, 3.0f, -2.0f};
  const int64_t V = 8, rows = 5000, calls = 10, draws = rows * calls;
  HostTensor logits(DType::F32, {rows, V});
  for (int64_t r = 0; r < rows; ++r)
    std::memcpy(logits.f() + r * V, l.data(), V * sizeof(float));
  struct Setting {
    float temperature, topP, topK;
    std::vector<int64_t> allowed; // the tokens that may come, by hand
  };
  // Probabilities at T = 1 by rank: 6 .574, 0 .211, 1 .078, 2 .047,
  // 3 .047, 5 .029, 4 .011, 7 .004 (cumulative .574 .785 .863 .910 .957).
  const std::vector<Setting> settings = {
      {1.0f, 1.0f, 0, {0, 1, 2, 3, 4, 5, 6, 7}},
      {0.5f, 1.0f, 0, {0, 1, 2, 3, 4, 5, 6, 7}},
      {2.0f, 1.0f, 0, {0, 1, 2, 3, 4, 5, 6, 7}},
      {1.0f, 1.0f, 3, {6, 0, 1}},
      {1.0f, 1.0f, 4, {6, 0, 1, 2}}, // the tie goes to the lower index
      {1.0f, 0.8f, 0, {6, 0, 1}},
      {1.0f, 0.9f, 0, {6, 0, 1, 2}},
      {1.0f, 0.5f, 0, {6}},
      {1.0f, 0.93f, 0, {6, 0, 1, 2, 3}},
      // At T = 0.7 the top 5 renormalised: .739 .177 .042 .021 .021.
      {0.7f, 0.95f, 5, {6, 0, 1}},
      {1.0f, 1.0f, 100, {0, 1, 2, 3, 4, 5, 6, 7}},
  };
  std::vector<std::vector<int64_t>> allCounts;
  for (const Setting &s : settings) {
    std::vector<int64_t> counts(V, 0);
    for (int64_t call = 0; call < calls; ++call) {
      HostTensor got =
          sample(logits, s.temperature, s.topP, s.topK, 2024, 1000 + call);
      for (int64_t r = 0; r < rows; ++r)
        ++counts.at(got.i()[r]);
    }
    allCounts.push_back(counts);
    const std::vector<double> q =
        keptProbabilities(l, s.temperature, s.topP, int64_t(s.topK));
    std::string name = "T " + std::to_string(s.temperature) + " top_p " +
                       std::to_string(s.topP) + " top_k " +
                       std::to_string(s.topK);
    for (int64_t j = 0; j < V; ++j) {
      const bool allowed =
          std::find(s.allowed.begin(), s.allowed.end(), j) != s.allowed.end();
      EXPECT_EQ(q[j] > 0, allowed) << name << " token " << j;
      if (!allowed)
        EXPECT_EQ(counts[j], 0) << name << " drew token " << j;
    }
    const auto [statistic, dof] = chiSquare(counts, q, draws);
    if (dof == 0) {
      EXPECT_EQ(counts[s.allowed[0]], draws) << name;
      continue;
    }
    std::printf("[ chi2     ] %s: %.2f, %d degrees of freedom, bound %.3f\n",
                name.c_str(), statistic, dof, kChiSquare999[dof]);
    EXPECT_LT(statistic, kChiSquare999[dof]) << name;
  }
  // The test has power: T = 0.5 and T = 2 are far from T = 1, and in the
  // expected direction (the likeliest token more and less frequent).
  const std::vector<double> atOne = keptProbabilities(l, 1, 1, 0);
  for (size_t s : {size_t(1), size_t(2)})
    EXPECT_GT(chiSquare(allCounts[s], atOne, draws).first, 1000);
  EXPECT_GT(allCounts[1][6], allCounts[0][6] + 5000);
  EXPECT_LT(allCounts[2][6], allCounts[0][6] - 5000);
}

TEST(Sample, RejectsBadOperands) {
  HostTensor logits = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor sampling = f32({3}, {1, 1, 0}), rng = i64({2}, {1, 2});
  const HostTensor result(DType::I64, {2});
  auto error = [&](const HostTensor &l, const HostTensor &s,
                   const HostTensor &r, const HostTensor &out) {
    return errorOf(ops::Sample{}, {&l, &s, &r}, out);
  };
  EXPECT_NE(error(logits, f32({2}, {1, 1}), rng, result).find("sampling"),
            std::string::npos);
  EXPECT_NE(error(logits, sampling.to(DType::F16), rng, result)
                .find("sampling must be f32"),
            std::string::npos);
  EXPECT_NE(error(logits, sampling, i64({3}, {1, 2, 3}), result).find("rng"),
            std::string::npos);
  EXPECT_NE(error(logits, sampling, rng, HostTensor(DType::I32, {2}))
                .find("result must be i64"),
            std::string::npos);
  EXPECT_NE(error(logits, sampling, rng, HostTensor(DType::I64, {3}))
                .find("result has shape"),
            std::string::npos);
  EXPECT_NE(error(logits.to(DType::I64), sampling, rng, result)
                .find("unsupported element type i64 for logits"),
            std::string::npos);
  EXPECT_NE(error(HostTensor(DType::F32, {2, 0}), sampling, rng, result)
                .find("no tokens"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
