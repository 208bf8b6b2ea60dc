// The RLHF ops' CPU kernels: ppo_rewards, gae and clipped_value_loss against
// the PPO-step oracles of ../shared/fixtures/ppo (DeepSpeed-Chat's maths in
// float64: rewards, advantages, returns and the critic loss to 1e-5
// relative); the value loss, k3 KL and masked mean gradients against central
// differences and hand-derived values at the ties; masked_whiten and
// group_advantages against TRL's formulas in double.
#include "KernelTestSupport.h"
#include "SafeTensorsReader.h"

#include <cmath>
#include <numeric>

namespace hybrid::cpu::test {
namespace {

// --- The PPO-step oracles --------------------------------------------------

constexpr int64_t kStart = 7; // DeepSpeed-Chat's prompts.shape[1] - 1

/// Columns [begin, end) of a [B, L] f32 tensor.
HostTensor columns(const HostTensor &t, int64_t begin, int64_t end) {
  const int64_t B = t.shape[0], L = t.shape[1];
  HostTensor out(DType::F32, {B, end - begin});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = begin; j < end; ++j)
      out.set(b * (end - begin) + j - begin, t.at(b * L + j));
  return out;
}

class PpoOracle : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    t = readSafeTensors(std::string(HYBRID_FIXTURES_DIR) + "/ppo/ppo_" +
                        GetParam() + ".safetensors");
    if (t.empty())
      GTEST_SKIP() << "no PPO oracle for " << GetParam() << " under "
                   << HYBRID_FIXTURES_DIR << "/ppo";
    // action_mask = attention_mask[:, 1:], as f32.
    const HostTensor &attn = t.at("attention_mask");
    const int64_t B = attn.shape[0], T = attn.shape[1];
    actionMask = HostTensor(DType::F32, {B, T - 1});
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 1; j < T; ++j)
        actionMask.set(b * (T - 1) + j - 1, attn.at(b * T + j));
  }
  const HostTensor &at(const std::string &name) { return t.at(name); }
  /// rewards and old values, as ppo_rewards computes them (kl_ctl 0.1,
  /// reward clip 5).
  void experience(HostTensor &rewards, HostTensor &oldValues) {
    const HostTensor kl = f32({1}, {0.1f});
    const Shape shape = at("logprobs").shape;
    rewards = HostTensor(DType::F32, shape);
    oldValues = HostTensor(DType::F32, shape);
    runKernelOnResults(ops::PpoRewards{kStart, 5.0},
                       {&at("logprobs"), &at("ref_logprobs"),
                        &at("reward_scores"), &actionMask, &at("values"), &kl},
                       {&rewards, &oldValues});
  }

  std::map<std::string, HostTensor> t;
  HostTensor actionMask;
};

TEST_P(PpoOracle, RewardsAdvantagesAndReturns) {
  HostTensor rewards, oldValues;
  experience(rewards, oldValues);
  expectNear(rewards, at("rewards").values(), 0, 1e-5, "rewards");
  const int64_t B = rewards.shape[0], A = rewards.shape[1] - kStart;
  HostTensor adv(DType::F32, {B, A}), ret(DType::F32, {B, A});
  runKernelOnResults(ops::Gae{kStart, 1.0, 0.95}, {&rewards, &oldValues},
                     {&adv, &ret});
  expectNear(adv, at("advantages").values(), 0, 1e-5, "advantages");
  expectNear(ret, at("returns").values(), 0, 1e-5, "returns");
}

TEST_P(PpoOracle, CriticLoss) {
  // The oracle's critic loss reads the critic's values of the train pass;
  // its weights have not moved, so they are `values`: v = values[:, start:]
  // against old values (zeroed past each end) and the oracle's returns.
  HostTensor rewards, oldValues;
  experience(rewards, oldValues);
  const int64_t L = rewards.shape[1];
  const HostTensor v = columns(at("values"), kStart, L),
                   old = columns(oldValues, kStart, L),
                   mask = columns(actionMask, kStart, L);
  HostTensor perToken(DType::F32, v.shape), mean(DType::F32, {});
  runKernel(ops::ClippedValueLoss{0.2}, {&v, &old, &at("returns"), &mask},
            perToken);
  runKernel(ops::MaskedMean{false}, {&perToken, &mask}, mean);
  expectNear(HostTensor(f32({1}, {0.5f * static_cast<float>(mean.at(0))})),
             at("critic_loss").values(), 0, 1e-5, "critic_loss");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PpoOracle,
                         ::testing::Values("gpt2", "opt", "llama"));

// --- ppo_rewards and gae on hand-made rows ----------------------------------

