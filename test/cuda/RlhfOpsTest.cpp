// The CUDA RLHF ops against the CPU oracle on PPO- and GRPO-shaped tensors:
// ppo_rewards and gae (rows of every length, a score on either side of the
// clip, rows whose actions reach the end), clipped_value_loss(_grad)
// across both clip bounds, kl_k3(_grad), masked_mean(_grad) at both levels,
// masked_whiten and group_advantages. Both backends run one definition of
// the math (kernels/common) with every product and sum rounded on its own
// and sums in one order, so the results are the CPU's bits; kl_k3's expf
// may differ from the CPU's exp by an ulp.
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class RlhfOpsTest : public CudaKernelTest {
protected:
  /// 1 on the first `live` positions of each row from `start`, a row's
  /// count varying (the last rows reach the end), 1 before start.
  HostTensor actionMask(int64_t B, int64_t L, int64_t start) {
    HostTensor m(DType::F32, {B, L});
    for (int64_t b = 0; b < B; ++b) {
      const int64_t live = (b * 7) % (L - start + 2);
      for (int64_t t = 0; t < L; ++t)
        m.set(b * L + t, t < start || t - start < live ? 1.0 : 0.0);
    }
    return m;
  }
  const Tolerance exact{0, 0};
};

TEST_F(RlhfOpsTest, RewardsAndGae) {
  for (auto [B, L, start] : {std::tuple<int64_t, int64_t, int64_t>{2, 15, 7},
                             {5, 33, 8},
                             {300, 64, 16},
                             {1, 4, 0}}) {
    const Shape shape = {B, L};
    const HostTensor logp = randomTensor(DType::F32, shape, rng, -4, 0),
                     ref = randomTensor(DType::F32, shape, rng, -4, 0),
                     scores = randomTensor(DType::F32, {B}, rng, -8, 8),
                     values = randomTensor(DType::F32, shape, rng, -3, 3),
                     kl = tensorOf(DType::F32, {1}, {0.05}),
                     mask = actionMask(B, L, start);
    const std::string what =
        shapeToString(shape) + " start " + std::to_string(start);
    const ops::PpoRewards rewardsOp{start, 5.0};
    expectMatchesCpu(
        rewardsOp, {logp, ref, scores, mask, values, kl},
        {HostTensor(DType::F32, shape), HostTensor(DType::F32, shape)},
        "ppo_rewards " + what, &exact);
    const std::vector<HostTensor> experience =
        runCpu(rewardsOp, {logp, ref, scores, mask, values, kl},
               {HostTensor(DType::F32, shape), HostTensor(DType::F32, shape)});
    const Shape out = {B, L - start};
    expectMatchesCpu(ops::Gae{start, 0.99, 0.95},
                     {experience[0], experience[1]},
                     {HostTensor(DType::F32, out), HostTensor(DType::F32, out)},
                     "gae " + what, &exact);
  }
}

TEST_F(RlhfOpsTest, ClippedValueLoss) {
  for (const Shape &shape : {Shape{1}, Shape{3, 7}, Shape{16, 256}}) {
    const HostTensor v = randomTensor(DType::F32, shape, rng, -2, 2);
    HostTensor old = v;
    // |v - old| up to 0.5 against a clip of 0.2: both bounds crossed.
    const HostTensor shift = randomTensor(DType::F32, shape, rng, -0.5, 0.5);
    for (int64_t i = 0; i < old.numel(); ++i)
      old.set(i, v.at(i) + shift.at(i));
    const HostTensor ret = randomTensor(DType::F32, shape, rng, -2, 2),
                     g = randomTensor(DType::F32, shape, rng, -1, 1);
    HostTensor mask(DType::F32, shape);
    for (int64_t i = 0; i < mask.numel(); ++i)
      mask.set(i, i % shape.back() < shape.back() * 3 / 4 ? 1.0 : 0.0);
    const std::string what = shapeToString(shape);
    expectMatchesCpu(ops::ClippedValueLoss{0.2}, {v, old, ret, mask},
                     {HostTensor(DType::F32, shape)},
                     "clipped_value_loss " + what, &exact);
    expectMatchesCpu(ops::ClippedValueLossGrad{0.2}, {v, old, ret, mask, g},
                     {HostTensor(DType::F32, shape)},
                     "clipped_value_loss_grad " + what, &exact);
  }
}

TEST_F(RlhfOpsTest, KlK3) {
  const Tolerance tol{1e-6, 1e-6};
  for (const Shape &shape : {Shape{1}, Shape{4, 100}, Shape{32, 512}}) {
    const HostTensor logp = randomTensor(DType::F32, shape, rng, -5, 0),
                     ref = randomTensor(DType::F32, shape, rng, -5, 0),
                     g = randomTensor(DType::F32, shape, rng, -1, 1);
    expectMatchesCpu(ops::KlK3{}, {logp, ref}, {HostTensor(DType::F32, shape)},
                     "kl_k3 " + shapeToString(shape), &tol);
    expectMatchesCpu(ops::KlK3Grad{}, {logp, ref, g},
                     {HostTensor(DType::F32, shape)},
                     "kl_k3_grad " + shapeToString(shape), &tol);
  }
}

TEST_F(RlhfOpsTest, MaskedMean) {
  for (const Shape &shape : {Shape{1, 5}, Shape{8, 33}, Shape{2, 3, 300}}) {
    const HostTensor x = randomTensor(DType::F32, shape, rng, -3, 3);
    HostTensor mask(DType::F32, shape);
    for (int64_t i = 0; i < mask.numel(); ++i)
      mask.set(i, i % shape.back() <= (i / shape.back()) % shape.back() ? 1.0
                                                                        : 0.0);
    const HostTensor g = tensorOf(DType::F32, {}, {0.5});
    for (bool perSequence : {false, true}) {
      const std::string what =
          shapeToString(shape) + (perSequence ? " per sequence" : " token");
      expectMatchesCpu(ops::MaskedMean{perSequence}, {x, mask},
                       {HostTensor(DType::F32, {})}, "masked_mean " + what,
                       &exact);
      expectMatchesCpu(ops::MaskedMeanGrad{perSequence}, {mask, g},
                       {HostTensor(DType::F32, shape)},
                       "masked_mean_grad " + what, &exact);
    }
  }
}

TEST_F(RlhfOpsTest, WhitenAndGroupAdvantages) {
  for (const Shape &shape : {Shape{2, 8}, Shape{64, 200}}) {
    const HostTensor x = randomTensor(DType::F32, shape, rng, -3, 5);
    HostTensor mask(DType::F32, shape);
    for (int64_t i = 0; i < mask.numel(); ++i)
      mask.set(i, i % 5 == 4 ? 0.0 : 1.0);
    for (bool shift : {true, false})
      expectMatchesCpu(ops::MaskedWhiten{shift, true, 1e-8}, {x, mask},
                       {HostTensor(DType::F32, shape)},
                       "masked_whiten " + shapeToString(shape), &exact);
  }
  for (auto [n, group] :
       {std::pair<int64_t, int64_t>{8, 4}, {6, 2}, {1024, 16}}) {
    const HostTensor scores = randomTensor(DType::F32, {n}, rng, -1, 1);
    for (bool scale : {true, false})
      expectMatchesCpu(ops::GroupAdvantages{group, scale, 1e-4}, {scores},
                       {HostTensor(DType::F32, {n})},
                       "group_advantages " + std::to_string(n) + "/" +
                           std::to_string(group),
                       &exact);
  }
}

} // namespace
} // namespace hybrid::cuda::test
