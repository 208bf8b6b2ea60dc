// Bundle files: round trips, and rejection of truncated, corrupt,
// wrong-version, garbage and semantically invalid bundles.
#include "TestBundles.h"
#include "TestSupport.h"

#include "hybrid/Bundle.h"

#include "bundle_generated.h"

#include <dirent.h>
#include <random>

using namespace hybrid;
using namespace hybrid::test;

namespace {

void expectSameExpr(const SymExpr &a, const SymExpr &b) { EXPECT_TRUE(a == b); }

void expectSameBundle(const BundleDesc &a, const BundleDesc &b) {
  EXPECT_EQ(a.producer, b.producer);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.tied, b.tied);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].dtype, b.params[i].dtype);
    EXPECT_EQ(a.params[i].shape, b.params[i].shape);
    EXPECT_EQ(a.params[i].layout, b.params[i].layout);
  }
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (size_t i = 0; i < a.constants.size(); ++i) {
    EXPECT_EQ(a.constants[i].dtype, b.constants[i].dtype);
    EXPECT_EQ(a.constants[i].shape, b.constants[i].shape);
    EXPECT_EQ(a.constants[i].data, b.constants[i].data);
  }
  ASSERT_EQ(a.executables.size(), b.executables.size());
  for (size_t x = 0; x < a.executables.size(); ++x) {
    const ExecutableDesc &ea = a.executables[x], &eb = b.executables[x];
    EXPECT_EQ(ea.name, eb.name);
    EXPECT_EQ(ea.symbols, eb.symbols);
    ASSERT_EQ(ea.buffers.size(), eb.buffers.size());
    for (size_t i = 0; i < ea.buffers.size(); ++i) {
      const BufferDesc &ba = ea.buffers[i], &bb = eb.buffers[i];
      EXPECT_EQ(ba.kind, bb.kind);
      EXPECT_EQ(ba.dtype, bb.dtype);
      EXPECT_EQ(ba.index, bb.index);
      EXPECT_EQ(ba.name, bb.name);
      expectSameExpr(ba.offset, bb.offset);
      ASSERT_EQ(ba.shape.size(), bb.shape.size());
      for (size_t d = 0; d < ba.shape.size(); ++d)
        expectSameExpr(ba.shape[d], bb.shape[d]);
    }
    ASSERT_EQ(ea.commands.size(), eb.commands.size());
    for (size_t i = 0; i < ea.commands.size(); ++i) {
      const CommandDesc &ca = ea.commands[i], &cb = eb.commands[i];
      EXPECT_EQ(ca.kernel, cb.kernel);
      EXPECT_EQ(ca.operands, cb.operands);
      EXPECT_EQ(ca.results, cb.results);
      EXPECT_EQ(ca.loc, cb.loc);
      ASSERT_EQ(ca.attrs.size(), cb.attrs.size());
      for (size_t k = 0; k < ca.attrs.size(); ++k) {
        EXPECT_EQ(ca.attrs[k].name, cb.attrs[k].name);
        EXPECT_EQ(ca.attrs[k].i, cb.attrs[k].i);
        EXPECT_EQ(ca.attrs[k].f, cb.attrs[k].f);
        EXPECT_EQ(ca.attrs[k].s, cb.attrs[k].s);
        EXPECT_EQ(ca.attrs[k].ints, cb.attrs[k].ints);
        EXPECT_EQ(ca.attrs[k].floats, cb.attrs[k].floats);
      }
    }
    ASSERT_EQ(ea.inputs.size(), eb.inputs.size());
    for (size_t i = 0; i < ea.inputs.size(); ++i) {
      EXPECT_EQ(ea.inputs[i].name, eb.inputs[i].name);
      EXPECT_EQ(ea.inputs[i].buffer, eb.inputs[i].buffer);
    }
    ASSERT_EQ(ea.outputs.size(), eb.outputs.size());
    for (size_t i = 0; i < ea.outputs.size(); ++i) {
      EXPECT_EQ(ea.outputs[i].name, eb.outputs[i].name);
      EXPECT_EQ(ea.outputs[i].buffer, eb.outputs[i].buffer);
    }
    expectSameExpr(ea.workspaceBytes, eb.workspaceBytes);
    EXPECT_EQ(ea.workspaceAlignment, eb.workspaceAlignment);
  }
}

