// DeepSpeed-style configuration: defaults, the batch-size triangle, the
// optimizer (AdamW, SGD), precision (fp16, bf16) and schedule blocks,
// unknown keys reported, unsupported and invalid values as one error naming
// the key, the learning-rate schedules against their formulas, and the
// check of a config against a bundle's training plan.
#include "TestSupport.h"

#include "hybrid/TrainConfig.h"

#include <cmath>

using namespace hybrid;
using namespace hybrid::test;

namespace {

TEST(TrainConfig, BatchSizeTriangle) {
  TrainConfig c = parseTrainConfig(R"({"train_batch_size": 32,
                                       "train_micro_batch_size_per_gpu": 8})");
  EXPECT_EQ(c.gradientAccumulationSteps, 4);
  c = parseTrainConfig(R"({"train_batch_size": 32,
                           "gradient_accumulation_steps": 2})");
  EXPECT_EQ(c.microBatchSize, 16);
  c = parseTrainConfig(R"({"train_micro_batch_size_per_gpu": 4,
                           "gradient_accumulation_steps": 3})");
  EXPECT_EQ(c.trainBatchSize, 12);
  c = parseTrainConfig(R"({"train_batch_size": 8})");
  EXPECT_EQ(c.microBatchSize, 8);
  EXPECT_EQ(c.gradientAccumulationSteps, 1);
  c = parseTrainConfig(R"({"train_micro_batch_size_per_gpu": 2})");
  EXPECT_EQ(c.trainBatchSize, 2);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 32,
      "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 3})");
      },
      {"config: train_batch_size (32) must equal "
       "train_micro_batch_size_per_gpu (8) x "
       "gradient_accumulation_steps (3) x world size (1)"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 30,
      "train_micro_batch_size_per_gpu": 8})");
      },
      {"train_batch_size (30) must equal"});
  expectError([] { parseTrainConfig("{}"); },
              {"config: either train_batch_size or "
               "train_micro_batch_size_per_gpu must be given"});
  expectError([] { parseTrainConfig(R"({"train_batch_size": 0})"); },
              {"config: train_batch_size must be an integer >= 1, got 0"});
}

TEST(TrainConfig, OptimizerAndDefaults) {
  TrainConfig c = parseTrainConfig(R"({"train_batch_size": 4})");
  EXPECT_FLOAT_EQ(c.optimizer.lr, 1e-3f);
  EXPECT_FLOAT_EQ(c.optimizer.weightDecay, 0.0f); // DeepSpeed's Adam default
  EXPECT_FLOAT_EQ(c.optimizer.maxGradNorm, 0.0f);
  EXPECT_EQ(c.stepsPerPrint, 10);
  c = parseTrainConfig(R"({"train_batch_size": 4, "gradient_clipping": 1.0,
      "optimizer": {"type": "AdamW", "params": {"lr": 3e-4,
        "betas": [0.9, 0.95], "eps": 1e-6, "weight_decay": 0.1}}})");
  EXPECT_FLOAT_EQ(c.optimizer.lr, 3e-4f);
  EXPECT_FLOAT_EQ(c.optimizer.beta2, 0.95f);
  EXPECT_FLOAT_EQ(c.optimizer.eps, 1e-6f);
  EXPECT_FLOAT_EQ(c.optimizer.weightDecay, 0.1f);
  EXPECT_FLOAT_EQ(c.optimizer.maxGradNorm, 1.0f);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "optimizer": {"type": "Lion"}})");
      },
      {"config: optimizer.type 'Lion' is not supported (AdamW, Adam in its "
       "AdamW mode, or SGD)"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "optimizer": {"type": "AdamW", "params": {"betas": [0.9]}}})");
      },
      {"config: optimizer.params.betas must be [b1, b2], got [0.9]"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "optimizer": {"type": "AdamW", "params": {"lr": "fast"}}})");
      },
      {"config: optimizer.params.lr must be a number, got \"fast\""});
  expectError([] { parseTrainConfig("{\"train_batch_size\": 4,"); },
              {"config: not valid JSON"});
}

