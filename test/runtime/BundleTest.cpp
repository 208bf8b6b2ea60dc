// Bundle files: round trips of every field and op, and rejection of
// truncated, corrupt, wrong-version, garbage and semantically invalid
// bundles (access rules included).
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
  EXPECT_EQ(a.checkpointPrefixes, b.checkpointPrefixes);
  EXPECT_EQ(a.checkpointExtras, b.checkpointExtras);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].dtype, b.params[i].dtype);
    EXPECT_EQ(a.params[i].shape, b.params[i].shape);
    EXPECT_EQ(a.params[i].layout, b.params[i].layout);
    EXPECT_EQ(a.params[i].source, b.params[i].source);
    EXPECT_EQ(a.params[i].onnxZeros, b.params[i].onnxZeros);
    EXPECT_EQ(a.params[i].shard.has_value(), b.params[i].shard.has_value());
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
      EXPECT_EQ(ca.op.index(), cb.op.index());
      EXPECT_EQ(opName(ca.op), opName(cb.op));
      EXPECT_EQ(ca.operands, cb.operands);
      EXPECT_EQ(ca.results, cb.results);
      EXPECT_EQ(ca.stream, cb.stream);
      EXPECT_EQ(ca.loc, cb.loc);
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
    EXPECT_EQ(ea.symbolMax, eb.symbolMax);
    EXPECT_EQ(ea.paramAccess, eb.paramAccess);
    ASSERT_EQ(ea.states.size(), eb.states.size());
    for (size_t i = 0; i < ea.states.size(); ++i) {
      EXPECT_EQ(ea.states[i].state, eb.states[i].state);
      EXPECT_EQ(ea.states[i].access, eb.states[i].access);
    }
    EXPECT_EQ(ea.communicators, eb.communicators);
    EXPECT_EQ(ea.numStreams, eb.numStreams);
    EXPECT_EQ(ea.numEvents, eb.numEvents);
  }
  ASSERT_EQ(a.states.size(), b.states.size());
  for (size_t i = 0; i < a.states.size(); ++i) {
    EXPECT_EQ(a.states[i].name, b.states[i].name);
    EXPECT_EQ(a.states[i].dtype, b.states[i].dtype);
    EXPECT_EQ(a.states[i].shard.has_value(), b.states[i].shard.has_value());
  }
  EXPECT_EQ(a.worldSize, b.worldSize);
  EXPECT_EQ(a.zeroStage, b.zeroStage);
  // Everything else (every op attribute) through the encoding, which is
  // deterministic: equal bundles give equal bytes.
  EXPECT_EQ(serializeBundle(a), serializeBundle(b));
}