/// normBundle() plus a second executable using every field: polynomial
/// sizes with powers and negative terms, all attribute kinds, I64/Bool.
BundleDesc richBundle() {
  BundleDesc b = normBundle();
  b.params.push_back({"pos.ids", DType::I64, {2, 3}, "transposed"});
  ConstantDesc mask;
  mask.dtype = DType::Bool;
  mask.shape = {3};
  mask.data = {1, 0, 1};
  b.constants.push_back(mask);
  ExecutableDesc e;
  e.name = "decode";
  std::vector<std::string> names;
  SymExpr size = SymExpr::parse("2*b*s*s - s + 7", names);
  e.symbols = names;
  e.buffers = {
      buffer(BufferKind::Input, DType::I64, {SymExpr::symbol(0)}, 0, "ids"),
      buffer(BufferKind::Constant, DType::Bool, {3}, 1, "mask"),
      buffer(BufferKind::Param, DType::I64, {2, 3}, 2, "pos.ids"),
      buffer(BufferKind::Workspace, DType::F32, {size}, -1, "tmp",
             SymExpr::parse("b*64", names, false)),
      buffer(BufferKind::Output, DType::F32, {size}, 0, "out"),
  };
  AttrDesc all;
  all.name = "everything";
  all.i = -42;
  all.f = 3.25;
  all.s = "tanh";
  all.ints = {1, -2, 1ll << 40};
  all.floats = {0.5, -1e-9};
  e.commands = {command("gelu", {0, 1, 2, -1}, {3}, {all}, "x.mlir:9:3"),
                command("copy", {3}, {4})};
  e.inputs = {{"ids", 0}};
  e.outputs = {{"out", 4}};
  e.workspaceBytes = SymExpr::parse("b*64 + 8*b*s*s", names, false);
  e.workspaceAlignment = 256;
  b.executables.push_back(e);
  b.tied = {"lm_head.weight"};
  return b;
}

std::vector<uint8_t> withChecksum(std::vector<uint8_t> bytes) {
  uint64_t sum = fnv1a64(bytes.data() + kBundleHeaderSize,
                         bytes.size() - kBundleHeaderSize);
  for (int i = 0; i < 8; ++i)
    bytes[24 + i] = static_cast<uint8_t>(sum >> (8 * i));
  return bytes;
}

BundleDesc parse(const std::vector<uint8_t> &bytes) {
  return parseBundle(bytes.data(), bytes.size(), "test.hyb");
}

} // namespace

TEST(Bundle, RoundTripInMemory) {
  BundleDesc b = richBundle();
  std::vector<uint8_t> bytes = serializeBundle(b);
  ASSERT_GT(bytes.size(), kBundleHeaderSize);
  EXPECT_EQ(std::string(reinterpret_cast<const char *>(bytes.data())),
            "HYBRIDC");
  expectSameBundle(b, parse(bytes));
}

TEST(Bundle, RoundTripThroughFileIsAtomic) {
  TempDir dir;
  BundleDesc b = richBundle();
  std::string path = dir.file("model.hyb");
  writeBundle(b, path);
  expectSameBundle(b, readBundle(path));
  // Overwrite in place; no temp file may be left behind.
  b.model = "renamed";
  writeBundle(b, path);
  EXPECT_EQ(readBundle(path).model, "renamed");
  DIR *d = opendir(dir.path().c_str());
  int files = 0;
  while (dirent *ent = readdir(d))
    files += ent->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(files, 1);
}

TEST(Bundle, EmptyBundleRoundTrips) {
  BundleDesc empty;
  expectSameBundle(empty, parse(serializeBundle(empty)));
}

TEST(Bundle, UnalignedBytesParse) {
  std::vector<uint8_t> bytes = serializeBundle(richBundle());
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  expectSameBundle(richBundle(),
                   parseBundle(shifted.data() + 1, bytes.size(), "shifted"));
}

TEST(Bundle, RejectsMissingFile) {
  expectError([] { readBundle("/nonexistent/x.hyb"); },
              {"/nonexistent/x.hyb", "cannot open"});
}

TEST(Bundle, RejectsDirectory) {
  TempDir dir;
  expectError([&] { readBundle(dir.path()); }, {"is a directory"});
}

TEST(Bundle, RejectsEmptyAndGarbage) {
  TempDir dir;
  writeBytes(dir.file("empty.hyb"), {});
  expectError([&] { readBundle(dir.file("empty.hyb")); },
              {"empty.hyb", "not a hybridc bundle"});
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<uint8_t> garbage(rng() % 4096);
    for (uint8_t &c : garbage)
      c = static_cast<uint8_t>(rng());
    expectError([&] { parse(garbage); }, {"test.hyb", "not a hybridc bundle"});
  }
}