TEST(TrainConfig, UnknownKeysAreReportedAndUnsupportedOnesRefused) {
  std::vector<std::string> unknown;
  TrainConfig c = parseTrainConfig(
      R"({"train_batch_size": 4, "flops_profiler": {"enabled": false},
          "optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "amsgrad": false}},
          "bf16": {"enabled": false},
          "zero_optimization": {"stage": 0},
          "hybrid_engine": {"enabled": true, "max_out_tokens": 256,
                            "release_inference_cache": true,
                            "enable_cuda_graph": false}})",
      &unknown);
  EXPECT_EQ(unknown, (std::vector<std::string>{"optimizer.params.amsgrad",
                                               "flops_profiler"}));
  EXPECT_TRUE(c.hybridEngine);
  EXPECT_EQ(c.generation.maxOutTokens, 256);
  EXPECT_TRUE(c.generation.releaseInferenceCache);
  EXPECT_FALSE(c.generation.cudaGraph);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "fp16": {"enabled": true}, "bf16": {"enabled": true}})");
      },
      {"config: fp16.enabled and bf16.enabled: enable one of them"});
  EXPECT_EQ(parseTrainConfig(R"({"train_batch_size": 4,
      "zero_optimization": {"stage": 2}})")
                .zeroStage,
            2);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "zero_optimization": {"stage": 4}})");
      },
      {"config: zero_optimization.stage must be 0 to 3, got 4"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "hybrid_engine": {"inference_tp_size": 2}})");
      },
      {"config: hybrid_engine.inference_tp_size > 1"});
}

TEST(TrainConfig, LearningRateSchedules) {
  SchedulerConfig none;
  EXPECT_DOUBLE_EQ(learningRate(none, 3e-4, 7), 3e-4);
  TrainConfig c = parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0,
        "warmup_max_lr": 1e-3, "warmup_num_steps": 100}}})");
  const SchedulerConfig &w = c.scheduler;
  EXPECT_DOUBLE_EQ(learningRate(w, 0, 0), 0.0); // log(1) = 0
  EXPECT_NEAR(learningRate(w, 0, 9), 1e-3 * std::log(10.0) / std::log(100.0),
              1e-15);
  EXPECT_DOUBLE_EQ(learningRate(w, 0, 100), 1e-3);
  EXPECT_DOUBLE_EQ(learningRate(w, 0, 5000), 1e-3);
  c = parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-5,
        "warmup_max_lr": 1e-3, "warmup_num_steps": 10, "warmup_type": "linear",
        "total_num_steps": 110}}})");
  const SchedulerConfig &d = c.scheduler;
  EXPECT_NEAR(learningRate(d, 0, 5), 1e-5 + (1e-3 - 1e-5) * 0.5, 1e-15);
  EXPECT_NEAR(learningRate(d, 0, 10), 1e-3, 1e-15);
  EXPECT_NEAR(learningRate(d, 0, 60), 1e-5 + (1e-3 - 1e-5) * 0.5, 1e-15);
  EXPECT_NEAR(learningRate(d, 0, 110), 1e-5, 1e-15);
  EXPECT_NEAR(learningRate(d, 0, 500), 1e-5, 1e-15);
  // A warmup of one step is two, as in DeepSpeed.
  c = parseTrainConfig(R"({"train_batch_size": 4, "scheduler": {"type":
      "WarmupLR", "params": {"warmup_max_lr": 1e-3, "warmup_num_steps": 1}}})");
  EXPECT_EQ(c.scheduler.warmupNumSteps, 2);
  EXPECT_DOUBLE_EQ(learningRate(c.scheduler, 0, 0), 0.0);
  EXPECT_DOUBLE_EQ(learningRate(c.scheduler, 0, 1), 1e-3);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "WarmupDecayLR", "params": {}}})");
      },
      {"config: scheduler.params.total_num_steps is required by "
       "WarmupDecayLR"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "OneCycle"}})");
      },
      {"config: scheduler.type 'OneCycle' is not supported"});
}

