// The hybrid engine's promise on every device backend, with the gpt2 fixture
// compiled with its training step (hybridc --train) at build time: one
// weight store serves forward, prefill, decode and train_step (every
// executable's parameter buffers are the store's, so switching between
// training and generation copies nothing), and DeepSpeed's hybrid-engine
// test made ours: forward, then generate, then forward gives identical
// logits; after a step, generate uses the updated weights (no stale copy).
// And the training API: forwardBackward over micro-batches, then step;
// the loss's labels (padding never counts; -100 ignored; none counted
// gives 0, not NaN); backward (a custom loss's gradient w.r.t. the
// logits) into the same accumulators.
#include "DeviceTest.h"
#include "TestSupport.h"

#include "hybrid/Bundle.h"
#include "hybrid/Engine.h"
#include "hybrid/SafeTensors.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

using namespace hybrid;
using namespace hybrid::test;

namespace {

const std::string kFixture = std::string(HYBRIDC_FIXTURES_DIR) + "/gpt2";

class HybridEngineOnDevice : public DeviceTest {
protected:
  void SetUp() override {
    DeviceTest::SetUp();
    if (IsSkipped())
      return;
    if (!std::ifstream(HYBRID_TEST_GPT2_TRAIN_BUNDLE).good())
      GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_TRAIN_BUNDLE
                   << " (built by hybridc --train from the gpt2 fixture "
                      "when the compiler and the fixtures are present): "
                      "skipped";
    auto bundle = std::make_shared<const BundleDesc>(
        readBundle(HYBRID_TEST_GPT2_TRAIN_BUNDLE));
    engine_ = std::make_unique<Engine>(Engine::create(bundle, device()));
    engine_->loadWeights(kFixture, {"lm_head.weight"});
    SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
    ids_ = ref.toHost(*ref.find("input_ids"), DType::I64);
    prompt_ = ref.toHost(*ref.find("greedy_prompt"), DType::I64);
  }

  Engine &engine() { return *engine_; }

  std::vector<float> logits(const HostTensor &ids) {
    return engine()
        .forward(
            engine().executable("forward").withDefaults({{"input_ids", ids}}))
        .at("logits")
        .toVector<float>();
  }

  /// One AdamW step on input_ids (the fixture's hyperparameters).
  float step() {
    Executable &s = engine().executable("train_step");
    auto scalar = [](float v) {
      return HostTensor::fromVector<float>({1}, {v});
    };
    NamedTensors out = s.run(s.withDefaults({{"input_ids", ids_},
                                             {"lr", scalar(1e-3f)},
                                             {"beta1", scalar(0.9f)},
                                             {"beta2", scalar(0.95f)},
                                             {"eps", scalar(1e-8f)},
                                             {"weight_decay", scalar(0.01f)}}));
    return out.at("loss").toVector<float>()[0];
  }

  /// Every gradient accumulator (opt.grad.*) that is allocated, by name.
  std::map<std::string, std::vector<float>> accumulators() {
    std::map<std::string, std::vector<float>> out;
    StateStore &states = engine().states();
    for (size_t i = 0; i < states.size(); ++i) {
      const std::string &name = states.desc(i).name;
      if (name.rfind("opt.grad.", 0) != 0 || !states.allocated(name))
        continue;
      DeviceTensor t = engine().state(name);
      out[name] = readDeviceAs<float>(
          *device(), t.data, static_cast<size_t>(numElements(t.shape)));
    }
    return out;
  }

  /// f32 [batch, seq, vocab] logits-shaped tensor holding `values`.
  HostTensor logitsShaped(const std::vector<float> &values) {
    const Shape &ids = ids_.shape();
    const int64_t vocab =
        static_cast<int64_t>(values.size()) / (ids[0] * ids[1]);
    return HostTensor::fromVector<float>({ids[0], ids[1], vocab}, values);
  }

