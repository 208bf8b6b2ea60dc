// ONNX initializers: hand-written protobuf bytes covering every encoding the
// reader accepts, malformed files, binding, and the gpt2 fixture.
#include "ProtoWriter.h"
#include "TestSupport.h"

#include "hybrid/CpuDevice.h"
#include "hybrid/OnnxInitializers.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/WeightStore.h"

#include <cstring>
#include <random>

using namespace hybrid;
using namespace hybrid::test;

namespace {

OnnxInitializers parse(const Proto &m) {
  std::vector<uint8_t> b = m.vec();
  // Keep the bytes alive as long as the result: leak into a static list.
  static std::vector<std::vector<uint8_t>> keep;
  keep.push_back(std::move(b));
  return OnnxInitializers::parse(keep.back().data(), keep.back().size(),
                                 "test.onnx");
}

} // namespace

TEST(OnnxInitializers, ReadsEveryEncoding) {
  std::vector<float> raw = {1.5f, -2.f, 3.f, 4.f, 5.f, 6.f};
  Proto rawTensor;
  rawTensor.packedVarints(1, {2, 3})
      .varint(2, 1)
      .bytes(8, "w.raw")
      .bytes(9, std::string(reinterpret_cast<const char *>(raw.data()), 24));
  Proto packedFloats;
  packedFloats.varint(1, 3)
      .varint(2, 1)
      .packedFloats(4, {1, 2, 3})
      .bytes(8, "w.packed");
  Proto unpackedFloats;
  unpackedFloats.varint(1, 2).varint(2, 1).bytes(8, "w.unpacked");
  float a = 0.25f, b = -8.f;
  uint32_t ab, bb;
  std::memcpy(&ab, &a, 4);
  std::memcpy(&bb, &b, 4);
  unpackedFloats.fixed32(4, ab).fixed32(4, bb);
  Proto ints;
  ints.varint(1, 3)
      .varint(2, 7)
      .varint(7, 5)
      .varint(7, static_cast<uint64_t>(-6))
      .varint(7, 1ull << 40)
      .bytes(8, "ids");
  Proto halves; // FLOAT16 in int32_data
  halves.varint(1, 2)
      .varint(2, 10)
      .packedVarints(5, {0x3c00, 0xc000})
      .bytes(8, "h");
  Proto scalar; // no dims: a scalar
  scalar.varint(2, 7).bytes(8, "one").packedVarints(7, {1});
  Proto strings; // unsupported type, allowed while unused
  strings.varint(1, 1).varint(2, 8).bytes(6, "hello").bytes(8, "s");

  OnnxInitializers init =
      parse(onnxModel({rawTensor, packedFloats, unpackedFloats, ints, halves,
                       scalar, strings}));
  ASSERT_EQ(init.entries().size(), 7u);
  const OnnxInitializer *w = init.find("w.raw");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->shape, (Shape{2, 3}));
  EXPECT_EQ(w->dataType, 1);
  EXPECT_EQ(init.toF32(*w), raw);
  EXPECT_EQ(init.toF32(*init.find("w.packed")), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(init.toF32(*init.find("w.unpacked")), (std::vector<float>{a, b}));
  std::vector<int64_t> ids(3);
  init.convertInto(*init.find("ids"), DType::I64, ids.data());
  EXPECT_EQ(ids, (std::vector<int64_t>{5, -6, 1ll << 40}));
  EXPECT_EQ(init.toF32(*init.find("h")), (std::vector<float>{1, -2}));
  EXPECT_EQ(init.find("one")->shape, Shape{});
  expectError([&] { init.toF32(*init.find("s")); },
              {"initializer 's' is STRING, cannot be read as f32"});
  expectError([&] { init.toF32(*init.find("ids")); },
              {"initializer 'ids' is INT64, cannot be read as f32"});
}

