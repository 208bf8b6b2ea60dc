// The CUDA pairwise_ranking_loss(_grad) against the CPU oracle on reward-
// model batches: pairs of every kind (the chosen answer longer, the
// rejected longer, equal rows, no padding, a divergence at position 0),
// more pairs than one block's threads, and a single position. Both
// backends run one definition of the math (kernels/common/
// PairwiseRankingLoss.h), the span sums and the pair sum in one order;
// expf and log1pf may differ from the CPU's by an ulp, so the loss and the
// gradient get a 1e-6 relative tolerance, the end scores and accuracy none.
#include "CudaTestSupport.h"

namespace hybrid::cuda::test {
namespace {

class PairwiseRankingLossTest : public CudaKernelTest {
protected:
  /// B pairs of length T: a shared prompt, answers that differ from its end
  /// on (every fourth pair equal), lengths drawn per row.
  void pairs(int64_t B, int64_t T, HostTensor &ids, HostTensor &mask) {
    std::vector<double> id(2 * B * T), m(2 * B * T);
    std::uniform_int_distribution<int64_t> token(0, 40);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t prompt =
          b == 1 || T < 2
              ? 0
              : std::uniform_int_distribution<int64_t>(1, T / 2)(rng);
      std::uniform_int_distribution<int64_t> length(prompt + 1, T);
      const int64_t lengths[2] = {length(rng), length(rng)};
      const bool equal = b % 4 == 3;
      for (int64_t side = 0; side < 2; ++side)
        for (int64_t t = 0; t < T; ++t) {
          const int64_t row = side * B + b;
          const bool real = t < (equal ? lengths[0] : lengths[side]);
          int64_t v = t < prompt ? 100 + t : side == 0 || equal ? 1 : 50;
          if (t >= prompt && !equal)
            v += token(rng);
          if (equal && side == 1)
            v = static_cast<int64_t>(id[b * T + t]);
          id[row * T + t] = real ? static_cast<double>(v) : 0.0;
          m[row * T + t] = real ? 1.0 : 0.0;
        }
    }
    ids = tensorOf(DType::I64, {2 * B, T}, id);
    mask = tensorOf(DType::I64, {2 * B, T}, m);
  }
};

TEST_F(PairwiseRankingLossTest, MatchesCpu) {
  const Tolerance close{1e-6, 1e-7}, exact{0, 0};
  for (auto [B, T] :
       {std::pair<int64_t, int64_t>{1, 1}, {4, 9}, {16, 128}, {300, 40}}) {
    HostTensor ids, mask;
    pairs(B, T, ids, mask);
    const HostTensor values = randomTensor(DType::F32, {2 * B, T}, rng, -3, 3);
    const std::string what =
        std::to_string(B) + " pairs of " + std::to_string(T);
    const ops::PairwiseRankingLoss op{};
    const std::vector<HostTensor> results = {HostTensor(DType::F32, {}),
                                             HostTensor(DType::F32, {2 * B}),
                                             HostTensor(DType::F32, {})};
    const std::vector<HostTensor> cpu =
        runCpu(op, {values, ids, mask}, results);
    const std::vector<HostTensor> gpu =
        runCuda(op, {values, ids, mask}, results);
    expectClose(gpu[0], cpu[0], close, "loss " + what);
    expectClose(gpu[1], cpu[1], exact, "end_scores " + what);
    expectClose(gpu[2], cpu[2], exact, "accuracy " + what);

    const HostTensor g = tensorOf(DType::F32, {}, {0.75}),
                     gEnd = randomTensor(DType::F32, {2 * B}, rng, -1, 1);
    expectMatchesCpu(ops::PairwiseRankingLossGrad{},
                     {values, ids, mask, g, gEnd},
                     {HostTensor(DType::F32, {2 * B, T})},
                     "pairwise_ranking_loss_grad " + what, &close);
  }
}

} // namespace
} // namespace hybrid::cuda::test
