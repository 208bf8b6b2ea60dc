// The optimizer executables' precision plan and update rules on every
// device backend, with the gpt2 fixture compiled at build time for fp16,
// bf16 and SGD training: an fp16 step whose gradients overflow is skipped
// (weights, masters, moments and step count bit for bit as they were) and
// the scale goes down as DeepSpeed's DynamicLossScaler takes it until a
// step proceeds; bf16 weights train through f32 masters exactly as
// torch.optim.AdamW on those masters; SGD follows torch.optim.SGD.
// References are computed here, in double, from the gradients
// @forward_loss_grad gives at each step's weights.
#include "DeviceTest.h"
#include "TestSupport.h"

#include "hybrid/Bundle.h"
#include "hybrid/Engine.h"
#include "hybrid/Float16.h"
#include "hybrid/SafeTensors.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>

using namespace hybrid;
using namespace hybrid::test;

namespace {

const std::string kFixture = std::string(HYBRIDC_FIXTURES_DIR) + "/gpt2";

/// Every parameter's values (as floats) or state's, by name.
using Values = std::map<std::string, std::vector<double>>;

/// AdamW's and SGD's per-parameter state on the host.
struct HostState {
  Values master, m, v, buffer;
  int64_t step = 0;
};

class OptimizerOnDevice : public DeviceTest {
protected:
  /// An engine of `path` with the fixture's weights, or null (the test is
  /// then skipped) when the build made no such bundle.
  std::unique_ptr<Engine> open(const std::string &path) {
    if (!std::ifstream(path).good())
      return nullptr;
    auto engine = std::make_unique<Engine>(Engine::create(
        std::make_shared<const BundleDesc>(readBundle(path)), device()));
    engine->loadWeights(kFixture, {"lm_head.weight"});
    SafeTensorsFile ref = SafeTensorsFile::open(kFixture + "/ref.safetensors");
    ids_ = ref.toHost(*ref.find("input_ids"), DType::I64);
    return engine;
  }

  /// The raw bytes of every parameter.
  std::vector<uint8_t> weightBytes(Engine &e) {
    std::vector<uint8_t> all;
    for (size_t i = 0; i < e.weights().size(); ++i) {
      std::vector<uint8_t> b =
          readDevice(*device(), e.weights().data(i), e.weights().bytes(i));
      all.insert(all.end(), b.begin(), b.end());
    }
    return all;
  }

  Values weights(Engine &e) {
    Values out;
    for (size_t i = 0; i < e.weights().size(); ++i) {
      std::vector<uint8_t> b =
          readDevice(*device(), e.weights().data(i), e.weights().bytes(i));
      HostTensor t = HostTensor::borrow(e.weights().dtype(i),
                                        e.weights().shape(i), b.data());
      std::vector<float> f = t.toFloats();
      out[e.weights().name(i)] = std::vector<double>(f.begin(), f.end());
    }
    return out;
  }

  std::vector<float> state(Engine &e, const std::string &name) {
    DeviceTensor t = e.state(name);
    return readDeviceAs<float>(*device(), t.data,
                               static_cast<size_t>(numElements(t.shape)));
  }

  /// Every allocated optimizer state but the accumulators, as bytes.
  std::map<std::string, std::vector<float>> optimizerStates(Engine &e) {
    std::map<std::string, std::vector<float>> out;
    for (size_t i = 0; i < e.states().size(); ++i) {
      const std::string &name = e.states().desc(i).name;
      if (name.rfind("opt.", 0) == 0 && name.rfind("opt.grad.", 0) != 0 &&
          e.states().allocated(name))
        out[name] = state(e, name);
    }
    return out;
  }

  /// @forward_loss_grad's gradients at the current weights, as floats,
  /// divided by `scale` (the loss scale they carry).
  Values gradients(Engine &e, double scale = 1) {
    Executable &x = e.executable("forward_loss_grad");
    NamedTensors out = x.run(x.withDefaults({{"input_ids", ids_}}));
    Values g;
    for (auto &[name, t] : out)
      if (name.rfind("grad.", 0) == 0) {
        std::vector<double> &v = g[name.substr(5)];
        for (float f : t.toFloats())
          v.push_back(f / scale);
      }
    return g;
  }

