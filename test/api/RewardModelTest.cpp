// DeepSpeed-Chat's step 2 on the gpt2 fixture compiled with hybridc
// --head value --train --reward: the reward model learns a toy preference
// (the chosen answer holds a marker token where the rejected one has
// another, random tokens otherwise) from 96 pairs in 6 epochs of AdamW and
// ranks 64 held-out pairs with accuracy >= 0.9; the library's evaluation
// agrees with @forward's scores and with its own backward pass; misuse is
// a one-line error.
//
// The training starts from HF's initialisation of the fixture's
// architecture (Engine::initRandom: N(0, 0.02)); the fixture's own
// weights (N(0, 0.3), far from a trained model's) memorise the pairs
// instead (held-out accuracy 0.47-0.66 on this data at lr 1e-3 to 3e-3). The
// consistency checks use the checkpoint's trunk with a zero value head
// (CheckpointBinding::zeroIfMissing, hybrid-run's --zero-missing).
#include "hybrid/RewardModel.h"
#include "hybrid/Bundle.h"
#include "hybrid/Devices.h"

#include "TestSupport.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

namespace hybrid {
namespace {

using test::expectError;

constexpr int64_t kMarker = 7; // the token a preferred answer holds
constexpr int64_t kSeq = 24;   // every row's padded length

/// Pairs of rows [B, kSeq] (right-padded, mask 0 at padding): a random
/// prompt shared by the pair, then answers of random tokens and lengths;
/// the chosen answer holds kMarker at a random position, the rejected one
/// never (it has another token there).
struct Pairs {
  HostTensor chosenIds, chosenMask, rejectedIds, rejectedMask;
};

Pairs makePairs(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  auto token = [&] {
    int64_t t;
    do
      t = uniform(1, 511);
    while (t == kMarker);
    return t;
  };
  std::vector<int64_t> ids[2], mask[2];
  for (int side = 0; side < 2; ++side) {
    ids[side].assign(count * kSeq, 0);
    mask[side].assign(count * kSeq, 0);
  }
  for (int64_t b = 0; b < count; ++b) {
    const int64_t prompt = uniform(4, 8);
    // The chosen answer: random tokens, kMarker at position `marker`. The
    // rejected one: the same tokens before it, another token there, fresh
    // tokens after, its own length; so the pair diverges at the marker.
    const int64_t answer = uniform(4, kSeq - prompt);
    const int64_t marker = prompt + uniform(0, answer - 1);
    const int64_t rejectedEnd = uniform(marker + 1, kSeq);
    int64_t *chosen = ids[0].data() + b * kSeq;
    int64_t *rejected = ids[1].data() + b * kSeq;
    for (int64_t t = 0; t < prompt + answer; ++t) {
      chosen[t] = t == marker ? kMarker : token();
      mask[0][b * kSeq + t] = 1;
    }
    for (int64_t t = 0; t < rejectedEnd; ++t) {
      rejected[t] = t < marker ? chosen[t] : token();
      mask[1][b * kSeq + t] = 1;
    }
  }
  Pairs p;
  p.chosenIds = HostTensor::fromVector<int64_t>({count, kSeq}, ids[0]);
  p.chosenMask = HostTensor::fromVector<int64_t>({count, kSeq}, mask[0]);
  p.rejectedIds = HostTensor::fromVector<int64_t>({count, kSeq}, ids[1]);
  p.rejectedMask = HostTensor::fromVector<int64_t>({count, kSeq}, mask[1]);
  return p;
}

/// Rows [from, from + n) of an i64 [B, T] tensor.
HostTensor rows(const HostTensor &t, int64_t from, int64_t n) {
  const int64_t T = t.shape()[1];
  const int64_t *p = t.as<int64_t>() + from * T;
  return HostTensor::fromVector<int64_t>({n, T},
                                         std::vector<int64_t>(p, p + n * T));
}

class RewardModelOnGpt2 : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::fileExists(HYBRID_REWARD_TEST_BUNDLE))
      GTEST_SKIP() << "no " << HYBRID_REWARD_TEST_BUNDLE
                   << " (needs hybridc and the gpt2 fixture)";
    bundle_ = std::make_shared<const BundleDesc>(
        readBundle(HYBRID_REWARD_TEST_BUNDLE));
  }
  /// HF's initialisation (every matrix N(0, 0.02), norms 1, biases 0),
  /// the value head included.
  Engine fresh(uint64_t seed) {
    Engine e = Engine::create(bundle_, openDevice("cpu"));
    e.initRandom(seed);
    return e;
  }
  /// The causal LM's trunk, a zero value head.
  Engine engine() {
    Engine e = Engine::create(bundle_, openDevice("cpu"));
    CheckpointBinding binding;
    binding.zeroIfMissing = {"v_head.weight"};
    e.loadWeights(test::fixturesDir() + "/gpt2", binding);
    return e;
  }
  std::shared_ptr<const BundleDesc> bundle_;
};