  std::unique_ptr<Engine> engine_;
  HostTensor ids_, prompt_;
};
HYBRID_TEST_ON_EVERY_DEVICE(HybridEngineOnDevice);

TEST_P(HybridEngineOnDevice, OneWeightStoreServesEveryExecutable) {
  // Run each once so that every executable has bound its parameters.
  logits(ids_);
  GenerateConfig greedy;
  engine().generate(prompt_, nullptr, greedy);
  step();
  const MemoryStats before = device()->memoryStats();
  for (const char *name : {"forward", "prefill", "decode", "train_step"}) {
    Executable &e = engine().executable(name);
    int params = 0;
    for (size_t b = 0; b < e.desc().buffers.size(); ++b) {
      const BufferDesc &buffer = e.desc().buffers[b];
      if (buffer.kind != BufferKind::Param)
        continue;
      ++params;
      EXPECT_EQ(e.bufferAddress(b),
                engine().weights().data(static_cast<size_t>(buffer.index)))
          << name << " reads its own copy of " << buffer.name;
    }
    EXPECT_GT(params, 0) << name;
  }
  // Switching between generation and training moves no weight: a
  // generate after the step allocates nothing new (its cache is kept).
  engine().generate(prompt_, nullptr, greedy);
  EXPECT_EQ(device()->memoryStats().bytesInUse, before.bytesInUse);
}

TEST_P(HybridEngineOnDevice,
       GenerateBetweenForwardsChangesNothingAndSeesSteps) {
  const std::vector<float> first = logits(ids_);
  GenerateConfig greedy;
  engine().generate(prompt_, nullptr, greedy);
  EXPECT_EQ(logits(ids_), first) << "generate changed what forward computes";

  const float loss = step();
  EXPECT_TRUE(std::isfinite(loss));
  const std::vector<float> after = logits(ids_);
  double moved = 0;
  for (size_t i = 0; i < after.size(); ++i)
    moved = std::max(moved, std::fabs(double(after[i]) - first[i]));
  EXPECT_GT(moved, 1e-3) << "the step did not change the weights forward reads";

  // generate after the step: its first token's log-prob is the log-softmax
  // of forward's last-position logits on the prompt with the new weights.
  GenerateResult r = engine().generate(prompt_, nullptr, greedy);
  const std::vector<float> l = logits(prompt_);
  const int64_t batch = prompt_.shape()[0], len = prompt_.shape()[1];
  const int64_t vocab = static_cast<int64_t>(l.size()) / (batch * len);
  const std::vector<int64_t> tokens = r.tokens.toVector<int64_t>();
  const std::vector<float> logprobs = r.logprobs.toVector<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const float *row = l.data() + (b * len + len - 1) * vocab;
    double top = row[0];
    for (int64_t v = 1; v < vocab; ++v)
      top = std::max(top, double(row[v]));
    double sum = 0;
    for (int64_t v = 0; v < vocab; ++v)
      sum += std::exp(double(row[v]) - top);
    const int64_t token = tokens[b * r.steps];
    const double want = double(row[token]) - top - std::log(sum);
    EXPECT_NEAR(logprobs[b * r.steps], want, 1e-4) << "row " << b;
  }
}

TEST_P(HybridEngineOnDevice, AccumulatedMicroBatchesStepAsOneBatch) {
  // One engine: forwardBackward twice on the batch, then step (the mean of
  // the two gradients, a clipping bound that does not bite); the other:
  // train_step on the batch. Same weights after.
  const float loss1 = engine().forwardBackward(ids_);
  const float loss2 = engine().forwardBackward(ids_);
  EXPECT_EQ(loss1, loss2); // the weights did not move yet
  // The gradient norm, from forward_loss_grad's gradients on the host.
  Executable &grads = engine().executable("forward_loss_grad");
  NamedTensors g = grads.run(grads.withDefaults({{"input_ids", ids_}}));
  double squares = 0;
  for (auto &[name, t] : g)
    if (name.rfind("grad.", 0) == 0)
      for (float v : t.toVector<float>())
        squares += double(v) * v;
  StepConfig config;
  config.beta2 = 0.95f;
  config.maxGradNorm = 1e6f;
  StepResult r = engine().step(config);
  EXPECT_EQ(r.microBatches, 2);
  EXPECT_NEAR(r.gradNorm, std::sqrt(squares), 1e-5 * std::sqrt(squares));
  const std::vector<float> accumulated = logits(ids_);

  auto bundle = std::make_shared<const BundleDesc>(
      readBundle(HYBRID_TEST_GPT2_TRAIN_BUNDLE));
  Engine other = Engine::create(bundle, device());
  other.loadWeights(kFixture, {"lm_head.weight"});
  engine_ = std::make_unique<Engine>(std::move(other));
  step(); // train_step with the same hyperparameters
  const std::vector<float> direct = logits(ids_);
  ASSERT_EQ(accumulated.size(), direct.size());
  double worst = 0;
  for (size_t i = 0; i < direct.size(); ++i)
    worst = std::max(worst, std::fabs(double(accumulated[i]) - direct[i]));
  EXPECT_LE(worst, 1e-6);
}

