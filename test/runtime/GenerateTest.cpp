// Engine::generate on every device backend, with the gpt2 fixture compiled
// by hybridc at build time: sampling reproducibility, EOS and padding of
// finished rows, the KV-capacity and mask errors (raised before any work),
// release_inference_cache returning the cache to the allocator, greedy
// tokens equal to HF's, captured decode steps (CUDA graphs) equal to steps
// run one by one, and batches padded to their bucket. Greedy parity through
// both frontends and left-padded prompts are lit tests (e2e/generate-*).
#include "DeviceTest.h"
#include "TestSupport.h"

#include "hybrid/Bundle.h"
#include "hybrid/Engine.h"
#include "hybrid/SafeTensors.h"

#include <cmath>
#include <fstream>

using namespace hybrid;
using namespace hybrid::test;

namespace {

const std::string kFixture = std::string(HYBRIDC_FIXTURES_DIR) + "/gpt2";

class GenerateOnDevice : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    if (!std::ifstream(HYBRID_TEST_GPT2_BUNDLE).good())
      GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_BUNDLE
                   << " (built by hybridc from the gpt2 fixture when the "
                      "compiler and the fixtures are present): skipped";
    auto bundle =
        std::make_shared<const BundleDesc>(readBundle(HYBRID_TEST_GPT2_BUNDLE));
    engine_ = std::make_unique<Engine>(Engine::create(bundle, device()));
    engine_->loadWeights(kFixture, {"lm_head.weight"});
    SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
    prompt_ = ref.toHost(*ref.find("greedy_prompt"), DType::I64);
  }

  Engine &engine() { return *engine_; }
  const HostTensor &prompt() const { return prompt_; }

  static GenerateConfig sampling(uint64_t seed) {
    GenerateConfig c;
    c.greedy = false;
    c.temperature = 0.9f;
    c.topK = 40;
    c.topP = 0.95f;
    c.seed = seed;
    return c;
  }

private:
  std::unique_ptr<Engine> engine_;
  HostTensor prompt_;
};
HYBRID_TEST_ON_EVERY_DEVICE(GenerateOnDevice);

TEST_P(GenerateOnDevice, TheSameSeedGivesTheSameTokens) {
  GenerateResult a = engine().generate(prompt(), nullptr, sampling(7));
  GenerateResult b = engine().generate(prompt(), nullptr, sampling(7));
  GenerateResult c = engine().generate(prompt(), nullptr, sampling(8));
  EXPECT_EQ(a.tokens.toVector<int64_t>(), b.tokens.toVector<int64_t>());
  EXPECT_EQ(a.logprobs.toVector<float>(), b.logprobs.toVector<float>());
  // 32 tokens drawn at temperature 0.9 from 512: another seed differs.
  EXPECT_NE(a.tokens.toVector<int64_t>(), c.tokens.toVector<int64_t>());
  for (float lp : a.logprobs.toVector<float>()) {
    EXPECT_LE(lp, 0.0f);
    EXPECT_TRUE(std::isfinite(lp));
  }
}

TEST_P(GenerateOnDevice, RowsStopAtEosAndArePaddedAfter) {
  GenerateConfig greedy;
  GenerateResult all = engine().generate(prompt(), nullptr, greedy);
  std::vector<int64_t> tokens = all.tokens.toVector<int64_t>();
  // Row 0's third greedy token as EOS: row 0 stops there, row 1 stops at
  // its first occurrence of it (or runs to the end).
  const int64_t eos = tokens[2];
  GenerateConfig stop = greedy;
  stop.eosTokenId = eos;
  stop.padTokenId = 511;
  stop.stopCheckInterval = 1;
  GenerateResult r = engine().generate(prompt(), nullptr, stop);
  std::vector<int64_t> got = r.tokens.toVector<int64_t>();
  std::vector<int64_t> lengths = r.lengths.toVector<int64_t>();
  ASSERT_EQ(lengths.size(), 2u);
  for (int64_t b = 0; b < 2; ++b) {
    int64_t first = 16;
    for (int64_t i = 0; i < 16; ++i)
      if (tokens[b * 16 + i] == eos) {
        first = i + 1;
        break;
      }
    EXPECT_EQ(lengths[b], first) << "row " << b;
    for (int64_t i = 0; i < r.steps; ++i)
      EXPECT_EQ(got[b * r.steps + i], i < first ? tokens[b * 16 + i] : 511)
          << "row " << b << " step " << i;
  }
  EXPECT_LE(r.steps, 16);

  // min_new_tokens bans EOS before it: with EOS as every row's first
  // token, the rows still give 4.
  stop.eosTokenId = tokens[0];
  stop.minNewTokens = 4;
  GenerateResult late = engine().generate(prompt(), nullptr, stop);
  for (int64_t length : late.lengths.toVector<int64_t>())
    EXPECT_GE(length, 4);
}