/// normBundle() plus a second executable using every field and every op
/// family: polynomial sizes with powers and negative terms, states with both
/// accesses, streams and events, a communicator, optional operands left out,
/// I64/Bool/BF16 buffers.
BundleDesc richBundle() {
  BundleDesc b = normBundle();
  b.params.push_back({"pos.ids", DType::I64, {2, 3}, "transposed"});
  b.params.push_back({"scale", DType::BF16, {3}, ""});
  // Parameters of a torch.onnx export that has merged or dropped them.
  ParamDesc merged{"h.1.ln.weight", DType::F32, {3}, ""};
  merged.source = "h.0.ln.weight";
  b.params.push_back(merged);
  ParamDesc dropped{"h.0.fc.bias", DType::F32, {3}, ""};
  dropped.onnxZeros = true;
  b.params.push_back(dropped);
  b.states = {{"kv", DType::F32}, {"step", DType::I32}};
  ConstantDesc mask;
  mask.dtype = DType::Bool;
  mask.shape = {3};
  mask.data = {1, 0, 1};
  b.constants.push_back(mask);
  ExecutableDesc e;
  e.name = "decode";
  std::vector<std::string> names;
  SymExpr size = *SymExpr::parseAddingNames("2*b*s*s - s + 7", names);
  e.symbols = names;
  e.symbolMax = {8, 0};
  SymExpr bs = SymExpr::symbol(0), ss = SymExpr::symbol(1);
  e.buffers = {
      buffer(BufferKind::Input, DType::I64, {ss}, 0, "ids", 0),    // 0
      buffer(BufferKind::Constant, DType::Bool, {3}, 1, "mask"),   // 1
      buffer(BufferKind::Param, DType::I64, {2, 3}, 2, "pos.ids"), // 2
      buffer(BufferKind::Workspace, DType::F32, {size}, -1, "tmp", // 3
             *SymExpr::parse("b*256", names)),
      buffer(BufferKind::Output, DType::F32, {size}, 0, "out", 0),   // 4
      buffer(BufferKind::State, DType::F32, {size}, 0, "kv"),        // 5
      buffer(BufferKind::Workspace, DType::F32, {2, 3}, -1, "t", 0), // 6
      buffer(BufferKind::State, DType::I32, {}, 1, "step"),          // 7
      buffer(BufferKind::Param, DType::BF16, {3}, 3, "scale"),       // 8
      buffer(BufferKind::Alias, DType::F32, {3, 2}, 6, "t.view"),    // 9
  };
  e.states = {{0, Access::ReadWrite}, {1, Access::Read}};
  e.paramAccess = Access::ReadWrite;
  e.communicators = {"world"};
  e.numStreams = 2;
  e.numEvents = 1;
  ops::Clip clip;
  clip.min = -1.5;
  e.commands = {
      command(ops::Unary{UnaryKind::GeluTanh}, {0}, {3}, "x.mlir:9:3"),
      command(clip, {3}, {3}),
      command(ops::Transpose{{1, 0}}, {6}, {9}),
      command(ops::Slice{{0}, {0}, {1}, {1}}, {6}, {6}),
      command(ops::Reduce{ReduceKind::Mean, {1}, false}, {6}, {3}),
      command(ops::Collective{CollectiveKind::AllReduce, 0}, {3}, {5}, "", 1),
      command(ops::RecordEvent{0}, {}, {}, "", 1),
      command(ops::WaitEvent{0}, {}, {}),
      command(ops::LayerNorm{1e-6, -1}, {3, -1, -1}, {4}),
      command(ops::Attention{0.125, true, 4},
              {3, 3, 3, -1, -1, -1, -1, -1, -1, -1}, {4}),
      command(ops::Attention{0.125, true, 0, true},
              {3, 5, 5, -1, -1, -1, -1, 3, 3, 0}, {4, 5, 5}),
      command(ops::Concat{0}, {3, 3}, {4}),
      command(ops::Fill{2.5}, {}, {6}),
      command(ops::Iota{1, 2}, {}, {3}),
      command(ops::Binary{BinaryKind::Xor}, {1, 1}, {4}),
      command(ops::Cast{}, {8}, {2}),
      command(ops::Softmax{-1, true}, {3}, {4}),
      command(ops::CumSum{0, true, true}, {3}, {4}),
      command(ops::Trilu{false, -1}, {6}, {6}),
      command(ops::Gather{1}, {6, 0}, {4}),
      command(ops::GatherNd{0}, {6, 0}, {4}),
      command(ops::Rotary{true}, {3, 3, 3}, {4}),
      command(ops::RmsNorm{1e-6, 0}, {3, -1}, {4}),
      command(ops::Linear{false}, {3, 6, -1, -1, -1, -1}, {4}),
      command(ops::LinearGroup{false, Activation::Relu, {0, 1}, {1, 2}},
              {3, 6, -1, 6, -1}, {4, 5}),
      command(ops::MatMul{}, {6, 6}, {4}),
      command(ops::Embedding{}, {6, 0}, {4}),
      command(ops::Select{}, {1, 3, 3}, {4}),
      command(ops::BroadcastTo{}, {3}, {4}),
      command(ops::Copy{}, {3}, {4}),
      command(ops::SampleStep{}, {3, 0, 3, 0, 0, 1, 0}, {4, 5, 4, 6, 3, 3, 3}),
      command(ops::AdamWUpdate{}, {3, 4, 5, 6, 3, 3, 3, 3, 3, 3}, {3, 5, 6}),
      command(ops::AdamWUpdate{true}, {3, 8, 5, 6, 3, 3, 3, 3, 3, 3},
              {3, 5, 6, 8}),
      command(ops::AttentionGrad{0.5, true, 3}, {3, 5, 5, 3, -1, 3, 0},
              {4, 5, 6}),
      command(ops::LayerNormGrad{1e-6, 1}, {6, -1, 6}, {6, 3, 3}),
      command(ops::LabelLogProbs{}, {6, 0}, {3}),
      command(ops::LabelLogProbsGrad{}, {6, 0, 3}, {6}),
      command(ops::EmbeddingGrad{}, {0, 6}, {6}),
      command(ops::ActivationGrad{Activation::Silu}, {3, 3}, {4}),
  };
  e.inputs = {{"ids", 0}};
  e.outputs = {{"out", 4}};
  e.workspaceBytes = *SymExpr::parse("b*256 + 8*b*s*s", names);
  e.workspaceAlignment = 512;
  b.executables.push_back(e);
  b.tied = {"lm_head.weight"};
  b.checkpointPrefixes = {"transformer.", "trunk."};
  b.checkpointExtras = {"lm_head.weight"};
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
  const BundleDesc back = parse(bytes);
  expectSameBundle(b, back);
  // (The linear group is in the last executable: a check over the first
  // one never saw it.)
  int groups = 0;
  for (const CommandDesc &c : back.executables.back().commands)
    if (const auto *group = std::get_if<ops::LinearGroup>(&c.op)) {
      EXPECT_FALSE(group->transposeWeight);
      EXPECT_EQ(group->activation, Activation::Relu);
      EXPECT_EQ(group->featureBegins, (std::vector<int64_t>{0, 1}));
      EXPECT_EQ(group->featureEnds, (std::vector<int64_t>{1, 2}));
      ++groups;
    }
  EXPECT_EQ(groups, 1);
  int activationGrads = 0;
  for (const CommandDesc &c : back.executables.back().commands)
    if (const auto *grad = std::get_if<ops::ActivationGrad>(&c.op)) {
      EXPECT_EQ(grad->activation, Activation::Silu);
      ++activationGrads;
    }
  EXPECT_EQ(activationGrads, 1);
}