TEST_P(HybridEngineOnDevice, ClippingChangesTheSecondStep) {
  // AdamW's first step is +-lr per element whatever the scale of the
  // gradient (m / sqrt(v) is its sign), so clipping shows from the second
  // step on, through the moments.
  auto twoSteps = [&](Engine &e, float maxNorm) {
    StepConfig config;
    config.maxGradNorm = maxNorm;
    for (int k = 0; k < 2; ++k) {
      e.forwardBackward(ids_);
      EXPECT_GT(e.step(config).gradNorm, 0.0f);
    }
    return e
        .forward(e.executable("forward").withDefaults({{"input_ids", ids_}}))
        .at("logits")
        .toVector<float>();
  };
  auto bundle = std::make_shared<const BundleDesc>(
      readBundle(HYBRID_TEST_GPT2_TRAIN_BUNDLE));
  Engine clipped = Engine::create(bundle, device());
  clipped.loadWeights(kFixture, {"lm_head.weight"});
  const std::vector<float> a = twoSteps(engine(), 0.0f); // 0: no clipping
  const std::vector<float> b = twoSteps(clipped, 1e-3f);
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
  EXPECT_GT(diff, 1e-5) << "clipping changed nothing";
}

TEST_P(HybridEngineOnDevice, EvalReportsThePhaseAndSwitchesMoveNothing) {
  std::vector<std::string> lines;
  engine().setLog([&](const std::string &l) { lines.push_back(l); });
  GenerateConfig greedy;
  engine().eval(); // the first: nothing to report yet
  EXPECT_FALSE(engine().training());
  engine().generate(prompt_, nullptr, greedy);
  engine().train();
  EXPECT_TRUE(engine().training());
  engine().forwardBackward(ids_);
  engine().step(StepConfig());
  // The switches themselves allocate, copy and fill nothing.
  const MemoryStats before = device()->memoryStats();
  engine().eval();
  engine().train();
  engine().eval();
  const MemoryStats after = device()->memoryStats();
  EXPECT_EQ(after.allocations, before.allocations);
  EXPECT_EQ(after.bytesAllocated, before.bytesAllocated);
  EXPECT_EQ(after.bytesCopied, before.bytesCopied);
  ASSERT_EQ(lines.size(), 2u);
  const std::string &line = lines[0];
  for (const char *part :
       {"|E2E latency=", "|Gather latency=0.00s (0.00%) |Generate time=",
        "|Training time=", "|Others=", "|CurSamplesPerSec=",
        "|AvgSamplesPerSec=", "|Generated tokens/s="})
    EXPECT_NE(line.find(part), std::string::npos) << part << " in " << line;
  // The first phase generated 2 samples of 16 tokens: rates above zero;
  // the second generated nothing.
  auto rate = [](const std::string &l, const char *key) {
    size_t at = l.find(key);
    return at == std::string::npos ? -1.0
                                   : std::atof(l.c_str() + at + strlen(key));
  };
  EXPECT_GT(rate(line, "|CurSamplesPerSec="), 0.0) << line;
  EXPECT_GT(rate(line, "|Generated tokens/s="), 0.0) << line;
  EXPECT_EQ(rate(lines[1], "|CurSamplesPerSec="), 0.0) << lines[1];
}