TEST_P(GenerateOnDevice, TooLongForTheCacheIsOneErrorBeforeAnyWork) {
  MemoryStats before = device()->memoryStats();
  GenerateConfig c;
  c.maxNewTokens = 16;
  c.maxOutTokens = 20; // 8 + 16 > 20
  expectError([&] { engine().generate(prompt(), nullptr, c); },
              {"the prompt (8 tokens) and max_new_tokens (16) need 24 "
               "KV-cache slots, more than max_out_tokens = 20"});
  c.maxOutTokens = 0;
  c.maxNewTokens = 121; // the fixture's 128 positions
  expectError([&] { engine().generate(prompt(), nullptr, c); },
              {"need 129 positions; the model has 128"});
  EXPECT_EQ(device()->memoryStats().allocations, before.allocations);
}

TEST_P(GenerateOnDevice, BadMasksAreRejected) {
  GenerateConfig c;
  HostTensor shortMask =
      HostTensor::fromVector<int64_t>({2, 4}, std::vector<int64_t>(8, 1));
  expectError([&] { engine().generate(prompt(), &shortMask, c); },
              {"attention_mask must be i64 [2,8] like input_ids, got i64 "
               "[2,4]"});
  HostTensor floatMask =
      HostTensor::fromVector<float>({2, 8}, std::vector<float>(16, 1.0f));
  expectError([&] { engine().generate(prompt(), &floatMask, c); },
              {"attention_mask must be i64", "got f32"});
  std::vector<int64_t> ones(16, 1);
  std::vector<int64_t> zeroRow = ones;
  std::fill(zeroRow.begin() + 8, zeroRow.end(), 0);
  HostTensor empty = HostTensor::fromVector<int64_t>({2, 8}, zeroRow);
  expectError([&] { engine().generate(prompt(), &empty, c); },
              {"attention_mask row 1 is all padding"});
  std::vector<int64_t> right = ones;
  right[7] = 0;
  HostTensor rightPadded = HostTensor::fromVector<int64_t>({2, 8}, right);
  expectError([&] { engine().generate(prompt(), &rightPadded, c); },
              {"row 0 has padding after a token; prompts are left-padded"});
  std::vector<int64_t> two = ones;
  two[3] = 2;
  HostTensor notBinary = HostTensor::fromVector<int64_t>({2, 8}, two);
  expectError([&] { engine().generate(prompt(), &notBinary, c); },
              {"attention_mask holds 2 at [0, 3]; it must be 0 or 1"});
}

TEST_P(GenerateOnDevice, ReleaseInferenceCacheReturnsItAndTheNextCallRetakes) {
  GenerateConfig keep;
  GenerateResult first = engine().generate(prompt(), nullptr, keep);
  const size_t held = engine().states().bytesInUse();
  // The KV cache of 2 layers x (key, value) x [2, 4, cap 128, 16] f32.
  EXPECT_GE(held, size_t(4) * 2 * 4 * 128 * 16 * 4);

  // And the workspaces of prefill and decode.
  const size_t workspaces = engine().executable("prefill").allocationBytes() +
                            engine().executable("decode").allocationBytes();
  EXPECT_GT(workspaces, 0u);

  GenerateConfig release = keep;
  release.releaseInferenceCache = true;
  MemoryStats before = device()->memoryStats();
  GenerateResult second = engine().generate(prompt(), nullptr, release);
  MemoryStats after = device()->memoryStats();
  EXPECT_EQ(engine().states().bytesInUse(), 0u);
  EXPECT_EQ(engine().executable("prefill").allocationBytes(), 0u);
  EXPECT_EQ(engine().executable("decode").allocationBytes(), 0u);
  EXPECT_GE(before.bytesInUse, after.bytesInUse + held + workspaces);
  EXPECT_EQ(second.tokens.toVector<int64_t>(),
            first.tokens.toVector<int64_t>());

  // Retaken by the next call, with the same answer.
  GenerateResult third = engine().generate(prompt(), nullptr, keep);
  EXPECT_EQ(engine().states().bytesInUse(), held);
  EXPECT_EQ(third.tokens.toVector<int64_t>(), first.tokens.toVector<int64_t>());
  EXPECT_EQ(third.logprobs.toVector<float>(), first.logprobs.toVector<float>());
}

