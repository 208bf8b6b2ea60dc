// Data parallelism on the CPU: executables partitioned by hybridc
// --zero-stage S --world-size 3 run on three ranks that are threads of this
// process, each with its own device, weight store, state store and
// executables, their collectives meeting in an in-process communicator.
// Batches of three sequences, one per rank, through @forward_backward and
// @step or through @train_step, must give what one rank gives on the whole
// batches: the same losses, gradients, gradient norm, optimizer state
// (moments, momentum, f32 masters) and weights, gathered from the shards
// where they are sharded; so must @backward (a loss's gradient w.r.t. the
// logits, each rank's row of it). For f32 AdamW, bf16 weights (f32 masters) and
// SGD (weight decay added to the gradient). The gpt2 fixture's sizes are no
// multiple of 3, so every shard is padded.
#include "TestSupport.h"

#include "hybrid/Bundle.h"
#include "hybrid/CpuDevice.h"
#include "hybrid/Engine.h"
#include "hybrid/Float16.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <random>
#include <thread>
#include <tuple>

using namespace hybrid;
using namespace hybrid::test;

namespace {

constexpr int kRanks = 3;
constexpr int64_t kSeq = 12;

float toFloat(const uint8_t *p, DType dtype) {
  uint16_t h;
  switch (dtype) {
  case DType::BF16:
    std::memcpy(&h, p, 2);
    return bf16ToFloat(h);
  case DType::F16:
    std::memcpy(&h, p, 2);
    return f16ToFloat(h);
  default: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  }
}

void fromFloat(float v, DType dtype, uint8_t *p) {
  uint16_t h;
  switch (dtype) {
  case DType::BF16:
    h = floatToBf16(v);
    std::memcpy(p, &h, 2);
    return;
  case DType::F16:
    h = floatToF16(v);
    std::memcpy(p, &h, 2);
    return;
  default:
    std::memcpy(p, &v, 4);
  }
}

/// Ranks that are threads of one process. Each collective waits until
/// every rank has called it; then each rank computes its own result from
/// all the inputs (sums in f32, rounded once), and waits again until every
/// rank has read them before the result is written (so `out` may alias
/// `in`).
class ThreadGroup {
public:
  explicit ThreadGroup(int size) : inputs_(static_cast<size_t>(size)) {}

  int size() const { return static_cast<int>(inputs_.size()); }

  std::shared_ptr<CpuCommunicator> member(int rank) {
    return std::make_shared<Member>(*this, rank);
  }

  /// Releases every rank waiting in a collective: one of them failed.
  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    arrived_.notify_all();
  }

private:
  class Member : public CpuCommunicator {
  public:
    Member(ThreadGroup &group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_.size(); }
    void run(CollectiveKind kind, const void *in, size_t inBytes, void *out,
             size_t outBytes, DType dtype) override {
      group_.run(rank_, kind, static_cast<const uint8_t *>(in), inBytes,
                 static_cast<uint8_t *>(out), outBytes, dtype);
    }