  HostTensor ids_;
};
HYBRID_TEST_ON_EVERY_DEVICE(OptimizerOnDevice);

/// torch.optim.AdamW's step on the host state (in double).
void adamW(HostState &s, const Values &grads, const StepConfig &c) {
  ++s.step;
  const double bc1 = 1 - std::pow(double(c.beta1), double(s.step));
  const double bc2 = 1 - std::pow(double(c.beta2), double(s.step));
  for (auto &[name, p] : s.master) {
    const std::vector<double> &g = grads.at(name);
    std::vector<double> &m = s.m[name], &v = s.v[name];
    m.resize(p.size());
    v.resize(p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - double(c.lr) * c.weightDecay;
      m[i] = c.beta1 * m[i] + (1 - double(c.beta1)) * g[i];
      v[i] = c.beta2 * v[i] + (1 - double(c.beta2)) * g[i] * g[i];
      p[i] -= c.lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + c.eps);
    }
  }
}

/// The largest |a - b| over every element of `b`'s tensors.
double worstDifference(const std::map<std::string, std::vector<float>> &a,
                       const Values &b, const std::string &prefix) {
  double worst = 0;
  for (auto &[name, values] : b) {
    const std::vector<float> &got = a.at(prefix + name);
    EXPECT_EQ(got.size(), values.size()) << name;
    for (size_t i = 0; i < values.size() && i < got.size(); ++i)
      worst = std::max(worst, std::fabs(got[i] - values[i]));
  }
  return worst;
}

TEST_P(OptimizerOnDevice, Fp16OverflowSkipsTheStepUntilALowerScaleProceeds) {
  std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_FP16_BUNDLE);
  if (!engine)
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_FP16_BUNDLE << ": skipped";
  // 2^40: the loss's gradient times the scale is far above half's 65504
  // (the backward pass runs in f16, as in torch), so the first steps
  // overflow; with hysteresis 2 the first overflow keeps the scale.
  StepConfig config;
  config.beta2 = 0.95f;
  config.lossScale.initialScale = std::ldexp(1.0f, 40);
  config.lossScale.hysteresis = 2;
  engine->initOptimizer(config.lossScale);
  double scale = config.lossScale.initialScale;
  int64_t hysteresis = 2, overflows = 0;
  HostState host;
  for (auto &[name, w] : weights(*engine))
    host.master[name] = w;
  for (int k = 0; k < 48; ++k) {
    const std::vector<uint8_t> before = weightBytes(*engine);
    const auto statesBefore = optimizerStates(*engine);
    const Values grads = gradients(*engine, scale);
    engine->forwardBackward(ids_);
    const StepResult r = engine->step(config);
    ASSERT_EQ(r.lossScale, scale) << "step " << k;
    if (r.overflow) {
      ++overflows;
      EXPECT_EQ(weightBytes(*engine), before) << "skipped step " << k;
      for (auto &[name, values] : statesBefore)
        if (name.rfind("opt.loss_scale", 0) != 0)
          EXPECT_EQ(state(*engine, name), values) << name << ", step " << k;
      if (hysteresis > 1) {
        EXPECT_EQ(r.nextLossScale, scale) << "step " << k;
        EXPECT_EQ(r.hysteresisLeft, --hysteresis) << "step " << k;
      } else {
        EXPECT_EQ(r.nextLossScale, scale / 2) << "step " << k;
        EXPECT_EQ(r.hysteresisLeft, 1) << "step " << k;
        scale /= 2;
      }
      EXPECT_EQ(state(*engine, "opt.loss_scale")[0], r.nextLossScale);
      continue;
    }
    // The first step that proceeds: unscaled, it is AdamW on the f32
    // masters (started from the f16 weights) with the f16 gradients / the
    // scale; the window of good steps is not reached, the scale stays.
    EXPECT_EQ(r.nextLossScale, scale);
    EXPECT_EQ(state(*engine, "opt.step")[0], 1.0f);
    EXPECT_NE(weightBytes(*engine), before);
    adamW(host, grads, config);
    // f32 rounding of ~10 operations on |w| < 2 against double: < 1e-6.
    EXPECT_LE(
        worstDifference(optimizerStates(*engine), host.master, "opt.master."),
        1e-6);
    break;
  }
  EXPECT_GE(overflows, 2) << "2^40 should overflow, once absorbed by the "
                             "hysteresis, then halved";
  EXPECT_LT(scale, config.lossScale.initialScale);
  EXPECT_EQ(state(*engine, "opt.step")[0], 1.0f) << "no step proceeded";
}