TEST_F(RewardModelOnGpt2, LearnsToPreferTheMarkedAnswers) {
  const auto start = std::chrono::steady_clock::now();
  const int64_t kTrain = 96, kHeldOut = 64, kBatch = 8, kEpochs = 6;
  const Pairs train = makePairs(kTrain, 11), heldOut = makePairs(kHeldOut, 12);
  Engine e = fresh(1);
  auto evaluate = [&] {
    return rewardEval(e, heldOut.chosenIds, heldOut.chosenMask,
                      heldOut.rejectedIds, heldOut.rejectedMask);
  };
  // Untrained, the ranking is a coin toss: the test can fail.
  const RewardRanking before = evaluate();
  EXPECT_LT(before.accuracy, 0.75f);

  StepConfig step; // AdamW, betas (0.9, 0.999), weight decay 0.01
  step.lr = 1e-3f;
  step.maxGradNorm = 1.0f;
  float firstLoss = 0, lastLoss = 0;
  for (int64_t epoch = 0; epoch < kEpochs; ++epoch) {
    float sum = 0;
    for (int64_t b = 0; b < kTrain; b += kBatch) {
      const RewardRanking r = rewardBackward(
          e, rows(train.chosenIds, b, kBatch),
          rows(train.chosenMask, b, kBatch), rows(train.rejectedIds, b, kBatch),
          rows(train.rejectedMask, b, kBatch));
      e.step(step);
      sum += r.loss;
    }
    const float mean = sum / static_cast<float>(kTrain / kBatch);
    (epoch == 0 ? firstLoss : lastLoss) = mean;
  }
  const RewardRanking after = evaluate();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::printf("reward model: held-out accuracy %.3f -> %.3f, loss %.4f -> "
              "%.4f (train loss epoch 1 %.4f, epoch %lld %.4f), %.1f s\n",
              before.accuracy, after.accuracy, before.loss, after.loss,
              firstLoss, static_cast<long long>(kEpochs), lastLoss, seconds);
  RecordProperty("held_out_accuracy", std::to_string(after.accuracy));
  EXPECT_GE(after.accuracy, 0.9f);
  EXPECT_LT(after.loss, before.loss);
  EXPECT_LT(lastLoss, firstLoss);
}

TEST_F(RewardModelOnGpt2, EvaluationMatchesForwardAndBackward) {
  const Pairs p = makePairs(4, 13);
  Engine e = engine();
  // A zero head scores every answer 0: no pair is ranked, the loss is
  // -logsigmoid(0) = log 2.
  const RewardRanking zero =
      rewardEval(e, p.chosenIds, p.chosenMask, p.rejectedIds, p.rejectedMask);
  EXPECT_EQ(zero.accuracy, 0.0f);
  EXPECT_NEAR(zero.loss, std::log(2.0f), 1e-6);
  // Some head, so that the scores differ.
  StepConfig step;
  step.lr = 1e-2f;
  rewardBackward(e, p.chosenIds, p.chosenMask, p.rejectedIds, p.rejectedMask);
  e.step(step);

  const RewardRanking eval =
      rewardEval(e, p.chosenIds, p.chosenMask, p.rejectedIds, p.rejectedMask);
  // The end scores are @forward's scores (the value at each row's last
  // token), the accuracy their comparison.
  const NamedTensors chosen =
      e.forward({{"input_ids", p.chosenIds}, {"attention_mask", p.chosenMask}});
  const NamedTensors rejected = e.forward(
      {{"input_ids", p.rejectedIds}, {"attention_mask", p.rejectedMask}});
  const std::vector<float> c = chosen.at("scores").toVector<float>(),
                           r = rejected.at("scores").toVector<float>();
  ASSERT_EQ(eval.chosenScores.shape(), Shape{4});
  int higher = 0;
  for (int64_t b = 0; b < 4; ++b) {
    EXPECT_NEAR(eval.chosenScores.as<float>()[b], c[b], 1e-5f) << b;
    EXPECT_NEAR(eval.rejectedScores.as<float>()[b], r[b], 1e-5f) << b;
    higher += c[b] > r[b];
  }
  EXPECT_FLOAT_EQ(eval.accuracy, higher / 4.0f);
  // The backward pass reports the same ranking of the same weights.
  const RewardRanking train = rewardBackward(e, p.chosenIds, p.chosenMask,
                                             p.rejectedIds, p.rejectedMask);
  EXPECT_NEAR(train.loss, eval.loss, 1e-6f);
  EXPECT_EQ(train.accuracy, eval.accuracy);
  EXPECT_GT(eval.loss, 0.0f);
}

TEST_F(RewardModelOnGpt2, RejectsBadPairs) {
  const Pairs p = makePairs(2, 14);
  Engine e = engine();
  const HostTensor three = rows(p.rejectedIds, 0, 1);
  expectError(
      [&] {
        rewardBackward(e, p.chosenIds, p.chosenMask, three, p.rejectedMask);
      },
      {"reward model: rejected input_ids must be i64 [2,24]", "[1,24]"});
  const HostTensor floats =
      HostTensor::fromVector<float>({2, kSeq}, std::vector<float>(2 * kSeq));
  expectError(
      [&] {
        rewardEval(e, floats, p.chosenMask, p.rejectedIds, p.rejectedMask);
      },
      {"chosen input_ids must be i64 [pairs >= 1, seq]", "f32"});
}

TEST(RewardModel, NamesTheFlagsABundleWithoutItNeeds) {
  if (!test::fileExists(HYBRID_API_TEST_BUNDLE))
    GTEST_SKIP() << "no " << HYBRID_API_TEST_BUNDLE;
  Engine e =
      Engine::create(readBundle(HYBRID_API_TEST_BUNDLE), openDevice("cpu"));
  const HostTensor ids =
      HostTensor::fromVector<int64_t>({1, 2}, std::vector<int64_t>{1, 2});
  expectError([&] { rewardBackward(e, ids, ids, ids, ids); },
              {"has no @reward_forward_backward",
               "hybridc compile --head value --train --reward"});
}

} // namespace
} // namespace hybrid