  private:
    ThreadGroup &group_;
    int rank_;
  };

  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t generation = generation_;
    if (++waiting_ == size()) {
      waiting_ = 0;
      ++generation_;
      arrived_.notify_all();
    } else {
      arrived_.wait(lock,
                    [&] { return generation_ != generation || aborted_; });
    }
    if (aborted_)
      throw Error("another rank failed");
  }

  void run(int rank, CollectiveKind kind, const uint8_t *in, size_t inBytes,
           uint8_t *out, size_t outBytes, DType dtype) {
    size_t w = inputs_.size(), size = dtypeSize(dtype);
    if (kind == CollectiveKind::Shard) {
      // This rank's piece of what every rank holds: no other rank's data.
      std::memset(out, 0, outBytes);
      size_t first = static_cast<size_t>(rank) * outBytes;
      if (first < inBytes)
        std::memcpy(out, in + first, std::min(outBytes, inBytes - first));
      return;
    }
    size_t expected = kind == CollectiveKind::AllGather       ? inBytes * w
                      : kind == CollectiveKind::ReduceScatter ? inBytes / w
                                                              : inBytes;
    if (outBytes != expected ||
        (kind == CollectiveKind::ReduceScatter && inBytes % w))
      throw Error("collective " + std::string(collectiveKindName(kind)) + ": " +
                  std::to_string(inBytes) + " bytes in, " +
                  std::to_string(outBytes) + " out over " + std::to_string(w) +
                  " ranks");
    inputs_[static_cast<size_t>(rank)] = in;
    barrier();
    std::vector<uint8_t> result(outBytes);
    if (kind == CollectiveKind::AllGather) {
      for (size_t r = 0; r < w; ++r)
        std::memcpy(result.data() + r * inBytes, inputs_[r], inBytes);
    } else {
      size_t n = outBytes / size;
      size_t first = kind == CollectiveKind::ReduceScatter
                         ? static_cast<size_t>(rank) * n
                         : 0;
      for (size_t i = 0; i < n; ++i) {
        float sum = 0;
        for (size_t r = 0; r < w; ++r)
          sum += toFloat(inputs_[r] + (first + i) * size, dtype);
        fromFloat(sum, dtype, result.data() + i * size);
      }
    }
    barrier();
    std::memcpy(out, result.data(), outBytes);
  }

  std::vector<const uint8_t *> inputs_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  int waiting_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

std::vector<float> floats(const void *data, int64_t n, DType dtype) {
  std::vector<float> v(static_cast<size_t>(n));
  const auto *p = static_cast<const uint8_t *>(data);
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = toFloat(p + i * dtypeSize(dtype), dtype);
  return v;
}

/// One rank: a device whose collectives go through the group, the weights
/// (a shard of each parameter at stage 3), the states and the training
/// executables of `zero`.
struct Rank {
  Rank(const BundleDesc &zero, ThreadGroup &group, int rank,
       const WeightStore &whole) {
    auto cpu = std::make_shared<CpuDevice>();
    cpu->setCommunicator("data_parallel", group.member(rank));
    device = cpu;
    // A rank's weight store holds what its executables see: the shard of a
    // sharded parameter (that part of loading belongs to the multi-rank
    // runtime, which does not exist yet).
    BundleDesc mine = zero;
    for (ParamDesc &p : mine.params)
      if (p.shard) {
        p.shape = {p.shard->shardElements()};
        p.shard.reset();
      }
    bundle = std::make_shared<const BundleDesc>(std::move(mine));
    weights = std::make_unique<WeightStore>(bundle->params, device);
    weights->initRandom(0); // allocates; overwritten below
    for (size_t i = 0; i < weights->size(); ++i) {
      size_t j = *whole.find(weights->name(i));
      const ParamDesc &p = zero.params[i];
      auto *dst = static_cast<uint8_t *>(weights->mutableData(i));
      const auto *src = static_cast<const uint8_t *>(whole.data(j));
      if (!p.shard) {
        std::memcpy(dst, src, weights->bytes(i));
        continue;
      }
      size_t size = dtypeSize(p.dtype);
      auto n = static_cast<size_t>(numElements(p.shape));
      auto piece = static_cast<size_t>(p.shard->shardElements());
      size_t first = static_cast<size_t>(rank) * piece;
      std::memset(dst, 0, piece * size); // padding is zeros
      if (first < n)
        std::memcpy(dst, src + first * size, std::min(piece, n - first) * size);
    }
    states = std::make_unique<StateStore>(bundle->states, device);
    for (size_t i = 0; i < bundle->executables.size(); ++i)
      executables[bundle->executables[i].name] =
          std::make_unique<Executable>(bundle, i, device, *weights, *states);
  }

  Executable &operator[](const std::string &name) {
    return *executables.at(name);
  }

