// The Trainer on the gpt2 fixture compiled with hybridc --train.
//
// The loss falls, the schedule's rate is applied, and a run saved and
// resumed ends bit for bit where the run without the stop ends.
#include "hybrid/Trainer.h"
#include "hybrid/Bundle.h"
#include "hybrid/Checkpoint.h"
#include "hybrid/Devices.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/TokenDataset.h"

#include "TestSupport.h"

#include <cstring>

namespace hybrid {
namespace {

using test::expectError;
using test::TempDir;

const char *kConfig = R"({
  "train_batch_size": 2, "train_micro_batch_size_per_gpu": 1,
  "gradient_clipping": 1.0,
  "optimizer": {"type": "AdamW", "params": {"lr": 0.003}},
  "scheduler": {"type": "WarmupLR",
                "params": {"warmup_min_lr": 0, "warmup_max_lr": 0.003,
                           "warmup_num_steps": 4, "warmup_type": "linear"}}
})";

class TrainerOnGpt2 : public ::testing::Test {
protected:
  void SetUp() override {
    if (!test::fileExists(HYBRID_API_TEST_BUNDLE))
      GTEST_SKIP() << "no " << HYBRID_API_TEST_BUNDLE
                   << " (needs hybridc and the gpt2 fixture)";
    bundle_ =
        std::make_shared<const BundleDesc>(readBundle(HYBRID_API_TEST_BUNDLE));
  }
  Engine engine() {
    Engine e = Engine::create(bundle_, openDevice("cpu"));
    e.loadWeights(test::fixturesDir() + "/gpt2", {"lm_head.weight"});
    return e;
  }
  TokenDataset data() {
    return TokenDataset::open(test::fixturesDir() + "/gpt2/ref.safetensors");
  }
  std::shared_ptr<const BundleDesc> bundle_;
};

TEST_F(TrainerOnGpt2, TheLossFallsAtTheSchedulesRate) {
  Engine e = engine();
  Trainer trainer(e, parseTrainConfig(kConfig), data());
  trainer.start();
  std::vector<TrainStepReport> steps;
  for (int i = 0; i < 8; ++i)
    steps.push_back(trainer.step());
  // Linear warmup over 4 steps: 0, then 3e-3 / 4 per step, then 3e-3.
  EXPECT_EQ(steps[0].lr, 0.0);
  EXPECT_FLOAT_EQ(static_cast<float>(steps[1].lr), 0.003f / 4);
  EXPECT_FLOAT_EQ(static_cast<float>(steps[7].lr), 0.003f);
  EXPECT_LT(steps.back().loss, 0.7 * steps.front().loss);
  EXPECT_EQ(trainer.globalSteps(), 8);
  EXPECT_EQ(trainer.appliedSteps(), 8);
  EXPECT_GT(steps[3].result.gradNorm, 0.0f);
}

TEST_F(TrainerOnGpt2, AResumedRunEndsWhereTheUninterruptedOneEnds) {
  TempDir dir;
  Engine straight = engine();
  Trainer whole(straight, parseTrainConfig(kConfig), data());
  whole.start();
  for (int i = 0; i < 6; ++i)
    whole.step();

  {
    Engine first = engine();
    Trainer half(first, parseTrainConfig(kConfig), data());
    half.start();
    for (int i = 0; i < 3; ++i)
      half.step();
    half.save(dir.path());
  }
  Engine second = Engine::create(bundle_, openDevice("cpu"));
  Trainer resumed(second, parseTrainConfig(kConfig), data());
  resumed.resume(dir.path(), {"lm_head.weight"});
  EXPECT_EQ(resumed.globalSteps(), 3);
  EXPECT_EQ(resumed.appliedSteps(), 3);
  for (int i = 0; i < 3; ++i)
    resumed.step();

  // The checkpoints of both runs: weights, moments and step counts, every
  // tensor byte for byte (the metadata differ: each save has its id).
  whole.save(dir.file("whole"));
  resumed.save(dir.file("resumed"));
  for (const char *file : {"/model.safetensors", "/optimizer.safetensors"}) {
    SafeTensorsFile a = SafeTensorsFile::open(dir.file("whole") + file);
    SafeTensorsFile b = SafeTensorsFile::open(dir.file("resumed") + file);
    ASSERT_EQ(a.entries().size(), b.entries().size()) << file;
    for (const SafeTensorsEntry &e : a.entries()) {
      const SafeTensorsEntry *other = b.find(e.name);
      ASSERT_NE(other, nullptr) << file << ": no " << e.name;
      HostTensor x = a.toHost(e, DType::F32), y = b.toHost(*other, DType::F32);
      ASSERT_EQ(x.shape(), y.shape()) << e.name;
      EXPECT_EQ(0, std::memcmp(x.data(), y.data(), x.bytes()))
          << file << ": " << e.name << " differs after resuming";
    }
    EXPECT_NE(a.metadata().at("checkpoint_id"),
              b.metadata().at("checkpoint_id"));
  }
}

TEST_F(TrainerOnGpt2, ConfigsAndDataTheBundleCannotTrainAreRefused) {
  Engine e = engine();
  expectError(
      [&] {
        Trainer(e, parseTrainConfig(R"({"train_batch_size": 8,
                  "train_micro_batch_size_per_gpu": 4})"),
                data());
      },
      {"ref.safetensors: 2 sequences, fewer than one micro-batch (4)"});
  expectError(
      [&] {
        Trainer(e, parseTrainConfig(R"({"train_batch_size": 2,
                  "optimizer": {"type": "SGD", "params": {"lr": 0.1}}})"),
                data());
      },
      {"optimizer.type SGD", "--optimizer=sgd"});
}

} // namespace
} // namespace hybrid