TEST(PpoRewards, ScoreAtTheLastActionAndZerosAfter) {
  // Row 0: 2 actions from start 1 -> ends 4, the score (clipped to 5) at 3;
  // row 1: every position an action -> ends 6 > L, the score at L - 1.
  const HostTensor logp = f32({2, 5}, {-1, -2, -3, -4, -5, -1, -1, -1, -1, -1}),
                   ref = f32({2, 5}, {-1.5, -2, -2, -4, -6, 0, 0, 0, 0, 0}),
                   scores = f32({2}, {9, -0.5}),
                   mask = f32({2, 5}, {1, 1, 1, 0, 0, 1, 1, 1, 1, 1}),
                   values = f32({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}),
                   kl = f32({1}, {0.5f});
  HostTensor rewards(DType::F32, {2, 5}), old(DType::F32, {2, 5});
  runKernelOnResults(ops::PpoRewards{1, 5.0},
                     {&logp, &ref, &scores, &mask, &values, &kl},
                     {&rewards, &old});
  expectNear(rewards, {-0.25, 0, 0.5, 5, 0, 0.5, 0.5, 0.5, 0.5, 0.5 - 0.5}, 0,
             1e-7, "rewards");
  expectNear(old, {1, 2, 3, 4, 0, 6, 7, 8, 9, 10}, 0, 0, "old_values");
}

TEST(Gae, MatchesTheRecurrenceInDouble) {
  Random rng(7);
  const HostTensor rewards = rng.f32({3, 11}), values = rng.f32({3, 11});
  const int64_t start = 4, L = 11, A = L - start;
  const double gamma = 0.99, lam = 0.9;
  HostTensor adv(DType::F32, {3, A}), ret(DType::F32, {3, A});
  runKernelOnResults(ops::Gae{start, gamma, lam}, {&rewards, &values},
                     {&adv, &ret});
  std::vector<double> wantAdv(3 * A), wantRet(3 * A);
  for (int64_t b = 0; b < 3; ++b) {
    double last = 0;
    for (int64_t t = L - 1; t >= start; --t) {
      const double next = t < L - 1 ? values.at(b * L + t + 1) : 0.0;
      last = rewards.at(b * L + t) + gamma * next - values.at(b * L + t) +
             gamma * lam * last;
      wantAdv[b * A + t - start] = last;
      wantRet[b * A + t - start] = last + values.at(b * L + t);
    }
  }
  expectNear(adv, wantAdv, 1e-5, 1e-5, "advantages");
  expectNear(ret, wantRet, 1e-5, 1e-5, "returns");
}

TEST(PpoRewards, RejectsBadCalls) {
  Random rng(8);
  const HostTensor x = rng.f32({2, 5}), s = rng.f32({2}), s3 = rng.f32({3}),
                   kl = f32({1}, {0.1f});
  HostTensor r(DType::F32, {2, 5}), o(DType::F32, {2, 5});
  auto error = [&](const ops::PpoRewards &op, const HostTensor &scores) {
    try {
      runKernelOnResults(op, {&x, &x, &scores, &x, &x, &kl}, {&r, &o});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error({1, 5.0}, s3).find("reward_scores"), std::string::npos);
  EXPECT_NE(error({5, 5.0}, s).find("start 5"), std::string::npos);
  EXPECT_NE(error({1, -1.0}, s).find("clip_reward_value"), std::string::npos);
  HostTensor a(DType::F32, {2, 2}), b(DType::F32, {2, 2});
  try {
    runKernelOnResults(ops::Gae{2, 1.0, 0.95}, {&x, &x}, {&a, &b});
    ADD_FAILURE() << "gae took advantages of the wrong shape";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("advantages"), std::string::npos);
  }
}

// --- clipped_value_loss -----------------------------------------------------

/// One token's loss in double: max((v - R)^2, (clamp(v) - R)^2) m.
double valueLossRef(double v, double old, double ret, double m, double clip) {
  const double vc = std::min(std::max(v, old - clip), old + clip);
  return std::max((v - ret) * (v - ret), (vc - ret) * (vc - ret)) * m;
}