TEST(Bundle, LoraRoundTripsAndIsValidated) {
  BundleDesc b = richBundle();
  b.params.push_back({"h.0.fc.weight", DType::F32, {3, 2}, ""});
  b.params.push_back(
      {"base_model.model.h.0.fc.lora_A.weight", DType::F32, {1, 2}, ""});
  b.params.push_back(
      {"base_model.model.h.0.fc.lora_B.weight", DType::F32, {3, 1}, ""});
  b.lora.rank = 1;
  b.lora.alpha = 8;
  b.lora.targetModules = {"fc"};
  b.lora.onlyOptimize = true;
  b.lora.adapters.push_back({"h.0.fc", "h.0.fc.weight",
                             "base_model.model.h.0.fc.lora_A.weight",
                             "base_model.model.h.0.fc.lora_B.weight", false});
  const BundleDesc back = parse(serializeBundle(b));
  expectSameBundle(b, back);
  EXPECT_EQ(back.lora.rank, 1);
  EXPECT_EQ(back.lora.alpha, 8);
  EXPECT_EQ(back.lora.targetModules, b.lora.targetModules);
  EXPECT_TRUE(back.lora.onlyOptimize);
  EXPECT_FALSE(back.lora.fusedGeneration);
  ASSERT_EQ(back.lora.adapters.size(), 1u);
  EXPECT_EQ(back.lora.adapters[0].module, "h.0.fc");
  EXPECT_EQ(back.lora.adapters[0].loraB,
            "base_model.model.h.0.fc.lora_B.weight");
  // A Conv1D weight is [in, out]: the same A and B no longer fit it.
  BundleDesc wrong = b;
  wrong.lora.adapters[0].fanInFanOut = true;
  expectError([&] { serializeBundle(wrong); },
              {"LoRA adapter of 'h.0.fc.weight' [3,2]: lora_A [1,2], "
               "lora_B [3,1] (expected [1, 3] and [2, 1])"});
  BundleDesc fused = b;
  fused.lora.fusedGeneration = true;
  expectError([&] { serializeBundle(fused); },
              {"fused LoRA generation without @lora_fuse"});
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
       "this runtime reads version " + std::to_string(kBundleFormatVersion),
       "recompile it with hybridc"});
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
    b.params[0].source = "w";
    b.params[0].onnxZeros = true;
    expectError([&] { validateBundle(b, "b"); },
                {"param 0 'ln.weight' is zeros in ONNX and also read from "
                 "initializer 'w'"});
  }
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
    b.params.push_back(b.params[0]);
    expectError([&] { validateBundle(b, "b"); },
                {"duplicate param 'ln.weight'"});
  }
}