TEST(OnnxInitializers, ReadsWhatTheElementTypeTableSays) {
  // UINT64 reads as i64 when its values fit, as the ONNX frontend folds it.
  Proto u64;
  u64.varint(1, 2).varint(2, 13).bytes(8, "u64").varint(11, 7).varint(
      11, uint64_t(1) << 62);
  Proto u64big;
  u64big.varint(1, 1)
      .varint(2, 13)
      .bytes(8, "u64big")
      .varint(11, uint64_t(1) << 63);
  Proto d; // DOUBLE reads as f32
  uint64_t bits;
  double half = 0.5;
  std::memcpy(&bits, &half, 8);
  d.varint(1, 1).varint(2, 11).bytes(8, "d").bytes(
      9, std::string(reinterpret_cast<const char *>(&bits), 8));
  Proto u8; // UINT8 is an integer type, not a bool
  u8.varint(1, 1).varint(2, 2).bytes(8, "u8").varint(5, 1);
  OnnxInitializers init = parse(onnxModel({u64, u64big, d, u8}));
  std::vector<int64_t> ints(2);
  init.convertInto(*init.find("u64"), DType::I64, ints.data());
  EXPECT_EQ(ints, (std::vector<int64_t>{7, int64_t(1) << 62}));
  expectError(
      [&] { init.convertInto(*init.find("u64big"), DType::I64, ints.data()); },
      {"initializer 'u64big' holds the UINT64 value 9223372036854775808, "
       "which does not fit in i64"});
  EXPECT_EQ(init.toF32(*init.find("d")), (std::vector<float>{0.5f}));
  bool b;
  expectError([&] { init.convertInto(*init.find("u8"), DType::Bool, &b); },
              {"initializer 'u8' is UINT8, cannot be read as bool"});
  EXPECT_EQ(onnxDataTypeName(13), "UINT64");
  EXPECT_EQ(onnxDataTypeName(99), "type 99");
}

TEST(OnnxInitializers, RejectsBadTensors) {
  Proto shortRaw;
  shortRaw.varint(1, 4).varint(2, 1).bytes(8, "w").bytes(9, "12345678");
  expectError([&] { parse(onnxModel({shortRaw})); },
              {"test.onnx", "initializer 'w': raw_data holds 8 bytes",
               "FLOAT [4] needs 16"});
  Proto fewFloats;
  fewFloats.varint(1, 4).varint(2, 1).bytes(8, "w").packedFloats(4, {1, 2});
  expectError([&] { parse(onnxModel({fewFloats})); },
              {"initializer 'w': float_data holds 2 values", "need 4"});
  Proto external;
  external.varint(1, 4)
      .varint(2, 1)
      .bytes(8, "big")
      .message(13, Proto().bytes(1, "location").bytes(2, "weights.bin"))
      .varint(14, 1);
  expectError([&] { parse(onnxModel({external})); },
              {"initializer 'big' keeps its data outside the model file"});
  Proto negative;
  negative.packedVarints(1, {-1}).varint(2, 1).bytes(8, "neg");
  expectError([&] { parse(onnxModel({negative})); },
              {"'neg' has invalid dims"});
  Proto unnamed;
  unnamed.varint(1, 0).varint(2, 1);
  expectError([&] { parse(onnxModel({unnamed})); },
              {"initializer 0 has no name"});
  Proto dup;
  dup.varint(1, 0).varint(2, 1).bytes(8, "d");
  expectError(
      [&] {
        parse(onnxModel({dup, dup}));
      },
      {"two initializers are named 'd'"});
}

namespace {

/// A FLOAT initializer of `n` elements whose bytes are external.
Proto externalTensor(
    const std::string &name, int64_t n,
    const std::vector<std::pair<std::string, std::string>> &entries) {
  Proto t;
  t.packedVarints(1, {n}).varint(2, 1).bytes(8, name);
  for (const auto &[key, value] : entries)
    t.message(13, Proto().bytes(1, key).bytes(2, value));
  t.varint(14, 1);
  return t;
}

} // namespace