TEST(ClippedValueLoss, EachBranchOfTheClip) {
  // old 0, clip 0.5: v inside the clip; above it with R below (the
  // unclipped square wins); above it with R above (the clipped square
  // wins: no gradient); below it with R above (unclipped); masked out.
  const HostTensor v = f32({5}, {0.25, 2, 2, -2, 1}),
                   old = f32({5}, {0, 0, 0, 0, 0}),
                   ret = f32({5}, {1, -1, 3, 1, 5}),
                   mask = f32({5}, {1, 1, 1, 1, 0}),
                   g = f32({5}, {1, 1, 1, 1, 1});
  HostTensor loss(DType::F32, {5}), grad(DType::F32, {5});
  runKernel(ops::ClippedValueLoss{0.5}, {&v, &old, &ret, &mask}, loss);
  runKernel(ops::ClippedValueLossGrad{0.5}, {&v, &old, &ret, &mask, &g}, grad);
  std::vector<double> want;
  for (int i = 0; i < 5; ++i)
    want.push_back(
        valueLossRef(v.at(i), old.at(i), ret.at(i), mask.at(i), 0.5));
  expectNear(loss, want, 0, 1e-7, "loss");
  expectNear(grad, {2 * (0.25 - 1), 2 * (2 + 1), 0, 2 * (-2 - 1), 0}, 0, 1e-7,
             "grad");
}

TEST(ClippedValueLoss, TiesSplitAndTheClampPassesOnItsBounds) {
  // v inside the clip: both squares equal, each half, the clamp passes its
  // half: the whole 2 (v - R) g arrives. v on the upper bound (old + clip,
  // exact in f32): the same. v above the bound with (v - R)^2 = (vc - R)^2
  // (R halfway between vc and v): half of 2 (v - R) only.
  const HostTensor v = f32({3}, {0.25, 0.5, 1.5}), old = f32({3}, {0, 0, 0}),
                   ret = f32({3}, {2, 2, 1}), mask = f32({3}, {1, 1, 1}),
                   g = f32({3}, {3, 3, 3});
  HostTensor grad(DType::F32, {3});
  runKernel(ops::ClippedValueLossGrad{0.5}, {&v, &old, &ret, &mask, &g}, grad);
  expectNear(grad, {3 * 2 * (0.25 - 2), 3 * 2 * (0.5 - 2), 3 * 2 * 0.5 / 2}, 0,
             1e-7, "ties");
}

TEST(ClippedValueLoss, GradientIsTheLossesDerivative) {
  Random rng(93);
  const Shape shape = {4, 29};
  HostTensor v = rng.f32(shape, -2, 2), old = rng.f32(shape, -2, 2),
             ret = rng.f32(shape, -2, 2), g = rng.f32(shape, -1, 1),
             mask(DType::F32, shape), grad(DType::F32, shape);
  for (int64_t i = 0; i < mask.numel(); ++i)
    mask.set(i, i % 7 == 6 ? 0.0 : 1.0);
  const double clip = 0.3;
  runKernel(ops::ClippedValueLossGrad{clip}, {&v, &old, &ret, &mask, &g}, grad);
  std::vector<double> want;
  for (int64_t i = 0; i < v.numel(); ++i) {
    const double h = 1e-6, x = v.at(i);
    const double lo = old.at(i) - clip, hi = old.at(i) + clip;
    // Kinks: the clamp's bounds and, outside them, where the squares cross
    // (inside, vc = v: a tie everywhere, and torch's halves sum to one).
    const double vc = std::min(std::max(x, lo), hi);
    if (std::abs(x - lo) < 1e-4 || std::abs(x - hi) < 1e-4 ||
        ((x < lo || x > hi) &&
         std::abs(std::abs(x - ret.at(i)) - std::abs(vc - ret.at(i))) < 1e-4)) {
      want.push_back(grad.at(i));
      continue;
    }
    auto f = [&](double y) {
      return valueLossRef(y, old.at(i), ret.at(i), mask.at(i), clip);
    };
    want.push_back(g.at(i) * (f(x + h) - f(x - h)) / (2 * h));
  }
  expectNear(grad, want, 1e-4, 1e-3, "finite differences");
}

TEST(ClippedValueLoss, RejectsMismatchedOperands) {
  Random rng(94);
  const HostTensor a = rng.f32({2, 3}), b = rng.f32({2, 4});
  EXPECT_NE(errorOf(ops::ClippedValueLoss{}, {&a, &a, &b, &a},
                    HostTensor(DType::F32, {2, 3}))
                .find("returns"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::ClippedValueLoss{-0.1}, {&a, &a, &a, &a},
                    HostTensor(DType::F32, {2, 3}))
                .find("clip"),
            std::string::npos);
}

// --- kl_k3 ------------------------------------------------------------------