TEST(Bundle, ValidationChecksOpsAgainstTheirOperands) {
  auto reject = [](auto change, std::vector<std::string> parts) {
    BundleDesc b = normBundle();
    change(b.executables[0]);
    expectError([&] { validateBundle(b, "b"); }, parts);
  };
  reject([](ExecutableDesc &e) { e.commands[0].operands = {0}; },
         {"command 0 'add' (test.mlir:1) has 1 operands, the op takes 2"});
  reject([](ExecutableDesc &e) { e.commands[0].results = {}; },
         {"has 0 results, the op writes 1"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::SampleStep{}, {4, 4, 4, 4, 4, 4, 4}, {5}));
      },
      {"'sample_step'", "has 1 results, the op writes 7"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::AdamWUpdate{},
                                     {4, 4, 4, 4, 4, 4, 4, 4, 4}, {4, 4, 4}));
      },
      {"'adamw_update'", "has 9 operands, the op takes 10"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::AdamWUpdate{}, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, {4}));
      },
      {"'adamw_update'", "has 1 results, the op writes 3"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(
            ops::AdamWUpdate{true}, {4, 4, 4, 4, 4, 4, 4, 4, 4, 4}, {4, 4, 4}));
      },
      {"'adamw_update'", "has 3 results, the op writes 4"});
  // Only an optional operand may be left out (-1).
  reject(
      [](ExecutableDesc &e) {
        e.commands[1].operands = {-1, 2, 3};
      },
      {"command 1 'layer_norm'", "leaves operand 0 out"});
  reject(
      [](ExecutableDesc &e) {
        e.commands[0].operands = {0, -1};
      },
      {"leaves operand 1 out, which the op requires"});
  reject(
      [](ExecutableDesc &e) { e.commands[0].op = ops::Binary{BinaryKind(77)}; },
      {"invalid kind value 77"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Transpose{{0, 0}}, {4}, {5}));
      },
      {"'transpose'", "does not permute the 2 dims"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Softmax{2, false}, {4}, {5}));
      },
      {"'softmax' has axis 2 for rank 2"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Slice{{0}, {0}, {}, {}}, {4}, {5}));
      },
      {"axes, starts, ends and steps of different lengths"});
  // A linear group has one result per feature range, and ranges that are
  // ranges; only the members' biases may be left out.
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(
            ops::LinearGroup{true, Activation::None, {0, 0}, {1}}, {4}, {5}));
      },
      {"'linear_group' has 2 feature begins and 1 ends"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::LinearGroup{true, Activation::None, {2}, {2}},
                    {4, 4, -1}, {5}));
      },
      {"'linear_group' member 0 has features [2, 2)"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::LinearGroup{true, Activation::None, {0, 0}, {1, 1}},
                    {4, 4, -1, 4, -1}, {5}));
      },
      {"has 1 results, the op writes 2"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::LinearGroup{true, Activation::None, {0}, {1}},
                    {4, -1, -1}, {5}));
      },
      {"leaves operand 1 out, which the op requires"});
  reject([](ExecutableDesc &e) { e.commands[0].stream = 1; },
         {"runs on stream 1 of 1"});
  // An attention appends exactly when it is given what to append, into the
  // caches it reads (its second and third results).
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Attention{1, true},
                                     {4, 4, 4, -1, -1, -1, -1, 4, 4, 0}, {5}));
      },
      {"'attention'", "gives appended keys but does not append"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Attention{1, true, 0, true},
                                     {4, 4, 4, -1, -1, -1, -1, -1, 4, 0},
                                     {5, 4, 4}));
      },
      {"leaves operand 7 out, which the op requires"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Attention{1, true, 0, true},
                                     {4, 4, 4, -1, -1, -1, -1, 4, 4, 0},
                                     {5, 5, 4}));
      },
      {"appends to other buffers than its key and value"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::Attention{1, true, 0, true},
                                     {4, 4, 4, -1, -1, -1, -1, 4, 4, 0}, {5}));
      },
      {"has 1 results, the op writes 3"});
  // Attention's backward writes three gradients; only its masks and
  // slopes are optional.
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::AttentionGrad{1, true},
                                     {4, 4, 4, 4, -1, -1, -1}, {5}));
      },
      {"'attention_grad'", "has 1 results, the op writes 3"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::AttentionGrad{1, true},
                                     {4, 4, 4, -1, -1, -1, -1}, {5, 5, 5}));
      },
      {"leaves operand 3 out, which the op requires"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::AttentionGrad{1, false, -2},
                                     {4, 4, 4, 4, -1, -1, -1}, {5, 5, 5}));
      },
      {"'attention_grad'", "has sliding window -2"});
  // Layer norm's backward writes three gradients; only its weight is
  // optional, and its axis indexes the input.
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::LayerNormGrad{}, {4, -1, 4}, {5}));
      },
      {"'layer_norm_grad'", "has 1 results, the op writes 3"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::LayerNormGrad{}, {4, 4, -1}, {5, 5, 5}));
      },
      {"leaves operand 2 out, which the op requires"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::LayerNormGrad{1e-5, 2}, {4, -1, 4}, {5, 5, 5}));
      },
      {"'layer_norm_grad' has axis 2 for rank 2"});
  // The cross-entropy and embedding gradient take every operand.
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::LabelLogProbsGrad{}, {4, 4}, {5}));
      },
      {"'label_log_probs_grad'", "has 2 operands, the op takes 3"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::EmbeddingGrad{}, {4, -1}, {5}));
      },
      {"leaves operand 1 out, which the op requires"});
  // An activation's backward takes the input and grad_out, and names an
  // activation.
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::ActivationGrad{Activation::Relu}, {4}, {5}));
      },
      {"'activation_grad'", "has 1 operands, the op takes 2"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::ActivationGrad{Activation::None}, {4, 4}, {5}));
      },
      {"'activation_grad'", "has activation none"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::ActivationGrad{Activation(9)}, {4, 4}, {5}));
      },
      {"has invalid kind value 9"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(command(ops::RecordEvent{0}, {}, {}));
      },
      {"'record_event' uses event 0 of 0"});
  reject(
      [](ExecutableDesc &e) {
        e.commands.push_back(
            command(ops::Collective{CollectiveKind::AllGather, 0}, {4}, {5}));
      },
      {"'all_gather' uses communicator 0 of 0"});
  reject([](ExecutableDesc &e) { e.numStreams = 0; }, {"has 0 streams"});
  reject([](ExecutableDesc &e) { e.numEvents = 1 << 20; },
         {"has 1048576 events"});
  reject([](ExecutableDesc &e) { e.symbolMax = {}; },
         {"has 0 symbol limits for 1 symbols"});
  reject([](ExecutableDesc &e) { e.paramAccess = Access(5); },
         {"invalid access value 5"});
  // An alias may not be larger than what it aliases, for any batch.
  reject(
      [](ExecutableDesc &e) {
        e.buffers[7].shape = {SymExpr::symbol(0), 4, 2};
        e.buffers[8].shape = {SymExpr::symbol(0), 4, 2};
      },
      {"buffer 7 'v' (32*batch bytes) may not fit in buffer 6 't2' "
       "(16*batch bytes)"});
}