  /// Runs `name` on `given`, the inputs it takes among them, and defaults.
  NamedTensors run(const std::string &name, const NamedTensors &given) {
    Executable &e = (*this)[name];
    NamedTensors inputs;
    for (const std::string &n : e.inputNames())
      if (auto it = given.find(n); it != given.end())
        inputs[n] = it->second;
    return e.run(e.withDefaults(inputs));
  }

  std::shared_ptr<Device> device;
  std::shared_ptr<const BundleDesc> bundle;
  std::unique_ptr<WeightStore> weights;
  std::unique_ptr<StateStore> states;
  std::map<std::string, std::unique_ptr<Executable>> executables;
};

/// Row `row` of an i64 [rows, kSeq] tensor.
HostTensor rowOf(const HostTensor &ids, int64_t row) {
  std::vector<int64_t> all = ids.toVector<int64_t>();
  return HostTensor::fromVector<int64_t>(
      {1, kSeq}, std::vector<int64_t>(all.begin() + row * kSeq,
                                      all.begin() + (row + 1) * kSeq));
}

HostTensor scalar(float v) { return HostTensor::fromVector<float>({1}, {v}); }

/// The whole tensor of the pieces each rank holds.
std::vector<float> gathered(const std::vector<std::vector<float>> &pieces,
                            int64_t n) {
  std::vector<float> whole;
  for (const std::vector<float> &p : pieces)
    whole.insert(whole.end(), p.begin(), p.end());
  whole.resize(static_cast<size_t>(n));
  return whole;
}

/// max |a - b| over max |b| (and at least 1e-30).
double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

/// What a test variant trains: bundles and the step's settings.
struct Variant {
  const char *name;
  const char *oneRankBundle; ///< compiled without ZeRO
  const char *zeroPrefix;    ///< + stage + ".hyb": compiled for 3 ranks
  Optimizer optimizer;
  /// AdamW's eps: large, so that a gradient that is zero but for roundoff
  /// (or, in bf16, small beside its rounding) moves no weight far.
  float eps;
  /// Largest relative errors allowed: gradients (and the optimizer state
  /// made of them) and weights.
  double gradients, weights;
};

const Variant kVariants[] = {
    {"f32", HYBRID_TEST_GPT2_TRAIN_BUNDLE, "zero", Optimizer::AdamW, 1e-2f,
     1e-4, 5e-5},
    {"bf16", HYBRID_TEST_GPT2_BF16_BUNDLE, "zero-bf16-", Optimizer::AdamW, 1.0f,
     5e-2, 2e-2},
    {"sgd", HYBRID_TEST_GPT2_SGD_BUNDLE, "zero-sgd-", Optimizer::Sgd, 1e-2f,
     1e-4, 5e-5},
};