TEST_P(OptimizerOnDevice, Fp16BackwardCarriesTheLossScale) {
  // @backward's gradients go into the accumulators times the loss scale,
  // as @forward_backward's do, so that @step unscales both alike: fed the
  // causal-LM loss's cotangent, they are @forward_loss_grad's.
  std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_FP16_BUNDLE);
  if (!engine)
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_FP16_BUNDLE << ": skipped";
  LossScaleConfig scaling;
  scaling.initialScale = 1024;
  engine->initOptimizer(scaling);
  Executable &forward = engine->executable("forward");
  const std::vector<float> logits =
      forward.run(forward.withDefaults({{"input_ids", ids_}}))
          .at("logits")
          .toFloats();
  const int64_t batch = ids_.shape()[0], seq = ids_.shape()[1];
  const int64_t vocab = static_cast<int64_t>(logits.size()) / (batch * seq);
  engine->backward(
      ids_,
      HostTensor::fromVector<float>(
          {batch, seq, vocab},
          causalLmGradLogits(logits, ids_.toVector<int64_t>(), batch, seq)));
  const Values want = gradients(*engine, scaling.initialScale);
  double worst = 0;
  for (auto &[name, g] : want) {
    const std::vector<float> acc = state(*engine, "opt.grad." + name);
    ASSERT_EQ(acc.size(), g.size()) << name;
    double err = 0, norm = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      const double a = acc[i] / scaling.initialScale;
      err += (a - g[i]) * (a - g[i]);
      norm += g[i] * g[i];
    }
    worst = std::max(worst, std::sqrt(err / norm));
  }
  // Two f16 backward passes from cotangents rounded differently: measured
  // 1.0e-3 (without the scale it would be off by 1024 times).
  std::printf("fp16 backward against forward_loss_grad: worst relative L2 "
              "%.3g\n",
              worst);
  EXPECT_LT(worst, 1e-2);
}

TEST_P(OptimizerOnDevice, Fp16StaticScaleSkipsWithoutChangingTheScale) {
  std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_FP16_BUNDLE);
  if (!engine)
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_FP16_BUNDLE << ": skipped";
  StepConfig config;
  config.lossScale.dynamic = false;
  config.lossScale.initialScale = std::ldexp(1.0f, 40);
  engine->initOptimizer(config.lossScale);
  const std::vector<uint8_t> before = weightBytes(*engine);
  engine->forwardBackward(ids_);
  StepResult r = engine->step(config);
  EXPECT_TRUE(r.overflow);
  EXPECT_EQ(r.nextLossScale, r.lossScale);
  EXPECT_EQ(weightBytes(*engine), before);
}

TEST_P(OptimizerOnDevice, Fp16OverflowAtTheMinimumScaleStopsTheRun) {
  std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_FP16_BUNDLE);
  if (!engine)
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_FP16_BUNDLE << ": skipped";
  StepConfig config;
  config.lossScale.initialScale = std::ldexp(1.0f, 40);
  config.lossScale.minScale = std::ldexp(1.0f, 40);
  config.lossScale.hysteresis = 1;
  engine->initOptimizer(config.lossScale);
  engine->forwardBackward(ids_);
  expectError([&] { engine->step(config); },
              {"step: the gradients overflow at the minimum loss scale",
               "the step was skipped"});
}

TEST_P(OptimizerOnDevice, Bf16WeightsTrainThroughF32MastersAsTorchAdamW) {
  std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_BF16_BUNDLE);
  if (!engine)
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_BF16_BUNDLE << ": skipped";
  engine->initOptimizer();
  HostState host;
  host.master = weights(*engine);
  // The masters start as the working weights, exactly.
  EXPECT_EQ(
      worstDifference(optimizerStates(*engine), host.master, "opt.master."),
      0.0);
  StepConfig config;
  config.beta2 = 0.95f;
  for (int k = 0; k < 3; ++k) {
    const Values grads = gradients(*engine);
    engine->forwardBackward(ids_);
    engine->step(config);
    adamW(host, grads, config);
    // torch.optim.AdamW on the f32 masters, in double here: f32 rounding of
    // ~10 operations per step on |w| < 2 stays below 1e-6 (a wrong rule
    // is off by lr-sized amounts, 1e-3).
    const auto states = optimizerStates(*engine);
    EXPECT_LE(worstDifference(states, host.master, "opt.master."), 1e-6)
        << "step " << k;
    EXPECT_LE(worstDifference(states, host.m, "opt.exp_avg."), 1e-6)
        << "step " << k;
    // The working weights are the masters rounded to bf16.
    for (size_t i = 0; i < engine->weights().size(); ++i) {
      const std::string &name = engine->weights().name(i);
      const std::vector<float> master = states.at("opt.master." + name);
      std::vector<uint16_t> working = readDeviceAs<uint16_t>(
          *device(), engine->weights().data(i), master.size());
      for (size_t j = 0; j < master.size(); ++j)
        ASSERT_EQ(working[j], floatToBf16(master[j]))
            << name << "[" << j << "], step " << k;
    }
  }
  // An update far below bf16's spacing (2^-8 relative) moves the masters
  // of the weights that have a gradient, and almost none of the working
  // weights: that is what the masters are for.
  const std::vector<uint8_t> before = weightBytes(*engine);
  const auto statesBefore = optimizerStates(*engine);
  config.lr = 1e-7f;
  engine->forwardBackward(ids_);
  engine->step(config);
  const auto statesAfter = optimizerStates(*engine);
  size_t moved = 0, trained = 0;
  for (auto &[name, m] : statesBefore)
    if (name.rfind("opt.exp_avg.", 0) == 0) {
      const std::string master = "opt.master." + name.substr(12);
      for (size_t j = 0; j < m.size(); ++j)
        if (m[j] != 0) {
          ++trained;
          moved += statesAfter.at(master)[j] != statesBefore.at(master)[j];
        }
    }
  EXPECT_GT(moved, trained * 9 / 10) << moved << " of " << trained;
  const std::vector<uint8_t> after = weightBytes(*engine);
  size_t changed = 0;
  for (size_t j = 0; j < after.size(); j += 2)
    changed += after[j] != before[j] || after[j + 1] != before[j + 1];
  EXPECT_LT(changed, trained / 100) << changed << " of " << trained;
}

