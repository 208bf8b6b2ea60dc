// The moving average of the weights (Engine::enableEma / updateEma,
// DeepSpeed-Chat's --enable_ema) on every device, with the gpt2 fixture's
// training bundle: after k AdamW steps the average is the closed form
// beta^k w0 + sum_i (1 - beta) beta^(k - i) w_i of the weight history (in
// double, to f32 rounding) and, bit for bit, the CPU rule (common/Ema.h)
// applied on the host step by step, so a GPU is checked against the CPU's
// bits; saving and loading it back (resuming) keeps every bit.
#include "DeviceTest.h"

#include "hybrid/Bundle.h"
#include "hybrid/Checkpoint.h"
#include "hybrid/EngineState.h"
#include "hybrid/SafeTensors.h"

#include "common/Ema.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

using namespace hybrid;
using namespace hybrid::test;

namespace {

const std::string kFixture = std::string(HYBRIDC_FIXTURES_DIR) + "/gpt2";

class EmaOnDevice : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    if (!std::ifstream(HYBRID_API_TEST_BUNDLE).good())
      GTEST_SKIP() << "no " << HYBRID_API_TEST_BUNDLE << ": skipped";
    bundle_ =
        std::make_shared<const BundleDesc>(readBundle(HYBRID_API_TEST_BUNDLE));
    engine_ = std::make_unique<Engine>(Engine::create(bundle_, device()));
    engine_->loadWeights(kFixture, {"lm_head.weight"});
    SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
    ids_ = ref.toHost(*ref.find("input_ids"), DType::I64);
  }

  /// Every weight as f32, by name.
  std::map<std::string, std::vector<float>> weights() {
    std::map<std::string, std::vector<float>> out;
    WeightStore &w = engine_->weights();
    Device &d = engine_->device();
    for (size_t i = 0; i < w.size(); ++i) {
      HostTensor h = HostTensor::allocate(w.dtype(i), w.shape(i));
      d.copyDeviceToHost(h.data(), w.data(i), h.bytes(), d.defaultStream());
      d.synchronize(d.defaultStream());
      out[w.name(i)] = h.toFloats();
    }
    return out;
  }

  void trainStep() {
    engine_->forwardBackward(ids_);
    StepConfig c;
    c.lr = 1e-2f; // large enough that the weights move visibly
    engine_->step(c);
  }

  std::shared_ptr<const BundleDesc> bundle_;
  std::unique_ptr<Engine> engine_;
  HostTensor ids_;
};

HYBRID_TEST_ON_EVERY_DEVICE(EmaOnDevice);

TEST_P(EmaOnDevice, AfterKStepsTheAverageIsTheClosedFormOfTheWeightHistory) {
  const float beta = 0.992f;
  engine_->enableEma(beta);
  std::vector<std::map<std::string, std::vector<float>>> history{weights()};
  // The start is the weights themselves.
  for (const auto &[name, ema] : emaWeights(*engine_))
    EXPECT_EQ(ema.toVector<float>(), history[0].at(name)) << name;
  const int k = 4;
  for (int s = 0; s < k; ++s) {
    trainStep();
    engine_->updateEma();
    history.push_back(weights());
  }
  const NamedTensors ema = emaWeights(*engine_);
  ASSERT_EQ(ema.size(), engine_->weights().size());
  double worst = 0, moved = 0;
  for (const auto &[name, t] : ema) {
    const std::vector<float> got = t.toVector<float>();
    for (size_t j = 0; j < got.size(); ++j) {
      // The closed form, in double.
      const double b = static_cast<float>(beta);
      double want = std::pow(b, k) * history[0].at(name)[j];
      for (int i = 1; i <= k; ++i)
        want += (1 - b) * std::pow(b, k - i) * history[i].at(name)[j];
      const double scale = std::max(
          1e-3, std::fabs(static_cast<double>(history[0].at(name)[j])));
      worst = std::max(worst, std::fabs(got[j] - want) / scale);
      moved =
          std::max<double>(moved, std::fabs(got[j] - history[0].at(name)[j]));
      // The CPU's rule on the host, step by step: the same bits.
      float host = history[0].at(name)[j];
      for (int i = 1; i <= k; ++i)
        host = kernels::emaLerp(host, history[i].at(name)[j], beta);
      ASSERT_EQ(got[j], host) << name << "[" << j << "]";
    }
  }
  std::printf("%s: max |ema - closed form| / max(|w0|, 1e-3) %.3g over %d "
              "steps; the average moved up to %.3g\n",
              GetParam().c_str(), worst, k, moved);
  EXPECT_LE(worst, 1e-5); // a few f32 roundings per step
  EXPECT_GT(moved, 0.0);  // the steps moved it at all
}

TEST_P(EmaOnDevice, SavedAverageLoadsBackBitForBitAndBindsAsWeights) {
  engine_->enableEma(0.9f);
  for (int s = 0; s < 2; ++s) {
    trainStep();
    engine_->updateEma();
  }
  const std::string path =
      ::testing::TempDir() + "/ema-" + GetParam() + ".safetensors";
  saveEmaWeights(*engine_, path);
  const NamedTensors saved = emaWeights(*engine_);

  Engine other = Engine::create(bundle_, device());
  other.loadWeights(kFixture, {"lm_head.weight"});
  other.enableEma(0.9f);
  loadEmaWeights(other, path);
  for (const auto &[name, t] : emaWeights(other))
    EXPECT_EQ(t.toVector<float>(), saved.at(name).toVector<float>()) << name;
  // An HF checkpoint: it binds as weights.
  other.loadWeights(path, {"lm_head.weight"});
  EXPECT_EQ(SafeTensorsFile::open(path).metadata().at("ema_beta"),
            "0.899999976");
}

TEST_P(EmaOnDevice, ErrorsNameWhatIsMissing) {
  EXPECT_THROW(engine_->updateEma(), Error);
  EXPECT_THROW(engine_->enableEma(1.5f), Error);
  Engine unbound = Engine::create(bundle_, device());
  try {
    unbound.enableEma();
    FAIL() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("bind the weights"), std::string::npos)
        << e.what();
  }
}

} // namespace