/// Three ranks of the gpt2 fixture compiled at the test's ZeRO stage for 3
/// ranks, and one rank (an engine) of it compiled without ZeRO, all with
/// the same random weights.
class ZeroOnThreads
    : public ::testing::TestWithParam<std::tuple<Variant, int>> {
protected:
  void SetUp() override {
    variant_ = std::get<0>(GetParam());
    stage_ = std::get<1>(GetParam());
    std::string path = std::string(HYBRID_TEST_GPT2_ZERO_DIR) + "/" +
                       variant_.zeroPrefix + std::to_string(stage_) + ".hyb";
    if (!fileExists(path) || !fileExists(variant_.oneRankBundle))
      GTEST_SKIP() << "no " << path
                   << " (built by hybridc from the gpt2 fixture when the "
                      "compiler and the fixtures are present): skipped";
    zero_ = readBundle(path);
    ASSERT_EQ(zero_.worldSize, kRanks);
    ASSERT_EQ(zero_.zeroStage, stage_);
    one_ = std::make_unique<Engine>(Engine::create(
        readBundle(variant_.oneRankBundle), std::make_shared<CpuDevice>()));
    one_->initRandom(5);
    one_->initOptimizer();
    for (int r = 0; r < kRanks; ++r)
      ranks_.push_back(
          std::make_unique<Rank>(zero_, group_, r, one_->weights()));
    config_.optimizer = variant_.optimizer;
    config_.lr = 1e-2f;
    config_.eps = variant_.eps;
    config_.momentum = 0.9f;
    onEveryRank([](Rank &rank, int) {
      if (rank.executables.count("init_optimizer"))
        rank.run("init_optimizer", {});
    });
  }

  /// i64 [kRanks, kSeq] token ids, one sequence per rank.
  HostTensor batch() {
    std::vector<int64_t> ids(kRanks * kSeq);
    for (int64_t &t : ids)
      t = static_cast<int64_t>(rng_() % 512);
    return HostTensor::fromVector<int64_t>({kRanks, kSeq}, ids);
  }

  /// The step's hyperparameters, as Engine::step passes them.
  NamedTensors hyperparameters(float gradScale) const {
    return {{"lr", scalar(config_.lr)},
            {"weight_decay", scalar(config_.weightDecay)},
            {"max_grad_norm", scalar(config_.maxGradNorm)},
            {"grad_scale", scalar(gradScale)},
            {"beta1", scalar(config_.beta1)},
            {"beta2", scalar(config_.beta2)},
            {"eps", scalar(config_.eps)},
            {"momentum", scalar(config_.momentum)},
            {"dampening", scalar(config_.dampening)},
            {"nesterov", scalar(config_.nesterov ? 1.0f : 0.0f)}};
  }

  /// Runs `fn(rank, r)` for every rank, each on a thread of its own.
  void onEveryRank(const std::function<void(Rank &, int)> &fn) {
    std::vector<std::exception_ptr> failures(kRanks);
    std::vector<std::thread> threads;
    for (int r = 0; r < kRanks; ++r)
      threads.emplace_back([&, r] {
        try {
          fn(*ranks_[static_cast<size_t>(r)], r);
        } catch (...) {
          failures[static_cast<size_t>(r)] = std::current_exception();
          group_.abort();
        }
      });
    for (std::thread &t : threads)
      t.join();
    for (std::exception_ptr &f : failures)
      if (f)
        std::rethrow_exception(f);
  }

  /// The optimizer state of each parameter (`opt.<kind>.<param>`: moments,
  /// momentum, masters) and the weights of the ranks, gathered where
  /// sharded, against the one rank's: the worst relative error of each.
  /// Unsharded weights must be the same on every rank, bit for bit.
  std::pair<double, double> errorsAgainstOneRank() {
    double state = 0, weights = 0;
    for (const StateDesc &s : zero_.states) {
      if (s.name.rfind("opt.", 0) != 0 || s.name.rfind("opt.grad.", 0) == 0 ||
          !one_->states().allocated(s.name))
        continue;
      DeviceTensor want = one_->state(s.name);
      int64_t n = numElements(want.shape);
      if (n == 1)
        continue; // the step count, the loss scale
      std::vector<std::vector<float>> pieces;
      for (const auto &rank : ranks_) {
        DeviceTensor t = rank->states->tensor(s.name);
        pieces.push_back(floats(t.data, numElements(t.shape), t.dtype));
      }
      EXPECT_EQ(s.shard.has_value(), stage_ >= 1) << s.name;
      std::vector<float> got = s.shard ? gathered(pieces, n) : pieces[0];
      state =
          std::max(state, relativeError(got, floats(want.data, n, want.dtype)));
    }
    for (size_t i = 0; i < zero_.params.size(); ++i) {
      const ParamDesc &p = zero_.params[i];
      int64_t n = numElements(p.shape);
      std::vector<std::vector<float>> pieces;
      for (const auto &rank : ranks_)
        pieces.push_back(floats(rank->weights->data(i),
                                numElements(rank->weights->shape(i)), p.dtype));
      EXPECT_EQ(p.shard.has_value(), stage_ == 3) << p.name;
      if (!p.shard)
        for (int r = 1; r < kRanks; ++r)
          EXPECT_EQ(pieces[static_cast<size_t>(r)], pieces[0])
              << p.name << ": rank " << r << " differs from rank 0";
      std::vector<float> got = p.shard ? gathered(pieces, n) : pieces[0];
      size_t j = *one_->weights().find(p.name);
      weights = std::max(
          weights,
          relativeError(got, floats(one_->weights().data(j), n, p.dtype)));
    }
    return {state, weights};
  }

  Variant variant_{};
  int stage_ = 0;
  BundleDesc zero_;
  std::unique_ptr<Engine> one_;
  ThreadGroup group_{kRanks};
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::mt19937 rng_{11};
  StepConfig config_;
};