TEST(TrainConfig, Sgd) {
  std::vector<std::string> unknown;
  TrainConfig c = parseTrainConfig(R"({"train_batch_size": 4,
      "optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9,
        "dampening": 0.1, "weight_decay": 1e-4, "maximize": false}}})",
                                   &unknown);
  EXPECT_EQ(c.optimizer.optimizer, Optimizer::Sgd);
  EXPECT_FLOAT_EQ(c.optimizer.lr, 0.1f);
  EXPECT_FLOAT_EQ(c.optimizer.momentum, 0.9f);
  EXPECT_FLOAT_EQ(c.optimizer.dampening, 0.1f);
  EXPECT_FLOAT_EQ(c.optimizer.weightDecay, 1e-4f);
  EXPECT_FALSE(c.optimizer.nesterov);
  EXPECT_EQ(unknown, (std::vector<std::string>{"optimizer.params.maximize"}));
  // torch.optim.SGD's defaults.
  c = parseTrainConfig(R"({"train_batch_size": 4,
      "optimizer": {"type": "SGD"}})");
  EXPECT_FLOAT_EQ(c.optimizer.lr, 1e-3f);
  EXPECT_FLOAT_EQ(c.optimizer.momentum, 0.0f);
  EXPECT_FLOAT_EQ(c.optimizer.weightDecay, 0.0f);
  c = parseTrainConfig(R"({"train_batch_size": 4, "optimizer": {"type":
      "SGD", "params": {"momentum": 0.9, "nesterov": true}}})");
  EXPECT_TRUE(c.optimizer.nesterov);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4, "optimizer": {"type":
      "SGD", "params": {"momentum": 0.9, "dampening": 0.5, "nesterov": true}}})");
      },
      {"config: optimizer.params.nesterov needs a momentum > 0 and zero "
       "dampening"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4, "optimizer": {"type":
      "SGD", "params": {"momentum": -1}}})");
      },
      {"config: optimizer.params: lr, momentum, dampening and weight_decay "
       "must be >= 0"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4, "optimizer": {"type":
      "SGD", "params": {"nesterov": 1}}})");
      },
      {"config: optimizer.params.nesterov must be true or false, got 1"});
}

