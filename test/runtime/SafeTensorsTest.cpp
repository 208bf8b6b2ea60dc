// safetensors: round trips, conversions, the fixtures, and malformed files;
// and host tensors put side by side (concatColumns).
#include "TestSupport.h"

#include "hybrid/FileIO.h"
#include "hybrid/SafeTensors.h"

#include <cmath>
#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

using namespace hybrid;
using namespace hybrid::test;

namespace {

/// A safetensors file from a literal header and data section.
std::vector<uint8_t> rawFile(const std::string &header,
                             const std::vector<uint8_t> &data) {
  std::vector<uint8_t> out(8 + header.size() + data.size());
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty())
    std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

void expectOpenError(const TempDir &dir, const std::vector<uint8_t> &bytes,
                     std::vector<std::string> parts) {
  std::string path = dir.file("bad.safetensors");
  writeBytes(path, bytes);
  parts.insert(parts.begin(), path + ": ");
  expectError([&] { SafeTensorsFile::open(path); }, parts);
}

} // namespace

TEST(SafeTensors, WriteReadRoundTrip) {
  TempDir dir;
  std::vector<float> f = {1.5f, -2.f, 3.25f, 0.f, 1e-8f, -7.f};
  std::vector<int64_t> ids = {1, 2, -3, 1ll << 40};
  bool flags[3] = {true, false, true};
  std::string path = dir.file("t.safetensors");
  writeSafeTensors(path,
                   {{"weights", SafeTensorsDType::F32, {2, 3}, f.data()},
                    {"ids", SafeTensorsDType::I64, {4}, ids.data()},
                    {"mask", SafeTensorsDType::BOOL, {3}, flags},
                    {"empty", SafeTensorsDType::F32, {0, 5}, nullptr},
                    {"scalar", SafeTensorsDType::F32, {}, f.data()}},
                   {{"format", "pt"}, {"note", "round trip"}});
  std::vector<uint8_t> bytes = readBytes(path);
  uint64_t headerLen;
  std::memcpy(&headerLen, bytes.data(), 8);
  EXPECT_EQ(headerLen % 8, 0u) << "header must be padded to 8 bytes";

  SafeTensorsFile file = SafeTensorsFile::open(path);
  EXPECT_EQ(file.entries().size(), 5u);
  EXPECT_EQ(file.metadata().at("note"), "round trip");
  const SafeTensorsEntry &w = file.get("weights");
  EXPECT_EQ(w.dtype, SafeTensorsDType::F32);
  EXPECT_EQ(w.shape, (Shape{2, 3}));
  EXPECT_EQ(file.toF32(w), f);
  HostTensor t = file.toHost(file.get("ids"), DType::I64);
  EXPECT_EQ(t.toVector<int64_t>(), ids);
  HostTensor m = file.toHost(file.get("mask"), DType::Bool);
  EXPECT_EQ(m.toVector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(file.get("empty").bytes, 0u);
  EXPECT_EQ(file.get("scalar").shape, Shape{});
  EXPECT_EQ(file.toF32(file.get("scalar")), std::vector<float>{1.5f});
  EXPECT_EQ(file.find("nope"), nullptr);
  expectError([&] { file.get("nope"); }, {path, "no tensor 'nope'"});
}

// A checkpoint writer killed halfway through leaves the previous
// checkpoint whole and loadable: the bytes go to a temporary file that
// only a finished write renames over it.
TEST(SafeTensors, AWriterKilledMidWriteLeavesThePreviousCheckpoint) {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  HostTensor old = HostTensor::fromVector<float>({4}, {1, 2, 3, 4});
  writeSafeTensors(path, {{"w", old}});
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Half a new checkpoint, then it says so and waits to be killed.
    detail::writeFileAtomically(path, [&](const detail::ByteSink &write) {
      std::vector<uint8_t> junk(1 << 16, 0xab);
      write(junk.data(), junk.size());
      char c = 'x';
      if (::write(ready[1], &c, 1) != 1)
        ::_exit(2);
      for (;;)
        ::pause();
    });
    ::_exit(1); // not reached
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_TRUE(WIFSIGNALED(status));
  SafeTensorsFile f = SafeTensorsFile::open(path);
  ASSERT_NE(f.find("w"), nullptr);
  EXPECT_EQ(f.toHost(*f.find("w"), DType::F32).toVector<float>(),
            old.toVector<float>());
}

TEST(SafeTensors, WriteNamedHostTensors) {
  TempDir dir;
  NamedTensors ts;
  ts["a"] = HostTensor::fromVector<float>({2}, {1, 2});
  ts["b"] = HostTensor::fromVector<int64_t>({1, 1}, {9});
  writeSafeTensors(dir.file("n.safetensors"), ts);
  SafeTensorsFile f = SafeTensorsFile::open(dir.file("n.safetensors"));
  EXPECT_EQ(f.toF32(f.get("a")), (std::vector<float>{1, 2}));
  EXPECT_EQ(f.get("b").dtype, SafeTensorsDType::I64);
}

TEST(SafeTensors, WriterRejectsBadNames) {
  TempDir dir;
  float x = 1;
  expectError(
      [&] {
        writeSafeTensors(dir.file("x.safetensors"),
                         {{"a", SafeTensorsDType::F32, {1}, &x},
                          {"a", SafeTensorsDType::F32, {1}, &x}});
      },
      {"tensor 'a' given twice"});
  expectError(
      [&] {
        writeSafeTensors(dir.file("x.safetensors"),
                         {{"__metadata__", SafeTensorsDType::F32, {1}, &x}});
      },
      {"cannot write a tensor named '__metadata__'"});
}

TEST(HostTensor, ConcatColumnsPutsRowsSideBySide) {
  HostTensor prompt =
      HostTensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  HostTensor generated = HostTensor::fromVector<int64_t>({2, 2}, {7, 8, 9, 10});
  HostTensor all = concatColumns(prompt, generated);
  EXPECT_EQ(all.shape(), (Shape{2, 5}));
  EXPECT_EQ(all.toVector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3, 7, 8, 4, 5, 6, 9, 10}));
  HostTensor none = HostTensor::allocate(DType::I64, {2, 0});
  EXPECT_EQ(concatColumns(none, generated).toVector<int64_t>(),
            generated.toVector<int64_t>());
  expectError(
      [&] {
        concatColumns(prompt, HostTensor::allocate(DType::I64, {3, 1}));
      },
      {"concatColumns: want two [rows, n] tensors", "i64 [2,3]", "i64 [3,1]"});
  expectError(
      [&] {
        concatColumns(prompt, HostTensor::allocate(DType::F32, {2, 1}));
      },
      {"f32 [2,1]"});
}