TEST(KlK3, ValuesAndGradient) {
  Random rng(95);
  const Shape shape = {3, 17};
  const HostTensor logp = rng.f32(shape, -4, 0), ref = rng.f32(shape, -4, 0),
                   g = rng.f32(shape, -1, 1);
  HostTensor kl(DType::F32, shape), grad(DType::F32, shape);
  runKernel(ops::KlK3{}, {&logp, &ref}, kl);
  runKernel(ops::KlK3Grad{}, {&logp, &ref, &g}, grad);
  std::vector<double> wantKl, wantGrad;
  for (int64_t i = 0; i < logp.numel(); ++i) {
    auto f = [&](double x) {
      const double d = ref.at(i) - x;
      return std::exp(d) - d - 1;
    };
    const double x = logp.at(i), h = 1e-6;
    wantKl.push_back(f(x));
    wantGrad.push_back(g.at(i) * (f(x + h) - f(x - h)) / (2 * h));
  }
  expectNear(kl, wantKl, 1e-6, 1e-5, "kl");
  expectNear(grad, wantGrad, 1e-4, 1e-3, "finite differences");
  // Equal log-probabilities: no divergence and no gradient.
  const HostTensor same = f32({1}, {-1.5f}), one = f32({1}, {1});
  runKernel(ops::KlK3{}, {&same, &same}, kl = HostTensor(DType::F32, {1}));
  runKernel(ops::KlK3Grad{}, {&same, &same, &one},
            grad = HostTensor(DType::F32, {1}));
  expectNear(kl, {0}, 0, 0, "kl at the reference");
  expectNear(grad, {0}, 0, 0, "grad at the reference");
}

// --- masked_mean ------------------------------------------------------------

TEST(MaskedMean, TokenAndSequenceLevel) {
  // Row 0 has 3 tokens, row 1 one: token level weighs tokens, sequence
  // level rows.
  const HostTensor x = f32({2, 4}, {1, 2, 3, 100, 8, 100, 100, 100}),
                   m = f32({2, 4}, {1, 1, 1, 0, 1, 0, 0, 0});
  HostTensor mean(DType::F32, {});
  runKernel(ops::MaskedMean{false}, {&x, &m}, mean);
  expectNear(mean, {(1 + 2 + 3 + 8) / 4.0}, 0, 1e-7, "token");
  runKernel(ops::MaskedMean{true}, {&x, &m}, mean);
  expectNear(mean, {(2 + 8) / 2.0}, 0, 1e-7, "sequence");
  const HostTensor g = f32({}, {2});
  HostTensor grad(DType::F32, {2, 4});
  runKernel(ops::MaskedMeanGrad{false}, {&m, &g}, grad);
  expectNear(grad, {0.5, 0.5, 0.5, 0, 0.5, 0, 0, 0}, 0, 1e-7, "token grad");
  runKernel(ops::MaskedMeanGrad{true}, {&m, &g}, grad);
  expectNear(grad, {1 / 3.0, 1 / 3.0, 1 / 3.0, 0, 1, 0, 0, 0}, 0, 1e-7,
             "sequence grad");
}

TEST(MaskedMean, GradientIsTheMeansDerivative) {
  Random rng(96);
  const Shape shape = {3, 2, 9}; // rows are every dim but the last
  HostTensor x = rng.f32(shape), m(DType::F32, shape);
  for (int64_t i = 0; i < m.numel(); ++i)
    m.set(i, (i * 5) % 7 < 4 ? 1.0 : 0.0);
  const HostTensor g = f32({}, {0.75f});
  for (bool perSequence : {false, true}) {
    HostTensor grad(DType::F32, shape);
    runKernel(ops::MaskedMeanGrad{perSequence}, {&m, &g}, grad);
    auto f = [&](const std::vector<double> &v) {
      const int64_t T = 9, rows = 6;
      double num = 0, den = 0, means = 0;
      for (int64_t r = 0; r < rows; ++r) {
        double rn = 0, rd = 0;
        for (int64_t t = 0; t < T; ++t) {
          rn += v[r * T + t] * m.at(r * T + t);
          rd += m.at(r * T + t);
        }
        num += rn;
        den += rd;
        means += rn / rd;
      }
      return perSequence ? means / rows : num / den;
    };
    std::vector<double> want, v = x.values();
    for (size_t i = 0; i < v.size(); ++i) {
      const double h = 1e-3, keep = v[i];
      v[i] = keep + h;
      const double up = f(v);
      v[i] = keep - h;
      const double down = f(v);
      v[i] = keep;
      want.push_back(0.75 * (up - down) / (2 * h));
    }
    expectNear(grad, want, 1e-6, 1e-5,
               perSequence ? "sequence level" : "token level");
    HostTensor mean(DType::F32, {});
    runKernel(ops::MaskedMean{perSequence}, {&x, &m}, mean);
    expectNear(mean, {f(x.values())}, 1e-6, 1e-6, "mean");
  }
}

