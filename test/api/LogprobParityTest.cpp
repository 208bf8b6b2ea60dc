// Generation's log-probs against the training graph's (compareGeneration-
// Logprobs) on every device, with the gpt2 fixture compiled with --train
// and generation kept: sampled answers after left-padded and unpadded
// prompts. The CPU gives the same bits; a GPU reports its largest
// difference and must stay within f32 roundoff of the same maths.
#include "DeviceTest.h"

#include "hybrid/Bundle.h"
#include "hybrid/LogprobParity.h"
#include "hybrid/SafeTensors.h"

#include <fstream>

using namespace hybrid;
using namespace hybrid::test;

namespace {

const std::string kFixture = std::string(HYBRIDC_FIXTURES_DIR) + "/gpt2";

class LogprobParityOnDevice : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    if (!std::ifstream(HYBRID_API_TEST_HYBRID_BUNDLE).good())
      GTEST_SKIP() << "no " << HYBRID_API_TEST_HYBRID_BUNDLE
                   << " (hybridc --train of the gpt2 fixture): skipped";
    engine_ = std::make_unique<Engine>(
        Engine::create(readBundle(HYBRID_API_TEST_HYBRID_BUNDLE), device()));
    engine_->loadWeights(kFixture, {"lm_head.weight"});
    SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
    prompt_ = ref.toHost(*ref.find("greedy_prompt"), DType::I64);
  }

  /// Rows of 8, 5 and 3 of the prompt's first row's tokens, left-padded
  /// with id 13 under a mask.
  TokenBatch paddedPrompts() const {
    const int64_t P = 8;
    std::vector<int64_t> ids(3 * P, 13), mask(3 * P, 0);
    const int64_t lengths[3] = {8, 5, 3};
    const int64_t *src = prompt_.as<int64_t>();
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t j = 0; j < lengths[r]; ++j) {
        ids[r * P + P - lengths[r] + j] = src[j];
        mask[r * P + P - lengths[r] + j] = 1;
      }
    return {HostTensor::fromVector<int64_t>({3, P}, ids),
            HostTensor::fromVector<int64_t>({3, P}, mask), std::nullopt};
  }

  std::unique_ptr<Engine> engine_;
  HostTensor prompt_;
};

HYBRID_TEST_ON_EVERY_DEVICE(LogprobParityOnDevice);

TEST_P(LogprobParityOnDevice, SampledTokensScoreAsTheTrainingGraphScoresThem) {
  GenerateConfig config;
  config.greedy = false;
  config.temperature = 1.0f;
  config.maxNewTokens = 24;
  for (const TokenBatch &prompts :
       {paddedPrompts(), TokenBatch{prompt_, std::nullopt, std::nullopt}})
    for (uint64_t seed : {1u, 7u}) {
      config.seed = seed;
      const LogprobParity p =
          compareGenerationLogprobs(*engine_, prompts, config);
      EXPECT_EQ(p.compared, prompts.rows() * 24);
      std::printf("%s, %lld prompts, seed %llu: %lld tokens, max |diff| "
                  "%.3g, %lld differ in bits\n",
                  GetParam().c_str(), static_cast<long long>(prompts.rows()),
                  static_cast<unsigned long long>(seed),
                  static_cast<long long>(p.compared), p.maxAbsDiff,
                  static_cast<long long>(p.differing));
      if (onCpu()) {
        EXPECT_EQ(p.differing, 0) << "max |diff| " << p.maxAbsDiff;
      } else {
        // Decode's GEMV and the full forward's GEMM sum in other orders.
        EXPECT_LE(p.maxAbsDiff, 1e-4);
      }
    }
}

TEST_P(LogprobParityOnDevice, RefusesATemperatureTheTrainingGraphLacks) {
  GenerateConfig config;
  config.greedy = false;
  config.temperature = 0.7f;
  try {
    compareGenerationLogprobs(*engine_, paddedPrompts(), config);
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("temperature 1"), std::string::npos)
        << e.what();
  }
}

} // namespace