TEST(SafeTensors, HalfAndBfloat16ConvertToF32) {
  TempDir dir;
  // 1.0, -2.0, 0.5, 65504 (max half), smallest subnormal, -0, inf
  std::vector<uint16_t> half = {0x3c00, 0xc000, 0x3800, 0x7bff,
                                0x0001, 0x8000, 0x7c00};
  // 1.0, -2.0, 3.140625
  std::vector<uint16_t> bf16 = {0x3f80, 0xc000, 0x4049};
  writeSafeTensors(dir.file("h.safetensors"),
                   {{"h", SafeTensorsDType::F16, {7}, half.data()},
                    {"b", SafeTensorsDType::BF16, {3}, bf16.data()}});
  SafeTensorsFile f = SafeTensorsFile::open(dir.file("h.safetensors"));
  std::vector<float> h = f.toF32(f.get("h"));
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], 0.5f);
  EXPECT_EQ(h[3], 65504.0f);
  EXPECT_EQ(h[4], std::ldexp(1.0f, -24));
  EXPECT_TRUE(h[5] == 0.0f && std::signbit(h[5]));
  EXPECT_TRUE(std::isinf(h[6]));
  EXPECT_EQ(f.toF32(f.get("b")), (std::vector<float>{1.0f, -2.0f, 3.140625f}));
  expectError([&] { f.toHost(f.get("h"), DType::I64); },
              {"tensor 'h' is F16, cannot be read as i64"});
}

TEST(SafeTensors, ReadsTheFixtures) {
  std::string path = fixturesDir() + "/gpt2/model.safetensors";
  if (!fileExists(path))
    GTEST_SKIP() << "fixtures not found at " << fixturesDir();
  SafeTensorsFile f = SafeTensorsFile::open(path);
  const SafeTensorsEntry &wpe = f.get("transformer.wpe.weight");
  EXPECT_EQ(wpe.shape, (Shape{128, 64}));
  EXPECT_EQ(wpe.dtype, SafeTensorsDType::F32);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  SafeTensorsFile ref =
      SafeTensorsFile::open(fixturesDir() + "/gpt2/ref.safetensors");
  EXPECT_EQ(ref.get("input_ids").dtype, SafeTensorsDType::I64);
  EXPECT_EQ(ref.get("logits").shape, (Shape{2, 16, 512}));
}

TEST(SafeTensors, AcceptsEmptyHeader) {
  TempDir dir;
  writeBytes(dir.file("e.safetensors"), rawFile("{}", {}));
  EXPECT_TRUE(
      SafeTensorsFile::open(dir.file("e.safetensors")).entries().empty());
}