TEST(MaskedMean, RejectsBadCalls) {
  Random rng(97);
  const HostTensor a = rng.f32({2, 3}), b = rng.f32({2, 4});
  EXPECT_NE(errorOf(ops::MaskedMean{}, {&a, &b}, HostTensor(DType::F32, {}))
                .find("mask"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::MaskedMean{}, {&a, &a}, HostTensor(DType::F32, {1}))
                .find("result"),
            std::string::npos);
  EXPECT_NE(
      errorOf(ops::MaskedMeanGrad{}, {&a, &a}, HostTensor(DType::F32, {2, 3}))
          .find("grad"),
      std::string::npos);
}

// --- masked_whiten and group_advantages --------------------------------------

TEST(MaskedWhiten, MatchesTrlInDouble) {
  Random rng(98);
  const Shape shape = {4, 13};
  HostTensor x = rng.f32(shape, -3, 5), m(DType::F32, shape);
  for (int64_t i = 0; i < m.numel(); ++i)
    m.set(i, i % 13 < 9 ? 1.0 : 0.0);
  for (bool shift : {true, false})
    for (bool unbiased : {true, false}) {
      HostTensor out(DType::F32, shape);
      runKernel(ops::MaskedWhiten{shift, unbiased, 1e-8}, {&x, &m}, out);
      double num = 0, den = 0;
      for (int64_t i = 0; i < x.numel(); ++i) {
        num += x.at(i) * m.at(i);
        den += m.at(i);
      }
      const double mean = num / den;
      double var = 0;
      for (int64_t i = 0; i < x.numel(); ++i)
        var += (x.at(i) - mean) * (x.at(i) - mean) * m.at(i);
      var /= den;
      if (unbiased)
        var *= den / (den - 1);
      std::vector<double> want;
      for (int64_t i = 0; i < x.numel(); ++i)
        want.push_back((x.at(i) - mean) / std::sqrt(var + 1e-8) +
                       (shift ? 0 : mean));
      expectNear(out, want, 1e-5, 1e-5, "whiten");
    }
}

TEST(GroupAdvantages, MatchesTrlInDouble) {
  const HostTensor s = f32({6}, {1, 0, 0, 2.5, -1, 0.5});
  HostTensor a(DType::F32, {6});
  runKernel(ops::GroupAdvantages{3, true, 1e-4}, {&s}, a);
  // Groups {1, 0, 0}: mean 1/3, std sqrt(1/3); {2.5, -1, 0.5}: mean 2/3,
  // std sqrt(((11/6)^2 + (5/3)^2 + (1/6)^2) / 2).
  const double s0 = std::sqrt(1 / 3.0),
               s1 = std::sqrt((121 / 36.0 + 25 / 9.0 + 1 / 36.0) / 2);
  expectNear(a,
             {(2 / 3.0) / (s0 + 1e-4), (-1 / 3.0) / (s0 + 1e-4),
              (-1 / 3.0) / (s0 + 1e-4), (11 / 6.0) / (s1 + 1e-4),
              (-5 / 3.0) / (s1 + 1e-4), (-1 / 6.0) / (s1 + 1e-4)},
             1e-6, 1e-6, "scaled");
  runKernel(ops::GroupAdvantages{3, false, 1e-4}, {&s}, a);
  expectNear(a, {2 / 3.0, -1 / 3.0, -1 / 3.0, 11 / 6.0, -5 / 3.0, -1 / 6.0},
             1e-6, 1e-6, "unscaled");
  // A group of equal scores: zero advantages (std 0, eps keeps it finite).
  const HostTensor same = f32({2}, {4, 4});
  HostTensor b(DType::F32, {2});
  runKernel(ops::GroupAdvantages{2, true, 1e-4}, {&same}, b);
  expectNear(b, {0, 0}, 0, 0, "equal scores");
}

TEST(GroupAdvantages, RejectsBadGroups) {
  const HostTensor s = f32({6}, {1, 2, 3, 4, 5, 6});
  EXPECT_NE(errorOf(ops::GroupAdvantages{4, true, 1e-4}, {&s},
                    HostTensor(DType::F32, {6}))
                .find("whole groups"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::GroupAdvantages{1, true, 1e-4}, {&s},
                    HostTensor(DType::F32, {6}))
                .find("group_size"),
            std::string::npos);
  EXPECT_EQ(errorOf(ops::GroupAdvantages{1, false, 1e-4}, {&s},
                    HostTensor(DType::F32, {6})),
            "");
}

} // namespace
} // namespace hybrid::cpu::test