TEST(OnnxInitializers, ReadsExternalData) {
  TempDir dir;
  std::vector<float> values = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> data(8, 0xee); // 8 bytes before the tensors
  const uint8_t *v = reinterpret_cast<const uint8_t *>(values.data());
  data.insert(data.end(), v, v + 24);
  std::system(("mkdir -p '" + dir.file("sub") + "'").c_str());
  writeBytes(dir.file("sub/w.bin"), data);
  writeBytes(dir.file("m.onnx"),
             onnxModel({externalTensor("a", 2,
                                       {{"location", "sub/w.bin"},
                                        {"offset", "8"},
                                        {"length", "8"}}),
                        // No length: the rest of the file.
                        externalTensor("b", 4,
                                       {{"location", "sub/w.bin"},
                                        {"offset", "16"},
                                        {"checksum", "ignored"}})})
                 .vec());
  OnnxInitializers init = OnnxInitializers::read(dir.file("m.onnx"));
  EXPECT_EQ(init.toF32(*init.find("a")), (std::vector<float>{1, 2}));
  EXPECT_EQ(init.toF32(*init.find("b")), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(init.dataFiles(),
            std::vector<std::string>{dir.file("sub/w.bin")}); // mapped once

  // A weight store binds from it like from inline data.
  WeightStore store({{"b", DType::F32, {4}, ""}},
                    std::make_shared<CpuDevice>());
  store.bindFromOnnx(dir.file("m.onnx"));
  const float *p = static_cast<const float *>(store.data(0));
  EXPECT_EQ(std::vector<float>(p, p + 4), (std::vector<float>{3, 4, 5, 6}));
}

TEST(OnnxInitializers, RejectsBadExternalData) {
  TempDir dir;
  writeBytes(dir.file("w.bin"), std::vector<uint8_t>(16, 0));
  auto model = [&](std::vector<std::pair<std::string, std::string>> entries) {
    writeBytes(dir.file("m.onnx"),
               onnxModel({externalTensor("w", 4, entries)}).vec());
    return dir.file("m.onnx");
  };
  auto rejects = [&](std::vector<std::pair<std::string, std::string>> entries,
                     const std::string &message) {
    std::string path = model(std::move(entries));
    expectError([&] { OnnxInitializers::read(path); },
                {"m.onnx: initializer 'w': " + message});
  };
  rejects({{"location", "missing.bin"}},
          "external data: " + dir.file("missing.bin") + ": cannot open");
  rejects({{"location", "w.bin"}, {"offset", "8"}, {"length", "16"}},
          "external data at offset 8 with length 16 runs past the end of "
          "'w.bin' (16 bytes)");
  rejects({{"location", "w.bin"}, {"offset", "17"}},
          "external data offset 17 is past the end of 'w.bin' (16 bytes)");
  rejects({{"location", "w.bin"}, {"length", "12"}},
          "external data holds 12 bytes, the tensor needs 16");
  rejects({{"location", "../w.bin"}},
          "external data location '../w.bin' leaves the model's folder");
  rejects({{"location", "a/../../w.bin"}},
          "external data location 'a/../../w.bin' leaves the model's folder");
  rejects({{"location", "a\\..\\w.bin"}},
          "external data location 'a\\..\\w.bin' leaves the model's folder");
  rejects({{"location", dir.file("w.bin")}},
          "external data location '" + dir.file("w.bin") +
              "' is an absolute path; it must be relative to the model's "
              "folder");
  rejects({{"offset", "0"}}, "external data has no location");
  rejects({{"location", "w.bin"}, {"offset", "-8"}},
          "external data offset '-8' is not a byte count");
  rejects({{"location", "w.bin"}, {"length", "99999999999999999999999"}},
          "external data length '99999999999999999999999' is not a byte count");
  // Bytes in memory have no folder to find the data file in.
  std::vector<uint8_t> bytes =
      onnxModel({externalTensor("w", 4, {{"location", "w.bin"}})}).vec();
  expectError(
      [&] { OnnxInitializers::parse(bytes.data(), bytes.size(), "mem"); },
      {"mem: initializer 'w' keeps its data outside the model file"});
}

TEST(OnnxInitializers, RejectsMalformedFiles) {
  TempDir dir;
  writeBytes(dir.file("empty.onnx"), {});
  expectError([&] { OnnxInitializers::read(dir.file("empty.onnx")); },
              {"empty.onnx", "not an ONNX model"});
  expectError([] { OnnxInitializers::read("/nonexistent/m.onnx"); },
              {"/nonexistent/m.onnx: cannot open"});
  Proto noGraph;
  noGraph.varint(1, 8).bytes(2, "x");
  expectError([&] { parse(noGraph); }, {"not an ONNX model (no graph)"});
  // Every truncation of a valid model is an error, never a crash.
  Proto t;
  t.packedVarints(1, {2, 2}).varint(2, 1).bytes(8, "w").packedFloats(
      4, {1, 2, 3, 4});
  std::vector<uint8_t> bytes = onnxModel({t}).vec();
  int rejected = 0;
  for (size_t n = 1; n < bytes.size(); ++n) {
    try {
      OnnxInitializers::parse(bytes.data(), n, "cut.onnx");
    } catch (const Error &e) {
      ++rejected;
      EXPECT_EQ(std::string(e.what()).rfind("cut.onnx: ", 0), 0u);
    }
  }
  EXPECT_GT(rejected, static_cast<int>(bytes.size()) / 2);
  // Random garbage and random damage: errors or harmless reads.
  std::mt19937 rng(3);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<uint8_t> g =
        trial % 2 ? bytes : std::vector<uint8_t>(rng() % 256);
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k)
      if (!g.empty())
        g[rng() % g.size()] = static_cast<uint8_t>(rng());
    try {
      OnnxInitializers init = OnnxInitializers::parse(g.data(), g.size(), "g");
      for (const OnnxInitializer &e : init.entries()) {
        std::vector<float> out(static_cast<size_t>(e.numel()));
        try {
          init.convertInto(e, DType::F32, out.data());
        } catch (const Error &) {
        }
      }
    } catch (const Error &) {
    }
  }
}

