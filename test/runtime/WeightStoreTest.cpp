// The weight store: binding safetensors checkpoints (single, folder,
// sharded), the errors for missing / extra / mis-shaped / mistyped tensors,
// random init and saving.
#include "TestSupport.h"

#include "hybrid/CpuDevice.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/WeightStore.h"

#include <cmath>
#include <cstring>
#include <fstream>

using namespace hybrid;
using namespace hybrid::test;

namespace {

std::vector<ParamDesc> twoParams() {
  return {{"layer.weight", DType::F32, {2, 3}, ""},
          {"layer.bias", DType::F32, {3}, ""}};
}

std::vector<float> values(const WeightStore &w, size_t i) {
  const float *p = static_cast<const float *>(w.data(i));
  return std::vector<float>(p, p + numElements(w.shape(i)));
}

struct Checkpoint {
  std::vector<float> weight = {1, 2, 3, 4, 5, 6};
  std::vector<float> bias = {0.5f, -0.5f, 0.25f};
};

void writeCheckpoint(const std::string &path, const Checkpoint &c,
                     std::vector<SafeTensorsWriteEntry> extra = {}) {
  std::vector<SafeTensorsWriteEntry> entries = {
      {"layer.weight", SafeTensorsDType::F32, {2, 3}, c.weight.data()},
      {"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}};
  entries.insert(entries.end(), extra.begin(), extra.end());
  writeSafeTensors(path, entries);
}

std::shared_ptr<Device> cpu() { return std::make_shared<CpuDevice>(); }

} // namespace

TEST(WeightStore, LaysOutParamsAligned) {
  WeightStore w(twoParams(), cpu());
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.totalBytes(), 36u);
  EXPECT_EQ(w.totalElements(), 9);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data(0)) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data(1)) % 64, 0u);
  EXPECT_EQ(*w.find("layer.bias"), 1u);
  EXPECT_FALSE(w.find("nope"));
  EXPECT_FALSE(w.bound());
}

TEST(WeightStore, BindsAFileAndAFolder) {
  TempDir dir;
  Checkpoint c;
  writeCheckpoint(dir.file("model.safetensors"), c);
  WeightStore w(twoParams(), cpu());
  w.bindFromSafeTensors(dir.file("model.safetensors"));
  EXPECT_TRUE(w.bound());
  EXPECT_EQ(values(w, 0), c.weight);
  EXPECT_EQ(values(w, 1), c.bias);
  WeightStore w2(twoParams(), cpu());
  w2.bindFromSafeTensors(dir.path());
  EXPECT_EQ(values(w2, 1), c.bias);
}

