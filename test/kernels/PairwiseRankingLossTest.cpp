// pairwise_ranking_loss(_grad)'s CPU kernels against DeepSpeed-Chat's
// RewardModel.forward (dschat/utils/model/reward_model.py) transcribed in
// double below (the pad id replaced by the attention mask, right padding):
// hand-computed values on two pairs (one of equal rows), random pairs of
// every kind (longer chosen, longer rejected, no padding, divergence at 0),
// and the gradient against central differences of loss and end scores.
#include "KernelTestSupport.h"

#include <cmath>

namespace hybrid::cpu::test {
namespace {

/// DeepSpeed-Chat's loop over pairs, in double: the loss, each row's end
/// score (chosen rows, then rejected) and the accuracy.
struct Reference {
  double loss = 0, accuracy = 0;
  std::vector<double> endScores;
};

Reference referenceRanking(const std::vector<double> &values,
                           const HostTensor &ids, const HostTensor &mask) {
  const int64_t rows = ids.shape[0], T = ids.shape[1], B = rows / 2;
  // A position's token: its id, or the pad (-1) where the mask is 0.
  auto token = [&](int64_t row, int64_t t) -> int64_t {
    return mask.at(row * T + t) != 0 ? static_cast<int64_t>(ids.at(row * T + t))
                                     : -1;
  };
  auto firstPad = [&](int64_t row) {
    for (int64_t t = 0; t < T; ++t)
      if (token(row, t) == -1)
        return t;
    return T;
  };
  Reference r;
  r.endScores.assign(rows, 0);
  int64_t higher = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t c = b, j = B + b;
    const int64_t cInd = firstPad(c);
    int64_t divergence = -1;
    for (int64_t t = 0; t < T && divergence < 0; ++t)
      if (token(c, t) != token(j, t))
        divergence = t;
    int64_t endInd, rInd;
    if (divergence < 0) {
      endInd = T;
      divergence = T - 1;
      rInd = cInd;
    } else {
      rInd = firstPad(j);
      endInd = std::max(cInd, rInd);
    }
    double sum = 0;
    for (int64_t t = divergence; t < endInd; ++t) {
      const double d = values[c * T + t] - values[j * T + t];
      sum += std::log1p(std::exp(-d)); // -logsigmoid(d)
    }
    r.loss += sum / static_cast<double>(endInd - divergence);
    // Python's index -1 for an end of 0.
    r.endScores[c] = values[c * T + (cInd > 0 ? cInd - 1 : T - 1)];
    r.endScores[j] = values[j * T + (rInd > 0 ? rInd - 1 : T - 1)];
    higher += r.endScores[c] > r.endScores[j] ? 1 : 0;
  }
  r.loss /= static_cast<double>(B);
  r.accuracy = static_cast<double>(higher) / static_cast<double>(B);
  return r;
}

struct Ranked {
  HostTensor loss, endScores, accuracy;
};

Ranked rank(const HostTensor &values, const HostTensor &ids,
            const HostTensor &mask) {
  Ranked out{HostTensor(DType::F32, {}),
             HostTensor(DType::F32, {values.shape[0]}),
             HostTensor(DType::F32, {})};
  runKernelOnResults(ops::PairwiseRankingLoss{}, {&values, &ids, &mask},
                     {&out.loss, &out.endScores, &out.accuracy});
  return out;
}

HostTensor rankGrad(const HostTensor &values, const HostTensor &ids,
                    const HostTensor &mask, const HostTensor &grad,
                    const HostTensor &gradEnd) {
  HostTensor out(DType::F32, values.shape);
  runKernel(ops::PairwiseRankingLossGrad{},
            {&values, &ids, &mask, &grad, &gradEnd}, out);
  return out;
}

TEST(PairwiseRankingLoss, HandComputedPairs) {
  // Pair 0: chosen ends at 4, rejected at 3, they differ from position 2:
  // the span is [2, 4), differences 1 and 0. Pair 1: equal rows ending at
  // 3: the span is the last position alone, difference -1 - 2 = -3.
  const HostTensor ids = i64({4, 5}, {1, 2, 3, 4, 0, //
                                      5, 6, 7, 0, 0, //
                                      1, 2, 7, 0, 0, //
                                      5, 6, 7, 0, 0});
  const HostTensor mask = i64({4, 5}, {1, 1, 1, 1, 0, //
                                       1, 1, 1, 0, 0, //
                                       1, 1, 1, 0, 0, //
                                       1, 1, 1, 0, 0});
  const HostTensor values = f32({4, 5}, {0.1f, 0.2f, 1, 2, 9,  //
                                         0,    0,    3, 0, -1, //
                                         0.1f, 0.2f, 0, 2, 9,  //
                                         0,    0,    4, 0, 2});
  const Ranked r = rank(values, ids, mask);
  // softplus(-1) = 0.31326169, log 2 = 0.69314718, softplus(3) = 3.04858735.
  const double pair0 = (0.31326169 + 0.69314718) / 2, pair1 = 3.04858735;
  expectNear(r.loss, {(pair0 + pair1) / 2}, 1e-6, 1e-6, "loss");
  // Ends - 1: chosen 3 and 2, rejected 2 and 2 (the equal pair's rejected
  // end is the chosen's); 2 > 0 wins, 3 > 4 does not.
  expectNear(r.endScores, {2, 3, 0, 4}, 0, 0, "end scores");
  expectNear(r.accuracy, {0.5}, 0, 0, "accuracy");

  // d loss / d chosen = -sigmoid(-d) / (B n): pair 0 (n = 2) at 2 and 3,
  // pair 1 (n = 1) at 4; the rejected row gets the negation. The end
  // scores' gradients land at each row's end - 1.
  const HostTensor g = f32({}, {1}), gEnd = f32({4}, {10, 20, 30, 40});
  const HostTensor grad = rankGrad(values, ids, mask, g, gEnd);
  const double s1 = 0.26894142, s0 = 0.5, s3 = 0.95257413; // sigmoid(-d)
  expectNear(grad, {0,       0, -s1 / 4,     -s0 / 4 + 10,
                    0, //
                    0,       0, 20,          0,
                    -s3 / 2, //
                    0,       0, s1 / 4 + 30, s0 / 4,
                    0, //
                    0,       0, 40,          0,
                    s3 / 2},
             1e-6, 1e-6, "grad");
}

/// Random pairs of every kind: a shared prompt then answers of random
/// lengths (chosen longer, rejected longer, equal, none padded), some rows
/// equal, one pair differing from position 0.
void randomPairs(Random &rng, int64_t B, int64_t T, HostTensor &ids,
                 HostTensor &mask) {
  ids = HostTensor(DType::I64, {2 * B, T});
  mask = HostTensor(DType::I64, {2 * B, T});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t prompt = b == 1 || T < 2 ? 0 : rng.integer(1, T / 2);
    const int64_t lengths[2] = {rng.integer(prompt + 1, T),
                                rng.integer(prompt + 1, T)};
    const bool equal = b % 4 == 3;
    for (int64_t side = 0; side < 2; ++side) {
      const int64_t row = side * B + b;
      const int64_t length = equal ? lengths[0] : lengths[side];
      for (int64_t t = 0; t < T; ++t) {
        const bool real = t < length;
        // The prompt is shared; answers draw from different ranges so
        // they differ at their first token.
        int64_t id = t < prompt ? 100 + t : (side == 0 || equal ? 1 : 50);
        if (t >= prompt && !equal)
          id += rng.integer(0, 40);
        if (equal && side == 1)
          id = ids.at(b * T + t);
        ids.set(row * T + t, real ? id : 0);
        mask.set(row * T + t, real ? 1 : 0);
      }
    }
  }
}

