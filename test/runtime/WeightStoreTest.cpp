// The weight store, on every device backend: binding safetensors
// checkpoints (single, folder, sharded), the errors for missing / extra /
// mis-shaped / mistyped tensors, random init and saving.
#include "DeviceTest.h"
#include "TestSupport.h"

#include "hybrid/Float16.h"
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

/// Parameter i's bytes, read back from the device as T.
template <typename T> std::vector<T> read(const WeightStore &w, size_t i) {
  return readDeviceAs<T>(w.device(), w.data(i), w.bytes(i) / sizeof(T));
}

std::vector<float> values(const WeightStore &w, size_t i) {
  return read<float>(w, i);
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

using WeightStoreOnDevice = DeviceTest;
HYBRID_TEST_ON_EVERY_DEVICE(WeightStoreOnDevice);

} // namespace

TEST_P(WeightStoreOnDevice, LaysOutParamsAligned) {
  WeightStore w(twoParams(), device());
  EXPECT_EQ(w.size(), 2u);
  EXPECT_EQ(w.totalBytes(), 36u);
  EXPECT_EQ(w.totalElements(), 9);
  EXPECT_EQ(*w.find("layer.bias"), 1u);
  EXPECT_FALSE(w.find("nope"));
  EXPECT_FALSE(w.bound());
  // No memory until something is bound.
  expectError([&] { w.data(0); }, {"weights are not loaded"});
  w.initRandom(1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data(0)) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.data(1)) % 256, 0u);
}

TEST_P(WeightStoreOnDevice, BindsAFileAndAFolder) {
  TempDir dir;
  Checkpoint c;
  writeCheckpoint(dir.file("model.safetensors"), c);
  WeightStore w(twoParams(), device());
  w.bindFromSafeTensors(dir.file("model.safetensors"));
  EXPECT_TRUE(w.bound());
  EXPECT_EQ(values(w, 0), c.weight);
  EXPECT_EQ(values(w, 1), c.bias);
  WeightStore w2(twoParams(), device());
  w2.bindFromSafeTensors(dir.path());
  EXPECT_EQ(values(w2, 1), c.bias);
}