TEST(Bundle, RejectsWrongVersion) {
  std::vector<uint8_t> bytes = serializeBundle(normBundle());
  bytes[8] = static_cast<uint8_t>(kBundleFormatVersion + 1);
  expectError(
      [&] { parse(bytes); },
      {"test.hyb",
       "bundle format version " + std::to_string(kBundleFormatVersion + 1),
       "this runtime reads " + std::to_string(kBundleFormatVersion),
       "recompile with this hybridc"});
}

TEST(Bundle, RejectsEveryTruncation) {
  std::vector<uint8_t> bytes = serializeBundle(richBundle());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::string msg;
    try {
      parseBundle(bytes.data(), n, "cut.hyb");
      ADD_FAILURE() << "accepted a bundle cut to " << n << " bytes";
    } catch (const Error &e) {
      msg = e.what();
    }
    EXPECT_EQ(msg.rfind("cut.hyb: ", 0), 0u) << msg;
    if (n >= kBundleHeaderSize)
      EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
}

TEST(Bundle, RejectsTrailingBytes) {
  std::vector<uint8_t> bytes = serializeBundle(normBundle());
  bytes.push_back(0);
  expectError([&] { parse(bytes); }, {"corrupt", "after the payload"});
}

TEST(Bundle, RejectsBitFlipsByChecksum) {
  std::vector<uint8_t> bytes = serializeBundle(richBundle());
  for (size_t i = kBundleHeaderSize; i < bytes.size(); i += 7) {
    std::vector<uint8_t> flipped = bytes;
    flipped[i] ^= 0x10;
    expectError([&] { parse(flipped); }, {"test.hyb", "corrupt", "checksum"});
  }
}

// With the checksum fixed up, damage must still be caught (by the FlatBuffers
// verifier or semantic validation) or be harmless; never a crash.
TEST(Bundle, SurvivesCorruptPayloadWithValidChecksum) {
  std::vector<uint8_t> bytes = serializeBundle(richBundle());
  std::mt19937 rng(11);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint8_t> bad = bytes;
    int flips = 1 + rng() % 4;
    for (int f = 0; f < flips; ++f) {
      size_t i = kBundleHeaderSize + rng() % (bad.size() - kBundleHeaderSize);
      bad[i] = static_cast<uint8_t>(rng());
    }
    bad = withChecksum(bad);
    try {
      BundleDesc b = parse(bad);
      validateBundle(b, "again"); // what parse accepted must be valid
    } catch (const Error &e) {
      ++rejected;
      EXPECT_EQ(std::string(e.what()).rfind("test.hyb: ", 0), 0u) << e.what();
    }
  }
  EXPECT_GT(rejected, 100);
}

TEST(Bundle, RejectsForeignFlatBuffer) {
  std::vector<uint8_t> bytes = serializeBundle(normBundle());
  bytes[kBundleHeaderSize + 4] = 'X'; // file identifier "HYB1" -> "XYB1"
  expectError([&] { parse(withChecksum(bytes)); }, {"corrupt", "HYB1"});
}

TEST(Bundle, ValidationRejectsBadConstantSize) {
  BundleDesc b = normBundle();
  b.constants[0].data.pop_back();
  expectError([&] { serializeBundle(b); },
              {"constant 0 holds 15 bytes", "f32 [4] needs 16"});
}