TEST(PairwiseRankingLoss, MatchesDeepSpeedChatOnRandomPairs) {
  Random rng(2024);
  for (int64_t T : {1, 7, 33}) {
    HostTensor ids, mask;
    randomPairs(rng, 9, T, ids, mask);
    const HostTensor values = rng.f32({18, T}, -3, 3);
    const Reference want = referenceRanking(values.values(), ids, mask);
    const Ranked r = rank(values, ids, mask);
    const std::string what = "T = " + std::to_string(T);
    expectNear(r.loss, {want.loss}, 1e-6, 1e-6, what + " loss");
    expectNear(r.endScores, want.endScores, 0, 0, what + " end scores");
    expectNear(r.accuracy, {want.accuracy}, 0, 1e-7, what + " accuracy");
  }
}

TEST(PairwiseRankingLoss, GradientIsTheLossDerivative) {
  Random rng(2025);
  const int64_t B = 6, T = 11;
  HostTensor ids, mask;
  randomPairs(rng, B, T, ids, mask);
  HostTensor values = rng.f32({2 * B, T}, -2, 2);
  const HostTensor g = f32({}, {0.75f});
  const HostTensor gEnd = rng.f32({2 * B});
  const HostTensor grad = rankGrad(values, ids, mask, g, gEnd);
  // The objective whose gradient the op returns: g loss + sum gEnd scores.
  auto f = [&](const std::vector<double> &v) {
    const Reference r = referenceRanking(v, ids, mask);
    double total = 0.75 * r.loss;
    for (int64_t i = 0; i < 2 * B; ++i)
      total += gEnd.at(i) * r.endScores[i];
    return total;
  };
  std::vector<double> want, v = values.values();
  for (size_t i = 0; i < v.size(); ++i) {
    const double h = 1e-4, keep = v[i];
    v[i] = keep + h;
    const double up = f(v);
    v[i] = keep - h;
    const double down = f(v);
    v[i] = keep;
    want.push_back((up - down) / (2 * h));
  }
  expectNear(grad, want, 1e-6, 1e-5, "grad");
}

TEST(PairwiseRankingLoss, RejectsBadCalls) {
  Random rng(2026);
  const HostTensor odd = rng.f32({3, 4}), values = rng.f32({4, 4});
  const HostTensor ids3 = rng.i64({3, 4}), ids = rng.i64({4, 4});
  const HostTensor shortIds = rng.i64({4, 3}), floatIds = rng.f32({4, 4});
  auto error = [&](const HostTensor &v, const HostTensor &i,
                   const HostTensor &m) {
    HostTensor loss(DType::F32, {}), scores(DType::F32, {v.shape[0]}),
        accuracy(DType::F32, {});
    try {
      runKernelOnResults(ops::PairwiseRankingLoss{}, {&v, &i, &m},
                         {&loss, &scores, &accuracy});
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(odd, ids3, ids3).find("2B rows"), std::string::npos);
  EXPECT_NE(error(values, shortIds, ids).find("input_ids"), std::string::npos);
  EXPECT_NE(error(values, floatIds, ids).find("input_ids"), std::string::npos);
  EXPECT_NE(error(values, ids, shortIds).find("attention_mask"),
            std::string::npos);
  const HostTensor g = f32({}, {1}), gEnd = f32({3}, {0, 0, 0});
  EXPECT_NE(errorOf(ops::PairwiseRankingLossGrad{},
                    {&values, &ids, &ids, &g, &gEnd},
                    HostTensor(DType::F32, {4, 4}))
                .find("grad_end_scores"),
            std::string::npos);
}

} // namespace
} // namespace hybrid::cpu::test