TEST_P(HybridEngineOnDevice, ATrainingStepLeavesGenerationsGraphsInPlace) {
  // step() releases the gradient accumulators, which generation does not
  // use: its executables keep their addresses, so their graphs serve on
  // (on a device without graphs nothing is captured).
  GenerateConfig greedy;
  const GenerateResult first = engine().generate(prompt_, nullptr, greedy);
  engine().generate(prompt_, nullptr, greedy); // (the prompt's is captured)
  Executable &prefill = engine().executable("prefill");
  Executable &decode = engine().executable("decode");
  const size_t prefillCaptures = prefill.graphCaptures(),
               decodeCaptures = decode.graphCaptures();
  const bool graphs = device()->supportsGraphs();
  EXPECT_EQ(decodeCaptures, graphs ? 1u : 0u);
  EXPECT_EQ(prefillCaptures, graphs ? 1u : 0u);
  engine().forwardBackward(ids_);
  engine().step(StepConfig());
  const GenerateResult after = engine().generate(prompt_, nullptr, greedy);
  EXPECT_EQ(decode.graphCaptures(), decodeCaptures);
  EXPECT_EQ(prefill.graphCaptures(), prefillCaptures);
  // The weights changed: the graphs read them anew.
  EXPECT_NE(after.logprobs.toVector<float>(), first.logprobs.toVector<float>());
}

TEST_P(HybridEngineOnDevice, LogprobsAverageToMinusTheLoss) {
  HostTensor lp = engine().logprobs(ids_);
  ASSERT_EQ(lp.shape(), (Shape{ids_.shape()[0], ids_.shape()[1] - 1}));
  SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
  const float loss =
      ref.toHost(*ref.find("loss"), DType::F32).toVector<float>()[0];
  double sum = 0;
  for (float v : lp.toVector<float>())
    sum += v;
  EXPECT_NEAR(-sum / static_cast<double>(lp.numel()), loss, 1e-5 * loss);
}

TEST_P(HybridEngineOnDevice, PaddingNeverCountsInTheLoss) {
  // Row 0 left-padded by 5: the loss is the mean of -logprobs over the
  // positions whose next token is not padding (the bundle's @logprobs),
  // and the default labels are HF's input_ids.masked_fill(mask == 0, -100).
  const int64_t rows = ids_.shape()[0], seq = ids_.shape()[1], pad = 5;
  std::vector<int64_t> mask(static_cast<size_t>(rows * seq), 1);
  std::vector<int64_t> labels = ids_.toVector<int64_t>();
  for (int64_t t = 0; t < pad; ++t) {
    mask[static_cast<size_t>(t)] = 0;
    labels[static_cast<size_t>(t)] = -100;
  }
  const HostTensor maskTensor =
      HostTensor::fromVector<int64_t>({rows, seq}, mask);
  const HostTensor labelsTensor =
      HostTensor::fromVector<int64_t>({rows, seq}, labels);
  const std::vector<float> lp =
      engine().logprobs(ids_, &maskTensor).toVector<float>();
  double sum = 0;
  int64_t counted = 0;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t t = 0; t + 1 < seq; ++t)
      if (mask[static_cast<size_t>(b * seq + t + 1)]) {
        sum -= lp[static_cast<size_t>(b * (seq - 1) + t)];
        ++counted;
      }
  // Position t scores token t + 1: the padding at 1..pad-1 is not scored.
  ASSERT_EQ(counted, rows * (seq - 1) - (pad - 1));
  const float byDefault = engine().forwardBackward(ids_, &maskTensor);
  EXPECT_NEAR(byDefault, sum / counted, 1e-6 * std::abs(sum / counted));
  const auto defaultGrads = accumulators();
  engine().step(StepConfig()); // zeroes the accumulators
  auto bundle = std::make_shared<const BundleDesc>(
      readBundle(HYBRID_TEST_GPT2_TRAIN_BUNDLE));
  Engine other = Engine::create(bundle, device());
  other.loadWeights(kFixture, {"lm_head.weight"});
  engine_ = std::make_unique<Engine>(std::move(other));
  EXPECT_EQ(engine().forwardBackward(ids_, &maskTensor, &labelsTensor),
            byDefault);
  EXPECT_EQ(accumulators(), defaultGrads);
}