TEST_P(WeightStoreOnDevice, BindsAShardedCheckpoint) {
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
  WeightStore w(twoParams(), device());
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

TEST_P(WeightStoreOnDevice, MissingTensorNamesIt) {
  TempDir dir;
  Checkpoint c;
  writeSafeTensors(dir.file("w.safetensors"),
                   {{"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  WeightStore w(twoParams(), device());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {dir.file("w.safetensors"), "missing tensor 'layer.weight'",
               "f32 [2,3]"});
  EXPECT_FALSE(w.bound());
}

TEST_P(WeightStoreOnDevice, ExtraTensorIsAnErrorUnlessAllowed) {
  TempDir dir;
  Checkpoint c;
  float mask[4] = {};
  writeCheckpoint(dir.file("w.safetensors"), c,
                  {{"attn.masked_bias", SafeTensorsDType::F32, {4}, mask}});
  WeightStore w(twoParams(), device());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {"unexpected tensor 'attn.masked_bias'"});
  w.bindFromSafeTensors(dir.file("w.safetensors"), {"attn.masked_bias"});
  EXPECT_EQ(values(w, 0), c.weight);
}

TEST_P(WeightStoreOnDevice, MisShapedTensorShowsBothShapes) {
  TempDir dir;
  Checkpoint c;
  writeSafeTensors(
      dir.file("w.safetensors"),
      {{"layer.weight", SafeTensorsDType::F32, {3, 2}, c.weight.data()},
       {"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  WeightStore w(twoParams(), device());
  expectError(
      [&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
      {"tensor 'layer.weight' has shape [3,2], the bundle expects [2,3]"});
}

TEST_P(WeightStoreOnDevice, WrongDTypeIsAnError) {
  TempDir dir;
  Checkpoint c;
  std::vector<int64_t> ints(6, 1);
  writeSafeTensors(
      dir.file("w.safetensors"),
      {{"layer.weight", SafeTensorsDType::I64, {2, 3}, ints.data()},
       {"layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()}});
  WeightStore w(twoParams(), device());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {"tensor 'layer.weight' is I64, the bundle expects f32"});
}

TEST_P(WeightStoreOnDevice, HalfPrecisionCheckpointsConvert) {
  TempDir dir;
  std::vector<uint16_t> half = {0x3c00, 0xc000, 0x3800, 0, 0x3c00, 0x4000};
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x4049};
  writeSafeTensors(
      dir.file("w.safetensors"),
      {{"layer.weight", SafeTensorsDType::F16, {2, 3}, half.data()},
       {"layer.bias", SafeTensorsDType::BF16, {3}, bf16.data()}});
  WeightStore w(twoParams(), device());
  w.bindFromSafeTensors(dir.file("w.safetensors"));
  EXPECT_EQ(values(w, 0), (std::vector<float>{1, -2, 0.5f, 0, 1, 2}));
  EXPECT_EQ(values(w, 1), (std::vector<float>{1, -2, 3.140625f}));
}

TEST_P(WeightStoreOnDevice, FailedBindKeepsPreviousWeights) {
  TempDir dir;
  Checkpoint c;
  writeCheckpoint(dir.file("good.safetensors"), c);
  Checkpoint other;
  other.weight = {9, 9, 9, 9, 9, 9};
  float extra = 0;
  writeCheckpoint(dir.file("bad.safetensors"), other,
                  {{"surprise", SafeTensorsDType::F32, {1}, &extra}});
  WeightStore w(twoParams(), device());
  w.bindFromSafeTensors(dir.file("good.safetensors"));
  EXPECT_THROW(w.bindFromSafeTensors(dir.file("bad.safetensors")), Error);
  EXPECT_EQ(values(w, 0), c.weight);
}

TEST_P(WeightStoreOnDevice, FolderWithoutCheckpointIsAnError) {
  TempDir dir;
  WeightStore w(twoParams(), device());
  expectError([&] { w.bindFromSafeTensors(dir.path()); },
              {"neither model.safetensors nor model.safetensors.index.json"});
}

TEST_P(WeightStoreOnDevice, LayoutsAreRejectedUntilSupported) {
  TempDir dir;
  Checkpoint c;
  writeCheckpoint(dir.file("w.safetensors"), c);
  std::vector<ParamDesc> ps = twoParams();
  ps[0].layout = "packed_qkv";
  WeightStore w(ps, device());
  expectError([&] { w.bindFromSafeTensors(dir.file("w.safetensors")); },
              {"layout 'packed_qkv'"});
}

TEST_P(WeightStoreOnDevice, InitRandomIsDeterministic) {
  WeightStore a(twoParams(), device()), b(twoParams(), device());
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

TEST_P(WeightStoreOnDevice, SaveThenBindRoundTrips) {
  TempDir dir;
  WeightStore a(twoParams(), device());
  a.initRandom(5);
  a.saveSafeTensors(dir.file("saved.safetensors"));
  WeightStore b(twoParams(), device());
  b.bindFromSafeTensors(dir.file("saved.safetensors"));
  EXPECT_EQ(values(a, 0), values(b, 0));
}

// A value model's weights under other names: one model of several in a
// file (CheckpointBinding::prefix), a wrapper or a causal LM's base prefix
// before the parameter names, a fresh head at zero.
TEST_P(WeightStoreOnDevice, BindsUnderPrefixes) {
  TempDir dir;
  Checkpoint c, other;
  other.bias = {7, 8, 9};
  std::vector<float> head = {3, 3};
  writeSafeTensors(
      dir.file("two.safetensors"),
      {{"critic.trunk.layer.weight",
        SafeTensorsDType::F32,
        {2, 3},
        c.weight.data()},
       {"critic.trunk.layer.bias", SafeTensorsDType::F32, {3}, c.bias.data()},
       {"reward.trunk.layer.weight",
        SafeTensorsDType::F32,
        {2, 3},
        other.weight.data()},
       {"reward.trunk.layer.bias",
        SafeTensorsDType::F32,
        {3},
        other.bias.data()},
       {"reward.head", SafeTensorsDType::F32, {2}, head.data()}});
  WeightStore w(twoParams(), device());
  CheckpointBinding binding;
  binding.parameterPrefixes = {"transformer.", "trunk."};
  binding.prefix = "reward.";
  // reward.head is no parameter: unexpected, unless allowed.
  expectError(
      [&] { w.bindFromSafeTensors(dir.file("two.safetensors"), binding); },
      {"unexpected tensor 'reward.head'"});
  binding.allowedExtra = {"head"};
  w.bindFromSafeTensors(dir.file("two.safetensors"), binding);
  EXPECT_EQ(values(w, 1), other.bias);
  binding.prefix = "critic.";
  w.bindFromSafeTensors(dir.file("two.safetensors"), binding);
  EXPECT_EQ(values(w, 1), c.bias);
  binding.prefix = "actor.";
  expectError(
      [&] { w.bindFromSafeTensors(dir.file("two.safetensors"), binding); },
      {"no tensor name starts with 'actor.'"});

  // A causal LM's names; the bias missing unless it may start at zero.
  writeSafeTensors(dir.file("lm.safetensors"), {{"transformer.layer.weight",
                                                 SafeTensorsDType::F32,
                                                 {2, 3},
                                                 c.weight.data()}});
  CheckpointBinding lm;
  lm.parameterPrefixes = {"transformer."};
  expectError([&] { w.bindFromSafeTensors(dir.file("lm.safetensors"), lm); },
              {"missing tensor 'layer.bias'"});
  lm.zeroIfMissing = {"layer.bias"};
  w.bindFromSafeTensors(dir.file("lm.safetensors"), lm);
  EXPECT_EQ(values(w, 0), c.weight);
  EXPECT_EQ(values(w, 1), std::vector<float>(3, 0.0f));
  lm.zeroIfMissing = {"lm_head.weight"};
  expectError([&] { w.bindFromSafeTensors(dir.file("lm.safetensors"), lm); },
              {"'lm_head.weight' may start at zero", "no such parameter"});

  // Two tensors of one parameter.
  writeCheckpoint(
      dir.file("both.safetensors"), c,
      {{"trunk.layer.bias", SafeTensorsDType::F32, {3}, other.bias.data()}});
  CheckpointBinding wrapped;
  wrapped.parameterPrefixes = {"trunk."};
  expectError(
      [&] { w.bindFromSafeTensors(dir.file("both.safetensors"), wrapped); },
      {"tensors 'layer.bias' and 'trunk.layer.bias' both hold parameter "
       "'layer.bias'"});
}

TEST_P(WeightStoreOnDevice, BindsTheGpt2Fixture) {
  std::string path = fixturesDir() + "/gpt2/model.safetensors";
  if (!fileExists(path))
    GTEST_SKIP() << "fixtures not found at " << fixturesDir();
  SafeTensorsFile file = SafeTensorsFile::open(path);
  std::vector<ParamDesc> params;
  for (const SafeTensorsEntry &e : file.entries())
    params.push_back({e.name, DType::F32, e.shape, ""});
  WeightStore w(params, device());
  w.bindFromSafeTensors(fixturesDir() + "/gpt2");
  size_t wpe = *w.find("transformer.wpe.weight");
  EXPECT_EQ(values(w, wpe), file.toF32(file.get("transformer.wpe.weight")));
  // Dropping a parameter makes its tensor unexpected.
  params.pop_back();
  WeightStore fewer(params, device());
  expectError([&] { fewer.bindFromSafeTensors(path); }, {"unexpected tensor"});
}

// Parameters of every dtype: checkpoints of another dtype convert on load
// (floats among floats, integers among integers, U8 to bool), and saving
// writes each parameter in its own dtype.
TEST_P(WeightStoreOnDevice, ConvertsCheckpointsToEveryParamDType) {
  TempDir dir;
  std::vector<ParamDesc> params = {
      {"w.bf16", DType::BF16, {3}, ""}, {"w.f16", DType::F16, {3}, ""},
      {"ids", DType::I32, {3}, ""},     {"ids64", DType::I64, {2}, ""},
      {"flag", DType::Bool, {2}, ""},   {"w.f32", DType::F32, {2}, ""}};
  std::vector<float> f32 = {1.0f, 3.14159f, -2.5f};
  std::vector<uint16_t> bf16 = {floatToBf16(0.5f), floatToBf16(-3.0f),
                                floatToBf16(1e-3f)};
  std::vector<int64_t> i64 = {1, -2, 70000};
  std::vector<int32_t> i32 = {-5, 1 << 30};
  std::vector<uint8_t> u8 = {0, 7};
  std::vector<uint16_t> f16 = {floatToF16(0.25f), floatToF16(-65504.0f)};
  writeSafeTensors(dir.file("mixed.safetensors"),
                   {{"w.bf16", SafeTensorsDType::F32, {3}, f32.data()},
                    {"w.f16", SafeTensorsDType::BF16, {3}, bf16.data()},
                    {"ids", SafeTensorsDType::I64, {3}, i64.data()},
                    {"ids64", SafeTensorsDType::I32, {2}, i32.data()},
                    {"flag", SafeTensorsDType::U8, {2}, u8.data()},
                    {"w.f32", SafeTensorsDType::F16, {2}, f16.data()}});
  WeightStore w(params, device());
  w.bindFromSafeTensors(dir.file("mixed.safetensors"));
  auto bits = [&](size_t i) { return read<uint16_t>(w, i); };
  EXPECT_EQ(bits(0),
            (std::vector<uint16_t>{floatToBf16(1.0f), floatToBf16(3.14159f),
                                   floatToBf16(-2.5f)}));
  EXPECT_EQ(bits(1), (std::vector<uint16_t>{floatToF16(0.5f), floatToF16(-3.0f),
                                            floatToF16(bf16ToFloat(bf16[2]))}));
  EXPECT_EQ(read<int32_t>(w, 2), (std::vector<int32_t>{1, -2, 70000}));
  EXPECT_EQ(read<int64_t>(w, 3), (std::vector<int64_t>{-5, 1 << 30}));
  EXPECT_EQ(read<uint8_t>(w, 4), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(values(w, 5), (std::vector<float>{0.25f, -65504.0f}));

  // Saved in their own dtypes, and bound back bit for bit.
  w.saveSafeTensors(dir.file("saved.safetensors"));
  SafeTensorsFile saved = SafeTensorsFile::open(dir.file("saved.safetensors"));
  EXPECT_EQ(saved.get("w.bf16").dtype, SafeTensorsDType::BF16);
  EXPECT_EQ(saved.get("w.f16").dtype, SafeTensorsDType::F16);
  EXPECT_EQ(saved.get("ids").dtype, SafeTensorsDType::I32);
  EXPECT_EQ(saved.get("ids64").dtype, SafeTensorsDType::I64);
  EXPECT_EQ(saved.get("flag").dtype, SafeTensorsDType::BOOL);
  EXPECT_EQ(saved.get("w.f32").dtype, SafeTensorsDType::F32);
  WeightStore back(params, device());
  back.bindFromSafeTensors(dir.file("saved.safetensors"));
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(read<uint8_t>(back, i), read<uint8_t>(w, i)) << i;
}

TEST_P(WeightStoreOnDevice, DTypeErrorsNameTheTensorAndBothDTypes) {
  TempDir dir;
  std::vector<ParamDesc> params = {{"w", DType::BF16, {2}, ""},
                                   {"ids", DType::I32, {2}, ""}};
  std::vector<int32_t> small = {1, 2};
  std::vector<int64_t> big = {1, int64_t(1) << 40};
  std::vector<float> f = {1, 2};
  writeSafeTensors(dir.file("ints.safetensors"),
                   {{"w", SafeTensorsDType::I32, {2}, small.data()},
                    {"ids", SafeTensorsDType::I32, {2}, small.data()}});
  writeSafeTensors(dir.file("floats.safetensors"),
                   {{"w", SafeTensorsDType::F32, {2}, f.data()},
                    {"ids", SafeTensorsDType::F32, {2}, f.data()}});
  writeSafeTensors(dir.file("big.safetensors"),
                   {{"w", SafeTensorsDType::F32, {2}, f.data()},
                    {"ids", SafeTensorsDType::I64, {2}, big.data()}});
  writeSafeTensors(dir.file("good.safetensors"),
                   {{"w", SafeTensorsDType::F32, {2}, f.data()},
                    {"ids", SafeTensorsDType::I32, {2}, small.data()}});
  WeightStore w(params, device());
  expectError([&] { w.bindFromSafeTensors(dir.file("ints.safetensors")); },
              {"tensor 'w' is I32, the bundle expects bf16"});
  expectError([&] { w.bindFromSafeTensors(dir.file("floats.safetensors")); },
              {"tensor 'ids' is F32, the bundle expects i32"});
  // Nothing was allocated for checkpoints that did not fit.
  EXPECT_FALSE(w.bound());
  expectError([&] { w.data(0); }, {"weights are not loaded"});
  w.bindFromSafeTensors(dir.file("good.safetensors"));
  // A value that does not fit i32 is found before anything is copied.
  expectError([&] { w.bindFromSafeTensors(dir.file("big.safetensors")); },
              {"tensor 'ids' holds 1099511627776 at element 1, which does "
               "not fit i32"});
  EXPECT_EQ(read<int32_t>(w, 1)[1], 2);
}

TEST_P(WeightStoreOnDevice, InitRandomFillsHalfPrecisionParams) {
  std::vector<ParamDesc> params = {{"proj.weight", DType::BF16, {8, 8}, ""},
                                   {"norm.weight", DType::F16, {8}, ""},
                                   {"proj.bias", DType::BF16, {8}, ""},
                                   {"pos", DType::I32, {4}, ""}};
  WeightStore w(params, device());
  w.initRandom(9);
  std::vector<uint16_t> proj = read<uint16_t>(w, 0);
  int nonzero = 0;
  for (int i = 0; i < 64; ++i) {
    float v = bf16ToFloat(proj[i]);
    EXPECT_LT(std::fabs(v), 0.2f);
    nonzero += v != 0;
  }
  EXPECT_GT(nonzero, 60);
  std::vector<uint16_t> norm = read<uint16_t>(w, 1),
                        bias = read<uint16_t>(w, 2);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(norm[i], floatToF16(1.0f));
    EXPECT_EQ(bias[i], 0);
  }
  // The same values as an f32 store, rounded.
  std::vector<ParamDesc> f32 = params;
  f32[0].dtype = DType::F32;
  WeightStore ref(f32, device());
  ref.initRandom(9);
  std::vector<float> r = values(ref, 0);
  for (int i = 0; i < 64; ++i)
    EXPECT_EQ(proj[i], floatToBf16(r[i]));
}