// Access: what a command writes, followed through aliases to the buffer
// with memory, must be writable for this executable.
TEST(Bundle, ValidationEnforcesAccess) {
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].results = {0};
    expectError([&] { validateBundle(b, "b"); },
                {"b: invalid bundle: executable 'forward' command 0 'add' "
                 "(test.mlir:1) writes buffer 0 'x', which is read-only (an "
                 "input)"});
  }
  {
    // Through an alias of the input.
    BundleDesc b = normBundle();
    ExecutableDesc &e = b.executables[0];
    e.buffers.push_back(buffer(BufferKind::Alias, DType::F32,
                               {SymExpr::symbol(0), 2, 2}, 0, "x.view"));
    e.commands[3].results = {10};
    expectError([&] { validateBundle(b, "b"); },
                {"writes buffer 10 'x.view', which is read-only (an input)"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[0].results = {1};
    expectError([&] { validateBundle(b, "b"); },
                {"writes buffer 1 'c', which is read-only (a constant)"});
  }
  {
    BundleDesc b = normBundle();
    b.executables[0].commands[4].results = {2};
    expectError([&] { validateBundle(b, "b"); },
                {"command 4 'copy' (test.mlir:5) writes buffer 2 'ln.weight', "
                 "which is read-only (param 'ln.weight'; the executable's "
                 "param access is read)"});
    b.executables[0].paramAccess = Access::ReadWrite;
    EXPECT_NO_THROW(validateBundle(b, "b"));
  }
  {
    BundleDesc b = stateBundle();
    ExecutableDesc &read = b.executables[1];
    read.commands[0].results = {1}; // acc, declared read
    expectError([&] { validateBundle(b, "b"); },
                {"executable 'read' command 0 'mul' (state.mlir:9) writes "
                 "buffer 1 'acc', which is read-only (state 'acc' is declared "
                 "read)"});
  }
  {
    BundleDesc b = stateBundle();
    b.executables[1].states.clear(); // uses acc without declaring it
    expectError([&] { validateBundle(b, "b"); },
                {"executable 'read' buffer 1 'acc' uses state 'acc', which "
                 "the executable does not declare"});
  }
  {
    BundleDesc b = stateBundle();
    b.executables[0].states.push_back({0, Access::Read});
    expectError([&] { validateBundle(b, "b"); },
                {"declares state 'acc' twice"});
  }
  {
    BundleDesc b = stateBundle();
    b.executables[0].buffers[1].dtype = DType::BF16;
    expectError([&] { validateBundle(b, "b"); },
                {"buffer 1 'acc' is bf16 but state 'acc' is f32"});
  }
  {
    BundleDesc b = stateBundle();
    b.executables[0].states[0].state = 3;
    expectError([&] { validateBundle(b, "b"); },
                {"state use 0 refers to state 3 of 1"});
  }
  EXPECT_NO_THROW(validateBundle(stateBundle(), "b"));
}

/// stateBundle() compiled for 4 data-parallel ranks at ZeRO stage 3: the
/// parameter w (3 x 5, 15 elements) and the state acc are split in pieces
/// of ceil(15 / 4) = 4 elements, which is what the executable sees.
BundleDesc shardedBundle() {
  BundleDesc b;
  b.model = "sharded";
  b.worldSize = 4;
  b.zeroStage = 3;
  b.params = {{"w", DType::F32, {3, 5}, "", ShardDesc{4, {3, 5}}}};
  b.states = {{"acc", DType::F32, ShardDesc{4, {3, 5}}}};
  ExecutableDesc e;
  e.name = "step";
  e.paramAccess = Access::ReadWrite;
  e.states = {{0, Access::ReadWrite}};
  e.communicators = {"data_parallel"};
  e.buffers = {buffer(BufferKind::Param, DType::F32, {4}, 0, "w"),
               buffer(BufferKind::State, DType::F32, {4}, 0, "acc"),
               buffer(BufferKind::Workspace, DType::F32, {16}, -1, "whole", 0)};
  e.commands = {
      command(add(), {0, 1}, {0}),
      command(ops::Collective{CollectiveKind::AllGather, 0}, {0}, {2})};
  e.workspaceBytes = SymExpr(64);
  b.executables.push_back(e);
  return b;
}

TEST(Bundle, ShardsAndWorldSizeRoundTrip) {
  BundleDesc b = parse(serializeBundle(shardedBundle()));
  EXPECT_EQ(b.worldSize, 4);
  EXPECT_EQ(b.zeroStage, 3);
  ASSERT_TRUE(b.params[0].shard.has_value());
  EXPECT_EQ(b.params[0].shard->worldSize, 4);
  EXPECT_EQ(b.params[0].shard->shape, Shape({3, 5}));
  EXPECT_EQ(b.params[0].shard->shardElements(), 4);
  EXPECT_EQ(b.params[0].shape, Shape({3, 5}));
  ASSERT_TRUE(b.states[0].shard.has_value());
  EXPECT_EQ(b.states[0].shard->shape, Shape({3, 5}));
  expectSameBundle(shardedBundle(), b);
  // One rank: no shards, and the defaults read back.
  BundleDesc plain = parse(serializeBundle(normBundle()));
  EXPECT_EQ(plain.worldSize, 1);
  EXPECT_EQ(plain.zeroStage, 0);
  EXPECT_FALSE(plain.params[0].shard.has_value());
}

TEST(Bundle, ValidationChecksShards) {
  auto rejects = [](auto edit, std::vector<std::string> parts) {
    BundleDesc b = shardedBundle();
    edit(b);
    expectError([&] { validateBundle(b, "b"); }, std::move(parts));
  };
  rejects([](BundleDesc &b) { b.worldSize = 0; }, {"world size 0 (1 to"});
  rejects([](BundleDesc &b) { b.zeroStage = 4; }, {"ZeRO stage 4 (0 to 3)"});
  rejects([](BundleDesc &b) { b.params[0].shard->worldSize = 2; },
          {"param 0 'w' is split over 2 ranks in a bundle for world size 4"});
  rejects(
      [](BundleDesc &b) {
        b.worldSize = 1;
        b.zeroStage = 0;
      },
      {"param 0 'w' is split over 4 ranks in a bundle for world size 1"});
  rejects([](BundleDesc &b) { b.states[0].shard->shape = {-1}; },
          {"state 0 'acc' has a shard of invalid shape"});
  rejects([](BundleDesc &b) { b.params[0].shard->shape = {15}; },
          {"param 0 'w' is [3,5] but its shard splits [15]"});
  rejects(
      [](BundleDesc &b) {
        b.executables[0].buffers[0].shape = {3, 5};
      },
      {"buffer 0 'w' does not have the dtype and shape of a shard of "
       "param 'w' (f32 [4])"});
  rejects([](BundleDesc &b) { b.executables[0].buffers[1].shape = {5}; },
          {"buffer 1 'acc' does not have the dtype and shape of a shard of "
           "state 'acc' (f32 [4])"});
  EXPECT_NO_THROW(validateBundle(shardedBundle(), "b"));
}

TEST(Bundle, RejectsVersionOneClearly) {
  std::vector<uint8_t> bytes = serializeBundle(normBundle());
  bytes[8] = 1;
  std::string msg = expectError(
      [&] { parse(bytes); },
      {"test.hyb: bundle format version 1; this runtime reads version 14: "
       "recompile it with hybridc"});
  EXPECT_EQ(msg, "test.hyb: bundle format version 1; this runtime reads "
                 "version 14: recompile it with hybridc");
}

// FlatBuffers that pass the verifier but not semantic validation, framed
// by hand (serializeBundle refuses to write them).
TEST(Bundle, ParseRejectsSemanticErrorsWithFileName) {
  auto frame = [](flatbuffers::FlatBufferBuilder &fbb) {
    return framePayload(fbb.GetBufferPointer(), fbb.GetSize());
  };
  {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<int64_t> shape = {4};
    std::vector<uint8_t> data = {1, 2, 3};
    std::vector<flatbuffers::Offset<fb::Constant>> constants = {
        fb::CreateConstantDirect(fbb, fb::DType_F32, &shape, &data)};
    fb::FinishBundleBuffer(fbb,
                           fb::CreateBundleDirect(fbb, "p", "m", "s", nullptr,
                                                  nullptr, &constants));
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
    std::vector<int64_t> limits = {0};
    std::vector<flatbuffers::Offset<fb::Executable>> exes = {
        fb::CreateExecutableDirect(fbb, "forward", &symbols, &limits, nullptr,
                                   nullptr, nullptr, nullptr, fb::Access_Read,
                                   nullptr, nullptr, 1, 0, expr)};
    fb::FinishBundleBuffer(fbb,
                           fb::CreateBundleDirect(fbb, "p", "m", "s", nullptr,
                                                  nullptr, nullptr, &exes));
    expectError([&] { parse(frame(fbb)); },
                {"test.hyb: invalid bundle:", "uses symbol #200"});
  }
  // A command with no op, one with a union type but no table (which the
  // FlatBuffers verifier lets through), and one with an op from a newer
  // hybridc.
  struct Case {
    uint8_t type;
    bool table;
    const char *message;
  };
  for (Case c : {Case{0, false, "has no op"}, Case{1, false, "has no op"},
                 Case{99, true, "has unknown op type 99"}}) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<fb::Command>> commands = {
        fb::CreateCommandDirect(fbb, static_cast<fb::Op>(c.type),
                                c.table ? fb::CreateCopy(fbb).Union() : 0)};
    std::vector<flatbuffers::Offset<fb::Executable>> exes = {
        fb::CreateExecutableDirect(fbb, "forward", nullptr, nullptr, nullptr,
                                   &commands)};
    fb::FinishBundleBuffer(fbb,
                           fb::CreateBundleDirect(fbb, "p", "m", "s", nullptr,
                                                  nullptr, nullptr, &exes));
    expectError([&] { parse(frame(fbb)); },
                {"test.hyb: invalid bundle: executable 'forward' command 0 ",
                 c.message});
  }
}
