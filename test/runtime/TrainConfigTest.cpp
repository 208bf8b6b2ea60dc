// DeepSpeed-style configuration: defaults, the batch-size triangle, the
// optimizer and schedule blocks, unknown keys reported, unsupported and
// invalid values as one error naming the key, and the learning-rate
// schedules against their formulas.
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
      "optimizer": {"type": "SGD"}})");
      },
      {"config: optimizer.type 'SGD' is not supported"});
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
      "fp16": {"enabled": true}})");
      },
      {"config: fp16.enabled: mixed-precision training is not "
       "implemented yet"});
  expectError(
      [] {
        parseTrainConfig(R"({"train_batch_size": 4,
      "zero_optimization": {"stage": 2}})");
      },
      {"config: zero_optimization.stage 2 is not implemented yet"});
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

} // namespace