TEST(Bundle, ValidationRejectsBadIndices) {
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[2].index = 5;
    expectError([&] { validateBundle(b, "b"); },
                {"buffer 2 'ln.weight' refers to param 5 of 2"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[1].index = 1;
    expectError([&] { validateBundle(b, "b"); }, {"refers to constant 1 of 1"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].operands[1] = 99;
    expectError([&] { validateBundle(b, "b"); },
                {"command 0 'add' (test.mlir:1) reads buffer 99 of 10"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].results[0] = -1;
    expectError([&] { validateBundle(b, "b"); }, {"writes buffer -1"});
  }
}

TEST(Bundle, ValidationRejectsBadAliases) {
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[7].index = 7;
    expectError([&] { validateBundle(b, "b"); }, {"'v' aliases itself"});
  }
  {
    BundleDesc b = normBundle();
    auto &bufs = b.executables[0].buffers;
    bufs[6] = buffer(BufferKind::Alias, DType::F32, {4}, 7, "t2");
    expectError([&] { validateBundle(b, "b"); }, {"alias cycle"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[7].index = 10;
    expectError([&] { validateBundle(b, "b"); }, {"refers to buffer 10 of 10"});
  }
}

TEST(Bundle, ValidationRejectsBadSymbolsAndDTypes) {
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[4].shape[1] = SymExpr::symbol(3);
    expectError([&] { validateBundle(b, "b"); },
                {"'t0' dim 1 uses symbol #3 but there are 1 symbols"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].workspaceBytes = SymExpr::symbol(1);
    expectError([&] { validateBundle(b, "b"); },
                {"workspace size uses symbol #1"});
  }
  {
    BundleDesc b = normBundle();
    b.params[0].dtype = static_cast<DType>(9);
    expectError([&] { validateBundle(b, "b"); }, {"invalid dtype value 9"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].buffers[2].shape = {5};
    expectError([&] { validateBundle(b, "b"); },
                {"does not have the dtype and shape of param 'ln.weight'"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].workspaceAlignment = 48;
    expectError([&] { validateBundle(b, "b"); }, {"alignment 48"});
  }
}

TEST(Bundle, ValidationRejectsBadPortsAndWrites) {
  {
    BundleDesc b = normBundle();
    b.executables[0].outputs[0].buffer = 9;
    expectError([&] { validateBundle(b, "b"); }, {"output"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].inputs.push_back({"x", 4});
    expectError([&] { validateBundle(b, "b"); }, {"two inputs named 'x'"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].results = {1};
    expectError([&] { validateBundle(b, "b"); }, {"read-only (a constant)"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].results = {0};
    expectError([&] { validateBundle(b, "b"); }, {"read-only (an input)"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].kernel = "";
    expectError([&] { validateBundle(b, "b"); }, {"names no kernel"});
  }
  {
    BundleDesc b = normBundle();
    b.params.push_back(b.params[0]);
    expectError([&] { validateBundle(b, "b"); },
                {"duplicate param 'ln.weight'"});
  }
}

// FlatBuffers that pass the verifier but not semantic validation, framed
// by hand (serializeBundle refuses to write them).
TEST(Bundle, ParseRejectsSemanticErrorsWithFileName) {
  auto frame = [](flatbuffers::FlatBufferBuilder &fbb) {
    std::vector<uint8_t> out(kBundleHeaderSize);
    std::memcpy(out.data(), kBundleMagic, 8);
    out[8] = kBundleFormatVersion;
    uint64_t size = fbb.GetSize();
    for (int i = 0; i < 8; ++i)
      out[16 + i] = static_cast<uint8_t>(size >> (8 * i));
    out.insert(out.end(), fbb.GetBufferPointer(),
               fbb.GetBufferPointer() + size);
    return withChecksum(out);
  };
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<int64_t> shape = {4};
    std::vector<uint8_t> data = {1, 2, 3};
    std::vector<flatbuffers::Offset<fb::Constant>> constants = {
        fb::CreateConstantDirect(fbb, fb::DType_F32, &shape, &data)};
    fb::FinishBundleBuffer(
        fbb, fb::CreateBundleDirect(fbb, "p", "m", "s", nullptr, &constants));
    expectError([&] { parse(frame(fbb)); },
                {"test.hyb: invalid bundle: constant 0 holds 3 bytes"});
  }
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<int64_t> shape = {2};
    std::vector<flatbuffers::Offset<fb::Param>> params = {
        fb::CreateParamDirect(fbb, "w", static_cast<fb::DType>(7), &shape, "")};
    fb::FinishBundleBuffer(fbb,
                           fb::CreateBundleDirect(fbb, "p", "m", "s", &params));
    expectError(
        [&] { parse(frame(fbb)); },
        {"test.hyb: invalid bundle: param 0 'w' has invalid dtype value 7"});
  }
  {
    // A monomial naming symbol 200 of an executable with one symbol.
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<uint8_t> mono = {200};
    std::vector<flatbuffers::Offset<fb::Term>> terms = {
        fb::CreateTermDirect(fbb, 1, &mono)};
    auto expr = fb::CreateExprDirect(fbb, &terms);
    std::vector<flatbuffers::Offset<flatbuffers::String>> symbols = {
        fbb.CreateString("batch")};
    std::vector<flatbuffers::Offset<fb::Executable>> exes = {
        fb::CreateExecutableDirect(fbb, "forward", &symbols, nullptr, nullptr,
                                   nullptr, nullptr, expr)};
    fb::FinishBundleBuffer(
        fbb,
        fb::CreateBundleDirect(fbb, "p", "m", "s", nullptr, nullptr, &exes));
    expectError([&] { parse(frame(fbb)); },
                {"test.hyb: invalid bundle:", "uses symbol #200"});
  }
}