TEST(TrainConfig, Fp16AndBf16) {
  TrainConfig c = parseTrainConfig(R"({"train_batch_size": 4})");
  EXPECT_EQ(c.precision, DType::F32);
  // DeepSpeed's defaults: 2^16, window 1000, hysteresis 2, minimum 1.
  std::vector<std::string> unknown;
  c = parseTrainConfig(
      R"({"train_batch_size": 4, "fp16": {"enabled": true, "foo": 1}})",
      &unknown);
  EXPECT_EQ(c.precision, DType::F16);
  const LossScaleConfig &l = c.optimizer.lossScale;
  EXPECT_TRUE(l.dynamic);
  EXPECT_EQ(l.initialScale, 65536.0f);
  EXPECT_EQ(l.window, 1000);
  EXPECT_EQ(l.hysteresis, 2);
  EXPECT_EQ(l.minScale, 1.0f);
  EXPECT_EQ(unknown, (std::vector<std::string>{"fp16.foo"}));
  c = parseTrainConfig(R"({"train_batch_size": 4, "fp16": {"enabled": true,
      "initial_scale_power": 20, "loss_scale_window": 50, "hysteresis": 1,
      "min_loss_scale": 0.25, "loss_scale": 0}})");
  EXPECT_TRUE(c.optimizer.lossScale.dynamic);
  EXPECT_EQ(c.optimizer.lossScale.initialScale, 1048576.0f);
  EXPECT_EQ(c.optimizer.lossScale.window, 50);
  EXPECT_EQ(c.optimizer.lossScale.hysteresis, 1);
  EXPECT_EQ(c.optimizer.lossScale.minScale, 0.25f);
  // loss_scale > 0: a static scale.
  c = parseTrainConfig(R"({"train_batch_size": 4, "fp16": {"enabled": true,
      "loss_scale": 128}})");
  EXPECT_FALSE(c.optimizer.lossScale.dynamic);
  EXPECT_EQ(c.optimizer.lossScale.initialScale, 128.0f);
  c = parseTrainConfig(R"({"train_batch_size": 4, "bf16": {"enabled": true}})");
  EXPECT_EQ(c.precision, DType::BF16);
  // A disabled block's keys do not matter (nor are they unknown).
  unknown.clear();
  c = parseTrainConfig(R"({"train_batch_size": 4, "fp16": {"enabled": false,
      "loss_scale": "dynamic", "hysteresis": 0}})",
                       &unknown);
  EXPECT_EQ(c.precision, DType::F32);
  EXPECT_TRUE(unknown.empty());
  // Bad values: one error naming the key.
  auto fp16 = [](const std::string &block) {
    parseTrainConfig(R"({"train_batch_size": 4, "fp16": )" + block + "}");
  };
  expectError([&] { fp16(R"({"enabled": true, "hysteresis": 0})"); },
              {"config: fp16.hysteresis must be an integer >= 1, got 0"});
  expectError([&] { fp16(R"({"enabled": true, "loss_scale_window": 1.5})"); },
              {"config: fp16.loss_scale_window must be an integer >= 1"});
  expectError([&] { fp16(R"({"enabled": true, "min_loss_scale": 0})"); },
              {"config: fp16.min_loss_scale must be a positive f32"});
  expectError([&] { fp16(R"({"enabled": true, "loss_scale": -2})"); },
              {"config: fp16.loss_scale must be 0 (dynamic) or a positive "
               "f32"});
  expectError([&] { fp16(R"({"enabled": true, "initial_scale_power": 200})"); },
              {"config: fp16.initial_scale_power must be <= 127"});
  expectError([&] { fp16(R"({"enabled": "yes"})"); },
              {"config: fp16.enabled must be true or false, got \"yes\""});
  expectError(
      [&] { fp16(R"({"enabled": true, "consecutive_hysteresis": true})"); },
      {"config: fp16.consecutive_hysteresis true is not supported"});
}

TEST(TrainConfig, WarmupCosineLR) {
  // Against DeepSpeed's WarmupCosineLR (lr_schedules.py) evaluated in double
  // at last_batch_iteration = step, peak lr 1e-3 (the optimizer's):
  // warmup_min_ratio 0.1 over 10 steps, then a cosine down to 0.01 at 110.
  std::vector<std::string> unknown;
  TrainConfig c = parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 110,
        "warmup_min_ratio": 0.1, "warmup_num_steps": 10, "cos_min_ratio": 0.01,
        "warmup_max_lr": 1}}})",
                                   &unknown);
  EXPECT_EQ(unknown,
            (std::vector<std::string>{"scheduler.params.warmup_max_lr"}));
  const SchedulerConfig &s = c.scheduler;
  const double lr = 1e-3;
  const std::vector<std::pair<int64_t, double>> log = {
      {0, 0.0001},
      {5, 0.0008003361253452792},
      {9, 0.001},
      {10, 0.0009997557473810372},
      {35, 0.0008438508174347009},
      {60, 0.0004894516742563266},
      {109, 1e-05},
      {110, 1e-05},
      {500, 1e-05}};
  for (auto [step, want] : log)
    EXPECT_NEAR(learningRate(s, lr, step), want, 1e-12) << "step " << step;
  c = parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 110,
        "warmup_min_ratio": 0.1, "warmup_num_steps": 10, "cos_min_ratio": 0.01,
        "warmup_type": "linear"}}})");
  for (auto [step, want] :
       std::vector<std::pair<int64_t, double>>{{0, 0.0001},
                                               {5, 0.00055},
                                               {9, 0.00091},
                                               {60, 0.0004894516742563266}})
    EXPECT_NEAR(learningRate(c.scheduler, lr, step), want, 1e-12)
        << "step " << step;
  // Defaults: no warmup floor, cos_min_ratio 1e-4.
  c = parseTrainConfig(R"({"train_batch_size": 4, "scheduler": {"type":
      "WarmupCosineLR", "params": {"total_num_steps": 20, "warmup_num_steps": 1}}})");
  EXPECT_EQ(c.scheduler.warmupNumSteps, 2);
  EXPECT_DOUBLE_EQ(learningRate(c.scheduler, 1.0, 0), 0.0);
  EXPECT_NEAR(learningRate(c.scheduler, 1.0, 20), 1e-4, 1e-15);
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "scheduler": {"type": "WarmupCosineLR"}})");
      },
      {"config: scheduler.params.total_num_steps is required by "
       "WarmupCosineLR"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4, "scheduler": {"type":
      "WarmupCosineLR", "params": {"total_num_steps": 9, "cos_min_ratio": -1}}})");
      },
      {"config: scheduler.params: warmup_min_ratio and cos_min_ratio must "
       "be >= 0"});
}

