// clipped_surrogate and clipped_surrogate_grad against a reference written
// from DeepSpeed-Chat's actor_loss_fn as torch evaluates it: hand-picked
// tokens in each branch of the clip (and on its bounds, where torch.max
// splits the gradient), masked tokens, asymmetric bounds, and the gradient
// against central differences of the loss in double.
#include "KernelTestSupport.h"

#include <cmath>

namespace hybrid::cpu::test {
namespace {

/// The loss of one token in double: max(-A r, -A clamp(r)) m.
double lossRef(double logp, double old, double adv, double mask, double lo,
               double hi) {
  const double r = std::exp((logp - old) * mask);
  return std::max(-adv * r, -adv * std::clamp(r, lo, hi)) * mask;
}

struct Tokens {
  HostTensor logp, old, adv, mask;
};

/// One token per branch: inside the clip, clipped above with A > 0 (no
/// gradient), above with A < 0 (unclipped wins), below with A < 0 (no
/// gradient), below with A > 0 (unclipped wins), masked out, zero advantage.
Tokens branchTokens() {
  const float l = std::log(1.5f), s = std::log(0.5f);
  return {f32({7}, {0.05f, l, l, s, s, 3.0f, 0.4f}),
          f32({7}, {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}),
          f32({7}, {2.0f, 1.5f, -1.5f, -0.5f, 0.5f, 4.0f, 0.0f}),
          f32({7}, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 1.0f})};
}

TEST(ClippedSurrogate, EachBranchOfTheClip) {
  const Tokens t = branchTokens();
  const ops::ClippedSurrogate op{0.2, 0.2};
  HostTensor loss(DType::F32, {7}), grad(DType::F32, {7});
  runKernel(op, {&t.logp, &t.old, &t.adv, &t.mask}, loss);
  HostTensor g = f32({7}, {1, 1, 1, 1, 1, 1, 1});
  runKernel(ops::ClippedSurrogateGrad{0.2, 0.2},
            {&t.logp, &t.old, &t.adv, &t.mask, &g}, grad);
  std::vector<double> want;
  for (int i = 0; i < 7; ++i)
    want.push_back(lossRef(t.logp.at(i), t.old.at(i), t.adv.at(i), t.mask.at(i),
                           0.8, 1.2));
  expectNear(loss, want, 1e-6, 1e-6, "loss");
  const double r0 = std::exp(0.05);
  // d/dlogp of -A r where the unclipped term counts, else 0.
  expectNear(grad, {-2.0 * r0, 0, 1.5 * 1.5, 0, -0.5 * 0.5, 0, 0}, 1e-6, 1e-6,
             "grad");
}

TEST(ClippedSurrogate, AsymmetricBoundsClipWhereDapoSays) {
  // clip_low 0.2, clip_high 0.28: r = 1.25 is inside (no clip) above 1.2.
  const float l = std::log(1.25f);
  HostTensor logp = f32({2}, {l, l}), old = f32({2}, {0, 0}),
             adv = f32({2}, {1, 1}), mask = f32({2}, {1, 1});
  HostTensor loss(DType::F32, {2});
  runKernel(ops::ClippedSurrogate{0.2, 0.2}, {&logp, &old, &adv, &mask}, loss);
  // Symmetric: clamp(1.25) = 1.2 and max(-1.25, -1.2) = -1.2.
  expectNear(loss, {-1.2, -1.2}, 1e-6, 1e-6, "symmetric");
  runKernel(ops::ClippedSurrogate{0.2, 0.28}, {&logp, &old, &adv, &mask}, loss);
  expectNear(loss, {-1.25, -1.25}, 1e-6, 1e-6, "asymmetric");
}

TEST(ClippedSurrogate, OnTheBoundTorchMaxSplitsTheGradient) {
  // r exactly at 1 + clip: both terms equal, each gets half, the clamp
  // passes its half (r <= hi), so the whole -A r arrives.
  HostTensor logp = f32({1}, {std::log(1.25f)}), old = f32({1}, {0}),
             adv = f32({1}, {3}), mask = f32({1}, {1}), g = f32({1}, {2});
  const float r = std::exp(static_cast<float>(logp.at(0)));
  const double clip = static_cast<double>(r) - 1.0; // the bound at r itself
  HostTensor grad(DType::F32, {1});
  runKernel(ops::ClippedSurrogateGrad{0.2, clip},
            {&logp, &old, &adv, &mask, &g}, grad);
  expectNear(grad, {2.0 * -3.0 * r}, 1e-6, 1e-6, "tie");
}

TEST(ClippedSurrogate, GradientIsTheLossesDerivative) {
  Random rng(91);
  const Shape shape = {4, 33};
  HostTensor logp = rng.f32(shape, -3, 0), old = rng.f32(shape, -3, 0),
             adv = rng.f32(shape, -2, 2), mask(DType::F32, shape),
             g = rng.f32(shape, -1, 1);
  for (int64_t i = 0; i < mask.numel(); ++i)
    mask.set(i, i % 9 == 8 ? 0.0 : 1.0);
  HostTensor grad(DType::F32, shape);
  const ops::ClippedSurrogateGrad op{0.15, 0.3};
  runKernel(op, {&logp, &old, &adv, &mask, &g}, grad);
  std::vector<double> want;
  for (int64_t i = 0; i < logp.numel(); ++i) {
    const double h = 1e-6, x = logp.at(i);
    auto f = [&](double v) {
      return lossRef(v, old.at(i), adv.at(i), mask.at(i), 0.85, 1.3);
    };
    // Tokens within h of a bound have a kink there; skip them.
    const double r = std::exp((x - old.at(i)) * mask.at(i));
    if (std::abs(r - 0.85) < 1e-4 || std::abs(r - 1.3) < 1e-4) {
      want.push_back(grad.at(i));
      continue;
    }
    want.push_back(g.at(i) * (f(x + h) - f(x - h)) / (2 * h));
  }
  expectNear(grad, want, 1e-4, 1e-3, "finite differences");
}

TEST(ClippedSurrogate, NanPropagatesAsTorchMax) {
  HostTensor logp = f32({1}, {NAN}), old = f32({1}, {0}), adv = f32({1}, {1}),
             mask = f32({1}, {1});
  HostTensor loss(DType::F32, {1});
  runKernel(ops::ClippedSurrogate{}, {&logp, &old, &adv, &mask}, loss);
  EXPECT_TRUE(std::isnan(loss.at(0)));
}

TEST(ClippedSurrogate, RejectsMismatchedOperands) {
  Random rng(92);
  HostTensor a = rng.f32({2, 3}), b = rng.f32({2, 4}), h = a.to(DType::BF16);
  EXPECT_NE(errorOf(ops::ClippedSurrogate{}, {&a, &b, &a, &a},
                    HostTensor(DType::F32, {2, 3}))
                .find("old_logprobs"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::ClippedSurrogate{}, {&a, &a, &h, &a},
                    HostTensor(DType::F32, {2, 3}))
                .find("advantages"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::ClippedSurrogate{-0.1, 0.2}, {&a, &a, &a, &a},
                    HostTensor(DType::F32, {2, 3}))
                .find("clip_low"),
            std::string::npos);
  EXPECT_NE(errorOf(ops::ClippedSurrogateGrad{}, {&a, &a, &a, &a, &b},
                    HostTensor(DType::F32, {2, 3}))
                .find("grad"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