// @forward_backward on two micro-batches, then @step with clipping (the
// global norm takes every rank's shard of the gradient).
TEST_P(ZeroOnThreads, AccumulateAndStepLikeOneRank) {
  std::vector<HostTensor> micro = {batch(), batch()};
  config_.maxGradNorm = 0.5f;
  std::vector<float> losses;
  for (const HostTensor &ids : micro)
    losses.push_back(one_->forwardBackward(ids));
  StepResult reference = one_->step(config_);

  std::vector<std::vector<float>> rankLosses(kRanks);
  std::vector<float> norms(kRanks);
  onEveryRank([&](Rank &rank, int r) {
    for (const HostTensor &ids : micro)
      rankLosses[static_cast<size_t>(r)].push_back(
          rank.run("forward_backward", {{"input_ids", rowOf(ids, r)}})
              .at("loss")
              .toVector<float>()[0]);
    norms[static_cast<size_t>(r)] = rank.run("step", hyperparameters(0.5f))
                                        .at("grad_norm")
                                        .toVector<float>()[0];
  });

  // Each rank's loss is its sequence's; the mean over ranks is the batch's.
  for (size_t m = 0; m < micro.size(); ++m) {
    float mean = 0;
    for (const std::vector<float> &l : rankLosses)
      mean += l[m] / kRanks;
    EXPECT_NEAR(mean, losses[m], 1e-5 * std::fabs(losses[m])) << "batch " << m;
  }
  for (float norm : norms)
    EXPECT_NEAR(norm, reference.gradNorm,
                variant_.gradients * reference.gradNorm);
  auto [state, weights] = errorsAgainstOneRank();
  // Measured, the same at every stage (the batch split changes the order
  // of the sums; bf16 rounds each rank's gradients): state 1.2e-6, weights
  // 3.4e-6 (f32); 1.7e-2 and 1.3e-2 (bf16); 1.2e-6 and 1.2e-6 (SGD). A
  // gradient off by the world size shows in the norm (clipping hides it
  // from the state).
  EXPECT_LT(state, variant_.gradients);
  EXPECT_LT(weights, variant_.weights);
  std::printf("%s, stage %d, micro-batches and step: worst relative error "
              "of the optimizer state %.3g, weights %.3g\n",
              variant_.name, stage_, state, weights);
}