/// A bundle whose @step has `input` and updates parameter "w" of `dtype`
/// (through a master when it is not f32).
BundleDesc trainingBundle(const std::string &input, DType dtype) {
  BundleDesc b;
  b.model = "tiny";
  b.params = {{"w", dtype, {2}, ""}};
  b.states = {{"opt.step", DType::F32}};
  ExecutableDesc step;
  step.name = "step";
  step.inputs = {{"lr", 0, std::nullopt}, {input, 1, std::nullopt}};
  step.states = {{0, Access::ReadWrite}};
  if (dtype != DType::F32) {
    b.states.push_back({"opt.master.w", DType::F32});
    step.states.push_back({1, Access::ReadWrite});
  }
  b.executables.push_back(step);
  return b;
}

TEST(TrainConfig, CheckedAgainstTheBundle) {
  TrainPlan plan = trainPlanOf(trainingBundle("beta1", DType::F32));
  EXPECT_EQ(plan.optimizer, Optimizer::AdamW);
  EXPECT_EQ(plan.precision, DType::F32);
  plan = trainPlanOf(trainingBundle("momentum", DType::BF16));
  EXPECT_EQ(plan.optimizer, Optimizer::Sgd);
  EXPECT_EQ(plan.precision, DType::BF16);
  expectError([] { trainPlanOf(BundleDesc{}); },
              {"has no training executables (compile it with hybridc "
               "--train)"});

  const TrainConfig adamW = parseTrainConfig(R"({"train_batch_size": 4})");
  const TrainConfig sgd = parseTrainConfig(
      R"({"train_batch_size": 4, "optimizer": {"type": "SGD"}})");
  const TrainConfig fp16 =
      parseTrainConfig(R"({"train_batch_size": 4, "fp16": {"enabled": true}})");
  const TrainConfig bf16 =
      parseTrainConfig(R"({"train_batch_size": 4, "bf16": {"enabled": true}})");
  checkTrainConfig(adamW, {Optimizer::AdamW, DType::F32});
  checkTrainConfig(sgd, {Optimizer::Sgd, DType::F32});
  checkTrainConfig(fp16, {Optimizer::AdamW, DType::F16});
  checkTrainConfig(bf16, {Optimizer::AdamW, DType::BF16});
  expectError(
      [&] {
        checkTrainConfig(sgd, {Optimizer::AdamW, DType::F32});
      },
      {"config: optimizer.type SGD, but the bundle was compiled for "
       "AdamW (compile it with hybridc --train --optimizer=sgd)"});
  expectError(
      [&] {
        checkTrainConfig(fp16, {Optimizer::AdamW, DType::F32});
      },
      {"config: fp16.enabled, but the bundle trains float32 weights "
       "(compile it with hybridc --train --dtype=float16)"});
  expectError(
      [&] {
        checkTrainConfig(bf16, {Optimizer::AdamW, DType::F16});
      },
      {"config: bf16.enabled, but the bundle trains float16 weights"});
  expectError(
      [&] {
        checkTrainConfig(adamW, {Optimizer::AdamW, DType::F16});
      },
      {"config: the bundle trains float16 weights through f32 masters: "
       "enable fp16 in the config, or compile it with hybridc --train "
       "--dtype=float32"});
}

} // namespace