TEST_P(GenerateOnDevice, GreedyTokensAreHuggingFaces) {
  SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
  HostTensor want = ref.toHost(*ref.find("greedy_tokens"), DType::I64);
  GenerateConfig greedy;
  greedy.maxNewTokens = want.shape()[1];
  GenerateResult r = engine().generate(prompt(), nullptr, greedy);
  EXPECT_EQ(r.tokens.toVector<int64_t>(), want.toVector<int64_t>());
}

TEST_P(GenerateOnDevice, CapturedStepsGiveWhatStepsOneByOneGive) {
  // Where the device has graphs, the default captures decode once and
  // replays it; without, every step runs kernel by kernel. Same work, so
  // the same bits, once the first captured generation has settled the
  // plans (step tuning may change a GEMM's kernel for all later calls).
  // (On the CPU both are the direct path.)
  GenerateConfig direct = sampling(11);
  direct.cudaGraph = false;
  GenerateConfig captured = sampling(11);
  captured.maxNewTokens = direct.maxNewTokens = 24;
  engine().generate(prompt(), nullptr, captured);
  GenerateResult a = engine().generate(prompt(), nullptr, direct);
  GenerateResult b = engine().generate(prompt(), nullptr, captured);
  GenerateResult c = engine().generate(prompt(), nullptr, captured);
  EXPECT_EQ(a.tokens.toVector<int64_t>(), b.tokens.toVector<int64_t>());
  EXPECT_EQ(a.logprobs.toVector<float>(), b.logprobs.toVector<float>());
  EXPECT_EQ(b.tokens.toVector<int64_t>(), c.tokens.toVector<int64_t>());
  EXPECT_EQ(b.logprobs.toVector<float>(), c.logprobs.toVector<float>());
}

TEST_P(GenerateOnDevice, ABatchPaddedToItsBucketKeepsItsRows) {
  // Three rows (on a device with graphs: run in a bucket of four, the last
  // row repeated) give the rows of the two-row prompt, and only three.
  const std::vector<int64_t> two = prompt().toVector<int64_t>();
  const int64_t len = prompt().shape()[1];
  std::vector<int64_t> three = two;
  three.insert(three.end(), two.begin(), two.begin() + len); // row 0 again
  HostTensor ids = HostTensor::fromVector<int64_t>({3, len}, three);
  GenerateConfig greedy;
  GenerateResult pair = engine().generate(prompt(), nullptr, greedy);
  GenerateResult r = engine().generate(ids, nullptr, greedy);
  ASSERT_EQ(r.tokens.shape(), (Shape{3, pair.steps}));
  ASSERT_EQ(r.lengths.shape(), (Shape{3}));
  const std::vector<int64_t> got = r.tokens.toVector<int64_t>(),
                             want = pair.tokens.toVector<int64_t>();
  const int64_t n = pair.steps;
  for (int64_t row : {0, 1})
    EXPECT_EQ(std::vector<int64_t>(got.begin() + row * n,
                                   got.begin() + (row + 1) * n),
              std::vector<int64_t>(want.begin() + row * n,
                                   want.begin() + (row + 1) * n))
        << "row " << row;
  EXPECT_EQ(std::vector<int64_t>(got.begin() + 2 * n, got.end()),
            std::vector<int64_t>(want.begin(), want.begin() + n));
  // Log-probs agree to the GEMMs' batch-size dependence (other row counts
  // may take other kernels).
  const std::vector<float> lp = r.logprobs.toVector<float>(),
                           lpWant = pair.logprobs.toVector<float>();
  for (int64_t i = 0; i < 2 * n; ++i)
    EXPECT_NEAR(lp[i], lpWant[i], 1e-4) << "at " << i;
}

} // namespace