// @train_step on one batch: its grad.<param> outputs are each rank's own
// gradients (their mean is the batch's), the update uses the mean.
TEST_P(ZeroOnThreads, TrainStepLikeOneRank) {
  HostTensor ids = batch();
  Executable &step = one_->executable("train_step");
  NamedTensors given = hyperparameters(1.0f), in;
  given["input_ids"] = ids;
  for (const std::string &n : step.inputNames())
    if (auto it = given.find(n); it != given.end())
      in[n] = it->second;
  NamedTensors reference = step.run(step.withDefaults(in));

  std::vector<NamedTensors> outs(kRanks);
  onEveryRank([&](Rank &rank, int r) {
    NamedTensors mine = hyperparameters(1.0f);
    mine["input_ids"] = rowOf(ids, r);
    outs[static_cast<size_t>(r)] = rank.run("train_step", mine);
  });

  double grads = 0;
  for (const auto &[name, want] : reference) {
    if (name.rfind("grad.", 0) != 0 && name != "loss")
      continue;
    std::vector<float> mean(static_cast<size_t>(want.numel()), 0.0f);
    for (const NamedTensors &o : outs) {
      const HostTensor &t = o.at(name);
      std::vector<float> mine = floats(t.data(), t.numel(), t.dtype());
      for (size_t i = 0; i < mean.size(); ++i)
        mean[i] += mine[i] / kRanks;
    }
    grads = std::max(
        grads,
        relativeError(mean, floats(want.data(), want.numel(), want.dtype())));
  }
  auto [state, weights] = errorsAgainstOneRank();
  // Measured, the same at every stage: gradients 9.0e-7, state 1.5e-6,
  // weights 4.6e-6 (f32); 9.6e-3, 2.9e-2 and 1.2e-2 (bf16); 8.6e-7 each
  // (SGD).
  EXPECT_LT(grads, variant_.gradients);
  EXPECT_LT(state, variant_.gradients);
  EXPECT_LT(weights, variant_.weights);
  std::printf("%s, stage %d, train_step: worst relative error of the mean "
              "gradients %.3g, optimizer state %.3g, weights %.3g\n",
              variant_.name, stage_, grads, state, weights);
}

// @backward (the gradient of a loss computed outside the model, from its
// cotangent w.r.t. the logits), then @step. Ranks average their gradients
// (as they do @forward_backward's, each the mean over its own sequence),
// so a rank is given its row of the batch's cotangent times the world
// size: its local loss's, as DeepSpeed's data parallelism takes it.
TEST_P(ZeroOnThreads, BackwardAndStepLikeOneRank) {
  HostTensor ids = batch();
  constexpr int64_t kVocab = 512;
  std::vector<float> g(static_cast<size_t>(kRanks * kSeq * kVocab));
  std::uniform_real_distribution<float> uniform(-1e-3f, 1e-3f);
  for (float &v : g)
    v = uniform(rng_);
  config_.maxGradNorm = 0.5f;
  one_->backward(ids, HostTensor::fromVector<float>({kRanks, kSeq, kVocab}, g));
  StepResult reference = one_->step(config_);

  std::vector<float> norms(kRanks);
  onEveryRank([&](Rank &rank, int r) {
    const size_t row = static_cast<size_t>(kSeq * kVocab);
    std::vector<float> mine(g.begin() + r * row, g.begin() + (r + 1) * row);
    for (float &v : mine)
      v *= kRanks;
    rank.run("backward", {{"input_ids", rowOf(ids, r)},
                          {"grad_logits", HostTensor::fromVector<float>(
                                              {1, kSeq, kVocab}, mine)}});
    norms[static_cast<size_t>(r)] = rank.run("step", hyperparameters(1.0f))
                                        .at("grad_norm")
                                        .toVector<float>()[0];
  });
  for (float norm : norms)
    EXPECT_NEAR(norm, reference.gradNorm,
                variant_.gradients * reference.gradNorm);
  auto [state, weights] = errorsAgainstOneRank();
  EXPECT_LT(state, variant_.gradients);
  EXPECT_LT(weights, variant_.weights);
  std::printf("%s, stage %d, backward and step: worst relative error of the "
              "gradient norm %.3g, optimizer state %.3g, weights %.3g\n",
              variant_.name, stage_,
              std::fabs(norms[0] - reference.gradNorm) / reference.gradNorm,
              state, weights);
}

INSTANTIATE_TEST_SUITE_P(Stages, ZeroOnThreads,
                         ::testing::Combine(::testing::ValuesIn(kVariants),
                                            ::testing::Values(0, 1, 2, 3)),
                         [](const auto &info) {
                           return std::string(std::get<0>(info.param).name) +
                                  "_stage" +
                                  std::to_string(std::get<1>(info.param));
                         });

} // namespace