TEST(OnnxInitializers, BindsAWeightStoreByName) {
  TempDir dir;
  Proto w;
  w.packedVarints(1, {2}).varint(2, 1).bytes(8, "w").packedFloats(4, {7, 8});
  Proto unused;
  unused.varint(1, 1)
      .varint(2, 7)
      .bytes(8, "folded.shape")
      .packedVarints(7, {4});
  writeBytes(dir.file("m.onnx"), onnxModel({w, unused}).vec());
  WeightStore store({{"w", DType::F32, {2}, ""}},
                    std::make_shared<CpuDevice>());
  store.bindFromOnnx(dir.file("m.onnx"));
  const float *p = static_cast<const float *>(store.data(0));
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[1], 8);
  WeightStore missing({{"w", DType::F32, {2}, ""}, {"v", DType::F32, {2}, ""}},
                      std::make_shared<CpuDevice>());
  expectError([&] { missing.bindFromOnnx(dir.file("m.onnx")); },
              {"m.onnx", "missing initializer 'v'"});
  WeightStore shaped({{"w", DType::F32, {1, 2}, ""}},
                     std::make_shared<CpuDevice>());
  expectError([&] { shaped.bindFromOnnx(dir.file("m.onnx")); },
              {"initializer 'w' has shape [2], the bundle expects [1,2]"});
  WeightStore typed({{"folded.shape", DType::F32, {1}, ""}},
                    std::make_shared<CpuDevice>());
  expectError([&] { typed.bindFromOnnx(dir.file("m.onnx")); },
              {"'folded.shape' is INT64, cannot be read as f32"});

  // Parameters torch.onnx merged into one initializer read it (source);
  // one it dropped for being zero is zeros.
  ParamDesc merged{"w.copy", DType::F32, {2}, ""};
  merged.source = "w";
  ParamDesc dropped{"bias", DType::F32, {3}, ""};
  dropped.onnxZeros = true;
  WeightStore split({{"w", DType::F32, {2}, ""}, merged, dropped},
                    std::make_shared<CpuDevice>());
  split.bindFromOnnx(dir.file("m.onnx"));
  for (size_t i = 0; i < 2; ++i) {
    const float *q = static_cast<const float *>(split.data(i));
    EXPECT_EQ(std::vector<float>(q, q + 2), (std::vector<float>{7, 8}));
  }
  const float *zeros = static_cast<const float *>(split.data(2));
  EXPECT_EQ(std::vector<float>(zeros, zeros + 3),
            (std::vector<float>{0, 0, 0}));
  ParamDesc lost{"v.copy", DType::F32, {2}, ""};
  lost.source = "v";
  WeightStore noSource({lost}, std::make_shared<CpuDevice>());
  expectError([&] { noSource.bindFromOnnx(dir.file("m.onnx")); },
              {"missing initializer 'v' (bundle parameter 'v.copy', f32 [2])"});
  ParamDesc reshaped{"w.copy", DType::F32, {1, 2}, ""};
  reshaped.source = "w";
  WeightStore badShape({reshaped}, std::make_shared<CpuDevice>());
  expectError([&] { badShape.bindFromOnnx(dir.file("m.onnx")); },
              {"initializer 'w' (the source of parameter 'w.copy') has shape "
               "[2], the bundle expects [1,2]"});
}

TEST(OnnxInitializers, Gpt2FixtureMatchesSafeTensors) {
  std::string onnx = fixturesDir() + "/gpt2/model.onnx";
  std::string st = fixturesDir() + "/gpt2/model.safetensors";
  if (!fileExists(onnx) || !fileExists(st))
    GTEST_SKIP() << "fixtures not found at " << fixturesDir();
  OnnxInitializers init = OnnxInitializers::read(onnx);
  const OnnxInitializer *wpe = init.find("m.transformer.wpe.weight");
  ASSERT_TRUE(wpe) << "no m.transformer.wpe.weight in " << onnx;
  EXPECT_EQ(wpe->shape, (Shape{128, 64}));
  EXPECT_EQ(wpe->dataType, 1); // FLOAT
  SafeTensorsFile file = SafeTensorsFile::open(st);
  std::vector<float> expected = file.toF32(file.get("transformer.wpe.weight"));
  EXPECT_EQ(init.toF32(*wpe), expected);

  // The same through a weight store bound from the .onnx file.
  WeightStore store({{"m.transformer.wpe.weight", DType::F32, {128, 64}, ""}},
                    std::make_shared<CpuDevice>());
  store.bindFromOnnx(onnx);
  const float *p = static_cast<const float *>(store.data(0));
  EXPECT_EQ(std::vector<float>(p, p + expected.size()), expected);
}