TEST(WeightStore, BindsAShardedCheckpoint) {
  TempDir dir;
  Checkpoint c;
  writeSafeTensors(
      dir.file("model-00001-of-00002.safetensors"),
      {{"layer.weight", SafeTensorsDType::F32, {2, 3}, c.weight.data()}});
  writeSafeTensors(dir.file("model-00002-of-00002.safetensors"),
                   {{"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"metadata": {"total_size": 36}, "weight_map": {)"
         R"("layer.weight": "model-00001-of-00002.safetensors",)"
         R"("layer.bias": "model-00002-of-00002.safetensors"}})";
  WeightStore w(twoParams(), cpu());
  w.bindFromSafeTensors(dir.path());
  EXPECT_EQ(values(w, 0), c.weight);
  EXPECT_EQ(values(w, 1), c.bias);
  // An index that places a tensor in the wrong shard.
  std::ofstream(dir.file("bad.index.json"))
      << R"({"weight_map": {"layer.weight": "model-00002-of-00002.safetensors",)"
         R"("layer.bias": "model-00002-of-00002.safetensors"}})";
  expectError([&] { w.bindFromSafeTensors(dir.file("bad.index.json")); },
              {"no tensor 'layer.weight'", "places it there"});
}

TEST(WeightStore, MissingTensorNamesIt) {
  TempDir dir;
  Checkpoint c;
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  WeightStore w(twoParams(), cpu());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {dir.file("w.safetensors"), "missing tensor 'layer.weight'",
               "f32 [2,3]"});
  EXPECT_FALSE(w.bound());
}

TEST(WeightStore, ExtraTensorIsAnErrorUnlessAllowed) {
  TempDir dir;
  Checkpoint c;
  float mask[4] = {};
  writeCheckpoint(dir.file("w.safetensors"), c,
                  {{"attn.masked_bias", SafeTensorsDType::F32, {4}, mask}});
  WeightStore w(twoParams(), cpu());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {"unexpected tensor 'attn.masked_bias'"});
  w.bindFromSafeTensors(dir.file("w.safetensors"), {"attn.masked_bias"});
  EXPECT_EQ(values(w, 0), c.weight);
}

TEST(WeightStore, MisShapedTensorShowsBothShapes) {
  TempDir dir;
  Checkpoint c;
  writeSafeTensors(
      dir.file("w.safetensors"),
      {{"layer.weight", SafeTensorsDType::F32, {3, 2}, c.weight.data()},
       {"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  WeightStore w(twoParams(), cpu());
  expectError(
      [&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
      {"tensor 'layer.weight' has shape [3,2], the bundle expects [2,3]"});
}

TEST(WeightStore, WrongDTypeIsAnError) {
  TempDir dir;
  Checkpoint c;
  std::vector<int64_t> ints(6, 1);
  writeSafeTensors(
      dir.file("w.safetensors"),
      {{"layer.weight", SafeTensorsDType::I64, {2, 3}, ints.data()},
       {"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  WeightStore w(twoParams(), cpu());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {"tensor 'layer.weight' is I64, the bundle expects f32"});
}

TEST(WeightStore, HalfPrecisionCheckpointsConvert) {
  TempDir dir;
  std::vector<uint16_t> half = {0x3c00, 0xc000, 0x3800, 0, 0x3c00, 0x4000};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x4049};
  writeSafeTensors(
      dir.file("w.safetensors"),
      {{"layer.weight", SafeTensorsDType::F16, {2, 3}, half.data()},
       {"layer.bias", SafeTensorsDType::BF16, {3}, bf16.data()}});
  WeightStore w(twoParams(), cpu());
  w.bindFromSafeTensors(dir.file("w.safetensors"));
  EXPECT_EQ(values(w, 0), (std::vector<float>{1, -2, 0.5f, 0, 1, 2}));
  EXPECT_EQ(values(w, 1), (std::vector<float>{1, -2, 3.140625f}));
}

TEST(WeightStore, FailedBindKeepsPreviousWeights) {
  TempDir dir;
  Checkpoint c;
  writeCheckpoint(dir.file("good.safetensors"), c);
  Checkpoint other;
  other.weight = {9, 9, 9, 9, 9, 9};
  float extra = 0;
  writeCheckpoint(dir.file("bad.safetensors"), other,
                  {{"surprise", SafeTensorsDType::F32, {1}, &extra}});
  WeightStore w(twoParams(), cpu());
  w.bindFromSafeTensors(dir.file("good.safetensors"));
  EXPECT_THROW(w.bindFromSafeTensors(dir.file("bad.safetensors")), Error);
  EXPECT_EQ(values(w, 0), c.weight);
}

TEST(WeightStore, FolderWithoutCheckpointIsAnError) {
  TempDir dir;
  WeightStore w(twoParams(), cpu());
  expectError([&] { w.bindFromSafeTensors(dir.path()); },
              {"neither model.safetensors nor model.safetensors.index.json"});
}

TEST(WeightStore, LayoutsAreRejectedUntilSupported) {
  TempDir dir;
  Checkpoint c;
  writeCheckpoint(dir.file("w.safetensors"), c);
  std::vector<ParamDesc> ps = twoParams();
  ps[0].layout = "packed_qkv";
  WeightStore w(ps, cpu());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {"layout 'packed_qkv'"});
}

TEST(WeightStore, InitRandomIsDeterministic) {
  WeightStore a(twoParams(), cpu()), b(twoParams(), cpu());
  a.initRandom(42);
  b.initRandom(42);
  EXPECT_TRUE(a.bound());
  EXPECT_EQ(values(a, 0), values(b, 0));
  EXPECT_EQ(values(a, 1), (std::vector<float>{0, 0, 0})); // a bias
  b.initRandom(43);
  EXPECT_NE(values(a, 0), values(b, 0));
  for (float v : values(a, 0))
    EXPECT_LT(std::fabs(v), 0.2f);
}

TEST(WeightStore, SaveThenBindRoundTrips) {
  TempDir dir;
  WeightStore a(twoParams(), cpu());
  a.initRandom(5);
  a.saveSafeTensors(dir.file("saved.safetensors"));
  WeightStore b(twoParams(), cpu());
  b.bindFromSafeTensors(dir.file("saved.safetensors"));
  EXPECT_EQ(values(a, 0), values(b, 0));
}

TEST(WeightStore, BindsTheGpt2Fixture) {
  std::string path = fixturesDir() + "/gpt2/model.safetensors";
  if (!fileExists(path))
    GTEST_SKIP() << "fixtures not found at " << fixturesDir();
  SafeTensorsFile file = SafeTensorsFile::open(path);
  std::vector<ParamDesc> params;
  for (const SafeTensorsEntry &e : file.entries())
    params.push_back({e.name, DType::F32, e.shape, ""});
  WeightStore w(params, cpu());
  w.bindFromSafeTensors(fixturesDir() + "/gpt2");
  size_t wpe = *w.find("transformer.wpe.weight");
  EXPECT_EQ(values(w, wpe), file.toF32(file.get("transformer.wpe.weight")));
  // Dropping a parameter makes its tensor unexpected.
  params.pop_back();
  WeightStore fewer(params, cpu());
  expectError([&] { fewer.bindFromSafeTensors(path); }, {"unexpected tensor"});
}