TEST_P(HybridEngineOnDevice, LabelsOfMinus100AreNotScored) {
  // The prompt's labels -100 (training on the answer only): the mean over
  // the answer's positions alone.
  const int64_t rows = ids_.shape()[0], seq = ids_.shape()[1], prompt = 6;
  std::vector<int64_t> labels = ids_.toVector<int64_t>();
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t t = 0; t < prompt; ++t)
      labels[static_cast<size_t>(b * seq + t)] = -100;
  const HostTensor answers =
      HostTensor::fromVector<int64_t>({rows, seq}, labels);
  const std::vector<float> lp = engine().logprobs(ids_).toVector<float>();
  double sum = 0;
  for (int64_t b = 0; b < rows; ++b)
    for (int64_t t = prompt - 1; t + 1 < seq; ++t)
      sum -= lp[static_cast<size_t>(b * (seq - 1) + t)];
  const double mean = sum / static_cast<double>(rows * (seq - prompt));
  const float loss = engine().forwardBackward(ids_, nullptr, &answers);
  EXPECT_NEAR(loss, mean, 1e-6 * mean);
  EXPECT_NE(loss, engine().forwardBackward(ids_));
}

TEST_P(HybridEngineOnDevice, NoCountedLabelIsALossOfZeroAndZeroGradients) {
  // HF's mean over no label is NaN; ours is 0 with zero gradients.
  const HostTensor none = HostTensor::fromVector<int64_t>(
      ids_.shape(),
      std::vector<int64_t>(static_cast<size_t>(ids_.numel()), -100));
  const float loss = engine().forwardBackward(ids_, nullptr, &none);
  EXPECT_EQ(loss, 0.0f);
  EXPECT_FALSE(std::signbit(loss));
  const auto grads = accumulators();
  ASSERT_FALSE(grads.empty());
  for (auto &[name, g] : grads)
    for (float v : g)
      ASSERT_EQ(v, 0.0f) << name;
}

TEST_P(HybridEngineOnDevice, BackwardOfTheCausalLmCotangentIsForwardBackward) {
  // The causal-LM loss's gradient w.r.t. our logits, on the host.
  const std::vector<float> g = causalLmGradLogits(
      logits(ids_), ids_.toVector<int64_t>(), ids_.shape()[0], ids_.shape()[1]);
  engine().backward(ids_, logitsShaped(g));
  auto fromBackward = accumulators();
  engine().step(StepConfig()); // zeroes the accumulators
  auto bundle = std::make_shared<const BundleDesc>(
      readBundle(HYBRID_TEST_GPT2_TRAIN_BUNDLE));
  Engine other = Engine::create(bundle, device());
  other.loadWeights(kFixture, {"lm_head.weight"});
  engine_ = std::make_unique<Engine>(std::move(other));
  engine().forwardBackward(ids_);
  auto fromLoss = accumulators();
  ASSERT_EQ(fromBackward.size(), fromLoss.size());
  ASSERT_FALSE(fromLoss.empty());
  for (auto &[name, want] : fromLoss) {
    const std::vector<float> &got = fromBackward.at(name);
    ASSERT_EQ(got.size(), want.size()) << name;
    double err = 0, norm = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
      norm += double(want[i]) * want[i];
    }
    EXPECT_LE(std::sqrt(err), 1e-4 * std::sqrt(norm) + 1e-9) << name;
  }
}