TEST(SafeTensors, RejectsMalformedFiles) {
  TempDir dir;
  std::vector<uint8_t> eight(8, 0);
  expectOpenError(dir, {}, {"shorter than the 8-byte header length"});
  expectOpenError(dir, {1, 2, 3}, {"shorter than the 8-byte header length"});
  // Header length beyond the file.
  std::vector<uint8_t> big = rawFile("{}", {});
  big[0] = 0xff;
  big[1] = 0xff;
  expectOpenError(dir, big, {"header length 65535 exceeds the file"});
  std::vector<uint8_t> huge = rawFile("{}", {});
  huge[7] = 0x80;
  expectOpenError(dir, huge, {"exceeds the file"});
  expectOpenError(dir, rawFile("{\"a\": ", {}), {"bad JSON header"});
  expectOpenError(dir, rawFile("[1, 2]", {}), {"header is not a JSON object"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
              eight),
      {"tensor 'a'", "unsupported dtype 'F64'"});
  expectOpenError(dir,
                  rawFile(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", eight),
                  {"tensor 'a'", "missing or non-string dtype"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})",
              eight),
      {"tensor 'a'", "not a non-negative integer"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})",
              eight),
      {"tensor 'a'", "not a non-negative integer"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
              eight),
      {"tensor 'a'", "F32 [3] needs 12 bytes but data_offsets span 8"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})",
              eight),
      {"tensor 'a'", "outside the 8 data bytes"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})",
              eight),
      {"tensor 'a'", "outside"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", eight),
      {"tensor 'a'", "data_offsets must be two non-negative integers"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
              R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              eight),
      {"tensors 'a' and 'b' overlap"});
  expectOpenError(
      dir,
      rawFile(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
              R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
              eight),
      {"names 'a' twice"});
  expectOpenError(dir, rawFile(R"({"__metadata__":{"k":1}})", {}),
                  {"__metadata__ value of 'k' is not a string"});
  expectOpenError(dir, rawFile(R"({"a":7})", {}),
                  {"tensor 'a': header entry is not a JSON object"});
  expectOpenError(
      dir,
      rawFile(
          R"({"a":{"dtype":"U8","shape":[4611686018427387904,4],"data_offsets":[0,8]}})",
          eight),
      {"tensor 'a'", "too large"});
}

TEST(SafeTensors, TruncatedCopiesOfAValidFileNeverCrash) {
  TempDir dir;
  std::vector<float> f(32, 1.f);
  writeSafeTensors(dir.file("ok.safetensors"),
                   {{"a", SafeTensorsDType::F32, {32}, f.data()},
                    {"b", SafeTensorsDType::F32, {4, 4}, f.data()}});
  std::vector<uint8_t> bytes = readBytes(dir.file("ok.safetensors"));
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    writeBytes(dir.file("cut.safetensors"), cut);
    EXPECT_THROW(SafeTensorsFile::open(dir.file("cut.safetensors")), Error)
        << "accepted " << n << " of " << bytes.size() << " bytes";
  }
}

TEST(SafeTensors, MissingFileNamesThePath) {
  expectError([] { SafeTensorsFile::open("/nonexistent/w.safetensors"); },
              {"/nonexistent/w.safetensors: cannot open"});
}

TEST(SafeTensors, EveryRuntimeDTypeRoundTripsNatively) {
  TempDir dir;
  NamedTensors ts;
  ts["f32"] = HostTensor::fromVector<float>({2}, {1.5f, -2.f});
  ts["bf16"] = HostTensor::fromFloats(DType::BF16, {3}, {1.0f, -0.5f, 3.0f});
  ts["f16"] = HostTensor::fromFloats(DType::F16, {2}, {0.25f, 65504.f});
  ts["i32"] = HostTensor::fromVector<int32_t>({2}, {-7, 1 << 30});
  ts["i64"] = HostTensor::fromVector<int64_t>({1}, {1ll << 40});
  ts["bool"] = HostTensor::fromVector<bool>({2}, {true, false});
  writeSafeTensors(dir.file("all.safetensors"), ts);
  SafeTensorsFile f = SafeTensorsFile::open(dir.file("all.safetensors"));
  for (auto &[name, t] : ts) {
    const SafeTensorsEntry &e = f.get(name);
    ASSERT_EQ(toDType(e.dtype), t.dtype()) << name;
    HostTensor back = f.toHost(e, t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(std::memcmp(back.data(), t.data(), t.bytes()), 0) << name;
  }
  EXPECT_EQ(f.toHost(f.get("bf16"), DType::BF16).toFloats(),
            (std::vector<float>{1.0f, -0.5f, 3.0f}));
  // Floats convert among float dtypes, rounding to nearest even.
  EXPECT_EQ(f.toHost(f.get("f32"), DType::BF16).toFloats(),
            (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(f.toHost(f.get("f16"), DType::F32).toVector<float>(),
            (std::vector<float>{0.25f, 65504.f}));
  EXPECT_EQ(f.toHost(f.get("i32"), DType::I64).toVector<int64_t>(),
            (std::vector<int64_t>{-7, 1 << 30}));
  expectError([&] { f.toHost(f.get("i64"), DType::I32); },
              {"tensor 'i64' holds 1099511627776 at element 0, which does "
               "not fit i32"});
  expectError([&] { f.toHost(f.get("bool"), DType::F16); },
              {"tensor 'bool' is BOOL, cannot be read as f16"});
  EXPECT_EQ(toDType(SafeTensorsDType::U8), std::nullopt);
}