TEST_P(OptimizerOnDevice, SgdFollowsTorchSgd) {
  struct Case {
    float momentum, dampening, weightDecay;
    bool nesterov;
  };
  for (const Case &c :
       {Case{0.9f, 0.1f, 0.01f, false}, Case{0.9f, 0.0f, 0.01f, true},
        Case{0.0f, 0.5f, 0.0f, false}}) {
    std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_SGD_BUNDLE);
    if (!engine)
      GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_SGD_BUNDLE << ": skipped";
    StepConfig config;
    config.optimizer = Optimizer::Sgd;
    config.lr = 0.01f;
    config.momentum = c.momentum;
    config.dampening = c.dampening;
    config.weightDecay = c.weightDecay;
    config.nesterov = c.nesterov;
    Values buffers;
    for (int k = 0; k < 3; ++k) {
      // torch.optim.SGD from the engine's weights: d = g + wd p; the buffer
      // is d on the first step, then momentum b + (1 - dampening) d;
      // p -= lr (nesterov ? d + momentum b : b); no momentum: p -= lr d.
      Values expected = weights(*engine);
      const Values grads = gradients(*engine);
      for (auto &[name, p] : expected) {
        std::vector<double> &b = buffers[name];
        b.resize(p.size());
        for (size_t i = 0; i < p.size(); ++i) {
          const double d = grads.at(name)[i] + double(c.weightDecay) * p[i];
          b[i] = k == 0 || c.momentum == 0
                     ? d
                     : c.momentum * b[i] + (1 - double(c.dampening)) * d;
          const double direction = c.momentum == 0 ? d
                                   : c.nesterov    ? d + c.momentum * b[i]
                                                   : b[i];
          p[i] -= config.lr * direction;
        }
      }
      engine->forwardBackward(ids_);
      engine->step(config);
      const std::string which = "momentum " + std::to_string(c.momentum) +
                                (c.nesterov ? ", nesterov" : "") + ", step " +
                                std::to_string(k);
      // One rounding of p - lr * direction (|p| < 2) and of the buffer.
      double worst = 0;
      for (auto &[name, w] : weights(*engine))
        for (size_t i = 0; i < w.size(); ++i)
          worst = std::max(worst, std::fabs(w[i] - expected[name][i]));
      EXPECT_LE(worst, 1e-6) << which;
      EXPECT_LE(worstDifference(optimizerStates(*engine), buffers,
                                "opt.momentum_buffer."),
                1e-5)
          << which;
    }
  }
}

TEST_P(OptimizerOnDevice, StepNamesTheOptimizerTheBundleWasCompiledFor) {
  std::unique_ptr<Engine> engine = open(HYBRID_TEST_GPT2_SGD_BUNDLE);
  if (!engine)
    GTEST_SKIP() << "no " << HYBRID_TEST_GPT2_SGD_BUNDLE << ": skipped";
  engine->forwardBackward(ids_);
  expectError([&] { engine->step(StepConfig()); },
              {"step: the bundle was compiled for SGD, not AdamW"});
  StepConfig nesterov;
  nesterov.optimizer = Optimizer::Sgd;
  nesterov.nesterov = true;
  expectError([&] { engine->step(nesterov); },
              {"step: Nesterov momentum needs a momentum > 0 and zero "
               "dampening"});
}

} // namespace