TEST_P(HybridEngineOnDevice, BackwardAccumulates) {
  engine().forwardBackward(ids_);
  const auto before = accumulators();
  ASSERT_FALSE(before.empty());
  // A zero cotangent adds nothing: the accumulators stay bit for bit.
  const size_t n = logits(ids_).size();
  engine().backward(ids_, logitsShaped(std::vector<float>(n, 0.0f)));
  EXPECT_EQ(accumulators(), before);
  // Two calls with the same cotangent add its gradients (@forward_vjp's,
  // computed on the host side of the engine) twice.
  std::vector<float> g(n);
  for (size_t i = 0; i < n; ++i)
    g[i] = 1e-3f * static_cast<float>(static_cast<int64_t>(i % 7) - 3);
  const HostTensor cotangent = logitsShaped(g);
  Executable &vjp = engine().executable("forward_vjp");
  NamedTensors once = vjp.run(
      vjp.withDefaults({{"input_ids", ids_}, {"grad_logits", cotangent}}));
  engine().backward(ids_, cotangent);
  engine().backward(ids_, cotangent);
  const auto after = accumulators();
  ASSERT_EQ(after.size(), before.size());
  for (auto &[name, acc] : after) {
    const std::vector<float> grad =
        once.at("grad." + name.substr(std::string("opt.grad.").size()))
            .toVector<float>();
    const std::vector<float> &start = before.at(name);
    ASSERT_EQ(grad.size(), acc.size()) << name;
    double err = 0, norm = 0;
    for (size_t i = 0; i < acc.size(); ++i) {
      const double want = double(start[i]) + 2.0 * grad[i];
      err += (acc[i] - want) * (acc[i] - want);
      norm += want * want;
    }
    EXPECT_LE(std::sqrt(err), 1e-6 * std::sqrt(norm) + 1e-12) << name;
  }
  // Each backward call is a micro-batch of the step's mean.
  EXPECT_EQ(engine().step(StepConfig()).microBatches, 4);
  EXPECT_TRUE(accumulators().empty());
}

TEST_P(HybridEngineOnDevice, BackwardErrors) {
  const size_t n = logits(ids_).size();
  const int64_t vocab =
      static_cast<int64_t>(n) / (ids_.shape()[0] * ids_.shape()[1]);
  const std::string want = "[" + std::to_string(ids_.shape()[0]) + "," +
                           std::to_string(ids_.shape()[1]) + "," +
                           std::to_string(vocab) + "]";
  HostTensor narrow = HostTensor::fromVector<float>(
      {ids_.shape()[0], ids_.shape()[1], vocab - 1},
      std::vector<float>(n - static_cast<size_t>(numElements(ids_.shape())),
                         0.0f));
  expectError([&] { engine().backward(ids_, narrow); },
              {"backward: grad_logits must be f32 " + want +
               " (the logits of input_ids [2,16]), got f32 [2,16,511]"});
  HostTensor integers = HostTensor::fromVector<int64_t>(
      {ids_.shape()[0], ids_.shape()[1], vocab}, std::vector<int64_t>(n, 0));
  expectError([&] { engine().backward(ids_, integers); },
              {"backward: grad_logits must be f32 " + want, "got i64 " + want});
  EXPECT_TRUE(accumulators().empty()); // nothing ran
  auto plain =
      std::make_shared<const BundleDesc>(readBundle(HYBRID_TEST_GPT2_BUNDLE));
  Engine inference = Engine::create(plain, device());
  inference.loadWeights(kFixture, {"lm_head.weight"});
  expectError(
      [&] { inference.backward(ids_, logitsShaped(std::vector<float>(n))); },
      {"has no backward executable (compile it with hybridc --train)"});
}

TEST_P(HybridEngineOnDevice, StepErrors) {
  expectError([&] { engine().step(StepConfig()); },
              {"step: no gradients accumulated (call forwardBackward or "
               "backward first)"});
  engine().forwardBackward(ids_);
  StepConfig bad;
  bad.beta1 = 1.0f;
  expectError([&] { engine().step(bad); }, {"betas in [0, 1)"});
  // A bundle without training executables says how to get them.
  auto plain =
      std::make_shared<const BundleDesc>(readBundle(HYBRID_TEST_GPT2_BUNDLE));
  Engine inference = Engine::create(plain, device());
  inference.loadWeights(kFixture, {"lm_head.weight"});
  expectError([&] { inference.forwardBackward(ids_); },
              {"has no training executables (compile it with hybridc "
               "--train)"});
}

} // namespace
