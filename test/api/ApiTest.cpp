// hybrid_api's pieces that need no model.
//
// Token batches and the cycling dataset, tensor comparison, medians, the
// training configuration file and @train_step's hyperparameters.
#include "hybrid/Metrics.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/TensorDiff.h"
#include "hybrid/TokenDataset.h"
#include "hybrid/TrainStep.h"
#include "hybrid/Trainer.h"

#include "TestSupport.h"

#include <cmath>
#include <fstream>
#include <limits>

namespace hybrid {
namespace {

using test::expectError;
using test::TempDir;

HostTensor ids(Shape shape, std::vector<int64_t> values) {
  return HostTensor::fromVector<int64_t>(std::move(shape), values);
}

TEST(TokenDataset, NextCyclesThroughTheSequencesAndSeekMovesThePosition) {
  TokenDataset data(TokenBatch{ids({3, 2}, {0, 1, 10, 11, 20, 21}), {}});
  EXPECT_EQ(data.next(2).inputIds.toVector<int64_t>(),
            (std::vector<int64_t>{0, 1, 10, 11}));
  // Past the last sequence comes the first.
  EXPECT_EQ(data.next(2).inputIds.toVector<int64_t>(),
            (std::vector<int64_t>{20, 21, 0, 1}));
  data.seek(7); // 7 sequences consumed: the next is 7 % 3
  EXPECT_EQ(data.next(1).inputIds.toVector<int64_t>(),
            (std::vector<int64_t>{10, 11}));
}

TEST(TokenBatch, RowsAndFirstTokensKeepTheMaskAndLabelsAligned) {
  TokenBatch batch{ids({2, 3}, {1, 2, 3, 4, 5, 6}),
                   ids({2, 3}, {0, 1, 1, 1, 1, 1}),
                   ids({2, 3}, {-100, 2, 3, -100, -100, 6})};
  TokenBatch prompts = batch.firstTokens(2);
  EXPECT_EQ(prompts.inputIds.toVector<int64_t>(),
            (std::vector<int64_t>{1, 2, 4, 5}));
  EXPECT_EQ(prompts.attentionMask->toVector<int64_t>(),
            (std::vector<int64_t>{0, 1, 1, 1}));
  EXPECT_EQ(prompts.labels->toVector<int64_t>(),
            (std::vector<int64_t>{-100, 2, -100, -100}));
  TokenBatch second = batch.rowsFrom(1, 1);
  EXPECT_EQ(second.inputIds.toVector<int64_t>(),
            (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(second.mask()->toVector<int64_t>(),
            (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(second.labelsOrNull()->toVector<int64_t>(),
            (std::vector<int64_t>{-100, -100, 6}));
  expectError([&] { batch.firstTokens(4); }, {"first 4 tokens", "of 3"});
  // The model's executables take no labels; the loss's do.
  EXPECT_EQ(batch.inputs().count("labels"), 0u);
  EXPECT_EQ(batch.lossInputs().at("labels").toVector<int64_t>(),
            batch.labels->toVector<int64_t>());
  EXPECT_EQ(batch.lossInputs().count("attention_mask"), 1u);
  EXPECT_EQ(TokenBatch{batch.inputIds}.lossInputs().size(), 1u);
}

TEST(TokenBatch, ReadingNamesTheFileAndTheTensor) {
  TempDir dir;
  const std::string path = dir.file("tokens.safetensors");
  writeSafeTensors(path, {{"prompt", ids({1, 2}, {5, 6})},
                          {"flat", ids({2}, {5, 6})},
                          {"floats", HostTensor::fromVector<float>({1}, {1})}});
  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(readTokenBatch(file, "prompt").inputIds.toVector<int64_t>(),
            (std::vector<int64_t>{5, 6}));
  EXPECT_FALSE(readTokenBatch(file, "prompt").attentionMask);
  expectError([&] { readTokenBatch(file); },
              {path, "no tensor 'input_ids' (int64 [batch, seq])"});
  expectError([&] { readTokenBatch(file, "flat", "the prompt ids"); },
              {path, "'flat' has shape [2]; expected the prompt ids"});
  expectError([&] { readTokenBatch(file, "floats"); },
              {"'floats' is F32; expected int64 [batch, seq]"});

  writeSafeTensors(path, {{"input_ids", ids({1, 2}, {5, 6})},
                          {"attention_mask", ids({1, 3}, {1, 1, 1})}});
  SafeTensorsFile masked = SafeTensorsFile::open(path);
  expectError([&] { readTokenBatch(masked); },
              {"attention_mask is I64 [1,3]; expected int64 [1,2]"});

  writeSafeTensors(
      path, {{"input_ids", ids({1, 2}, {5, 6})},
             {"labels", HostTensor::fromVector<int32_t>({1, 2}, {-100, 6})}});
  EXPECT_EQ(
      readTokenBatch(SafeTensorsFile::open(path)).labels->toVector<int64_t>(),
      (std::vector<int64_t>{-100, 6}));
  writeSafeTensors(path, {{"input_ids", ids({1, 2}, {5, 6})},
                          {"labels", ids({2, 1}, {5, 6})}});
  expectError([&] { readTokenBatch(SafeTensorsFile::open(path)); },
              {path, "labels is I64 [2,1]; expected int64 [1,2]"});
  writeSafeTensors(path,
                   {{"input_ids", ids({1, 2}, {5, 6})},
                    {"labels", HostTensor::fromVector<float>({1, 2}, {5, 6})}});
  expectError([&] { readTokenBatch(SafeTensorsFile::open(path)); },
              {"labels is F32 [1,2]; expected int64 [1,2]"});
}

TEST(TensorDiff, NanAndInfinityCompareAsTheParityTestsNeed) {
  TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN(),
              inf = std::numeric_limits<float>::infinity();
  writeSafeTensors(dir.file("a.safetensors"),
                   {{"x", HostTensor::fromVector<float>({4}, {nan, inf, 1, 2})},
                    {"y", HostTensor::fromVector<float>({1}, {nan})},
                    {"only_a", HostTensor::fromVector<float>({1}, {0})}});
  writeSafeTensors(dir.file("b.safetensors"),
                   {{"x", HostTensor::fromVector<float>({4}, {nan, inf, 1, 4})},
                    {"z", HostTensor::fromVector<float>({1}, {3})},
                    {"w", HostTensor::fromVector<float>({2}, {0, 0})}});
  SafeTensorsFile a = SafeTensorsFile::open(dir.file("a.safetensors"));
  SafeTensorsFile b = SafeTensorsFile::open(dir.file("b.safetensors"));

  // Equal NaNs and infinities count 0: the difference is 2 - 4.
  std::vector<TensorDiff> d = compareTensors(a, b, {}, {2.0, std::nullopt});
  ASSERT_EQ(d.size(), 1u); // x, the one name both hold
  EXPECT_EQ(d[0].maxDiff, 2.0);
  EXPECT_TRUE(d[0].pass);
  // rtol-max: the bound is a fraction of max |b|'s finite elements (4).
  d = compareTensors(a, b, {"x"}, {0, 0.25});
  EXPECT_EQ(d[0].maxRef, 4.0);
  EXPECT_EQ(d[0].bound, 1.0);
  EXPECT_FALSE(d[0].pass);
  // A NaN against a number never passes; renamed and misshaped tensors.
  d = compareTensors(a, b, {"y=z", "y=w"}, {1e9, std::nullopt});
  EXPECT_TRUE(std::isinf(d[0].maxDiff));
  EXPECT_FALSE(d[0].pass);
  EXPECT_NE(d[1].shapeA, d[1].shapeB);
  EXPECT_FALSE(d[1].pass);
  expectError([&] { compareTensors(a, b, {"nope"}, {}); },
              {"no tensor 'nope'"});
  SafeTensorsFile onlyA = SafeTensorsFile::open(dir.file("a.safetensors"));
  writeSafeTensors(dir.file("c.safetensors"),
                   {{"q", HostTensor::fromVector<float>({1}, {0})}});
  expectError(
      [&] {
        compareTensors(onlyA, SafeTensorsFile::open(dir.file("c.safetensors")),
                       {}, {});
      },
      {"have no tensor in common"});
}

TEST(Metrics, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(medianOf({3, 1, 2}), 2.0);
  EXPECT_EQ(medianOf({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(medianOf({}), 0.0);
}

TEST(TrainStepHyperparameters, OnlyTheGivenOnesBecomeInputs) {
  TrainStepHyperparameters h;
  h.lr = 0.5f;
  h.nesterov = true;
  NamedTensors in = h.inputs();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in.at("lr").toVector<float>(), std::vector<float>{0.5f});
  EXPECT_EQ(in.at("nesterov").toVector<float>(), std::vector<float>{1.0f});
}

TEST(TrainConfigFile, ErrorsNameTheFileAndUnknownKeysAreReturned) {
  TempDir dir;
  expectError([&] { loadTrainConfig(dir.file("missing.json")); },
              {"missing.json: cannot read the configuration"});
  const std::string path = dir.file("ds.json");
  std::ofstream(path) << R"({"train_batch_size": 4, "wandb": {}})";
  TrainConfigFile parsed = loadTrainConfig(path);
  EXPECT_EQ(parsed.config.trainBatchSize, 4);
  EXPECT_EQ(parsed.unknownKeys, std::vector<std::string>{"wandb"});
  std::ofstream(path) << R"({"train_batch_size": 0})";
  expectError([&] { loadTrainConfig(path); },
              {path + ": ", "train_batch_size"});
}

} // namespace
} // namespace hybrid
