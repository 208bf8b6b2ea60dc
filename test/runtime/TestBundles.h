// Small bundles built by hand as BundleDesc, shared by the runtime unit tests
// and the generator of hybrid-run's test data.
#pragma once

#include "hybrid/Bundle.h"
#include "hybrid/BundleDesc.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace hybrid::test {

inline BufferDesc buffer(BufferKind kind, DType dtype, SymShape shape,
                         int32_t index, std::string name,
                         SymExpr offset = SymExpr()) {
  BufferDesc b;
  b.kind = kind;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.index = index;
  b.offset = std::move(offset);
  b.name = std::move(name);
  return b;
}

inline CommandDesc command(Op op, std::vector<int32_t> operands,
                           std::vector<int32_t> results, std::string loc = "",
                           int32_t stream = 0) {
  CommandDesc c;
  c.op = std::move(op);
  c.operands = std::move(operands);
  c.results = std::move(results);
  c.loc = std::move(loc);
  c.stream = stream;
  return c;
}

inline Op add() { return ops::Binary{BinaryKind::Add}; }

/// Values of the constant `c` of normBundle().
inline std::vector<float> normBundleConstant() {
  return {0.5f, -1.f, 2.f, 0.25f};
}

/// x f32 [batch, 4] -> t0 = x + c -> t1 = layer_norm(t0, ln.weight, ln.bias)
/// -> t2 = t1 + x (reusing t0's workspace bytes) -> v = t2 viewed as
/// [batch, 2, 2] (an Alias) -> outputs y = copy(v) [batch, 2, 2] and
/// normed = copy(t1) [batch, 4]. Every slot (inputs and outputs too) is
/// 256*batch bytes at a multiple of 256; batch is at most 64.
inline BundleDesc normBundle() {
  BundleDesc b;
  b.producer = "hand-built test";
  b.model = "norm-test";
  b.source = "TestBundles.h";
  b.params = {{"ln.weight", DType::F32, {4}, ""},
              {"ln.bias", DType::F32, {4}, ""}};
  ConstantDesc c;
  c.dtype = DType::F32;
  c.shape = {4};
  std::vector<float> cv = normBundleConstant();
  c.data.resize(cv.size() * 4);
  std::memcpy(c.data.data(), cv.data(), c.data.size());
  b.constants.push_back(c);

  ExecutableDesc e;
  e.name = "forward";
  e.symbols = {"batch"};
  e.symbolMax = {64};
  SymExpr batch = SymExpr::symbol(0);
  SymExpr slot = SymExpr(256) * batch;
  e.buffers = {
      buffer(BufferKind::Input, DType::F32, {batch, 4}, 0, "x", 0),   // 0
      buffer(BufferKind::Constant, DType::F32, {4}, 0, "c"),          // 1
      buffer(BufferKind::Param, DType::F32, {4}, 0, "ln.weight"),     // 2
      buffer(BufferKind::Param, DType::F32, {4}, 1, "ln.bias"),       // 3
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "t0", // 4
             slot),
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "t1", // 5
             SymExpr(2) * slot),
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "t2", // 6
             slot),
      buffer(BufferKind::Alias, DType::F32, {batch, 2, 2}, 6, "v"), // 7
      buffer(BufferKind::Output, DType::F32, {batch, 2, 2}, 0, "y", // 8
             SymExpr(3) * slot),
      buffer(BufferKind::Output, DType::F32, {batch, 4}, 1, "normed", // 9
             SymExpr(4) * slot),
  };
  e.inputs = {{"x", 0}};
  e.outputs = {{"y", 8}, {"normed", 9}};
  e.commands = {
      command(add(), {0, 1}, {4}, "test.mlir:1"),
      command(ops::LayerNorm{1e-5, -1}, {4, 2, 3}, {5}, "test.mlir:2"),
      command(add(), {5, 0}, {6}, "test.mlir:3"),
      command(ops::Copy{}, {7}, {8}, "test.mlir:4"),
      command(ops::Copy{}, {5}, {9}, "test.mlir:5"),
  };
  e.workspaceBytes = SymExpr(5) * slot;
  b.executables.push_back(e);
  return b;
}

/// A tiny language model: input_ids i64 [batch, seq] -> embedding(wte) ->
/// layer_norm(ln_f) -> linear with the tied wte ([V, D], transposed) ->
/// logits f32 [batch, seq, 16]. Vocabulary 16, width 8; seq at most 32.
inline BundleDesc tinyLmBundle() {
  BundleDesc b;
  b.producer = "hand-built test";
  b.model = "tiny-lm";
  b.source = "TestBundles.h";
  b.params = {{"wte.weight", DType::F32, {16, 8}, ""},
              {"ln_f.weight", DType::F32, {8}, ""},
              {"ln_f.bias", DType::F32, {8}, ""}};
  ExecutableDesc e;
  e.name = "forward";
  e.symbols = {"batch", "seq"};
  e.symbolMax = {0, 32};
  SymExpr batch = SymExpr::symbol(0), seq = SymExpr::symbol(1);
  SymExpr slot = SymExpr(256) * batch * seq;
  e.buffers = {
      buffer(BufferKind::Input, DType::I64, {batch, seq}, 0, "input_ids", 0),
      buffer(BufferKind::Param, DType::F32, {16, 8}, 0, "wte.weight"),
      buffer(BufferKind::Param, DType::F32, {8}, 1, "ln_f.weight"),
      buffer(BufferKind::Param, DType::F32, {8}, 2, "ln_f.bias"),
      buffer(BufferKind::Workspace, DType::F32, {batch, seq, 8}, -1, "h0",
             slot),
      buffer(BufferKind::Workspace, DType::F32, {batch, seq, 8}, -1, "h1",
             SymExpr(2) * slot),
      buffer(BufferKind::Output, DType::F32, {batch, seq, 16}, 0, "logits",
             SymExpr(3) * slot),
  };
  e.inputs = {{"input_ids", 0}};
  e.outputs = {{"logits", 6}};
  e.commands = {
      command(ops::Embedding{}, {1, 0}, {4}, "tiny.mlir:1"),
      command(ops::LayerNorm{1e-5, -1}, {4, 2, 3}, {5}, "tiny.mlir:2"),
      command(ops::Linear{true}, {5, 1, -1, -1, -1, -1}, {6}, "tiny.mlir:3"),
  };
  e.workspaceBytes = SymExpr(4) * slot;
  b.executables.push_back(e);
  return b;
}

/// Two executables sharing the state "acc" f32 [batch, 4]:
///  * "accumulate" (read_write): acc = acc + x; total = copy(acc);
///  * "read" (read): doubled = acc * 2 (the constant 2 broadcast).
/// `x` and the outputs are f32 [batch, 4]; batch is at most 16.
inline BundleDesc stateBundle() {
  BundleDesc b;
  b.producer = "hand-built test";
  b.model = "state-test";
  b.source = "TestBundles.h";
  b.states = {{"acc", DType::F32}};
  ConstantDesc two;
  two.dtype = DType::F32;
  two.shape = {1};
  float v = 2.0f;
  two.data.resize(4);
  std::memcpy(two.data.data(), &v, 4);
  b.constants.push_back(two);
  SymExpr batch = SymExpr::symbol(0);
  SymExpr slot = SymExpr(256) * batch;

  ExecutableDesc acc;
  acc.name = "accumulate";
  acc.symbols = {"batch"};
  acc.symbolMax = {16};
  acc.states = {{0, Access::ReadWrite}};
  acc.buffers = {
      buffer(BufferKind::Input, DType::F32, {batch, 4}, 0, "x", 0),
      buffer(BufferKind::State, DType::F32, {batch, 4}, 0, "acc"),
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "sum", slot),
      buffer(BufferKind::Output, DType::F32, {batch, 4}, 0, "total",
             SymExpr(2) * slot),
  };
  acc.inputs = {{"x", 0}};
  acc.outputs = {{"total", 3}};
  acc.commands = {command(add(), {1, 0}, {2}, "state.mlir:1"),
                  command(ops::Copy{}, {2}, {1}, "state.mlir:2"),
                  command(ops::Copy{}, {1}, {3}, "state.mlir:3")};
  acc.workspaceBytes = SymExpr(3) * slot;
  b.executables.push_back(acc);

  ExecutableDesc read;
  read.name = "read";
  read.symbols = {"batch"};
  read.symbolMax = {16};
  read.states = {{0, Access::Read}};
  // Its only input fixes batch; its values are not used.
  read.buffers = {
      buffer(BufferKind::Input, DType::F32, {batch, 4}, 0, "like", 0),
      buffer(BufferKind::State, DType::F32, {batch, 4}, 0, "acc"),
      buffer(BufferKind::Constant, DType::F32, {1}, 0, "two"),
      buffer(BufferKind::Output, DType::F32, {batch, 4}, 0, "doubled", slot),
  };
  read.inputs = {{"like", 0}};
  read.outputs = {{"doubled", 3}};
  read.commands = {
      command(ops::Binary{BinaryKind::Mul}, {1, 2}, {3}, "state.mlir:9")};
  read.workspaceBytes = SymExpr(2) * slot;
  b.executables.push_back(read);
  return b;
}

/// A .hyb file around a FlatBuffers payload built by hand (framing and
/// checksum as serializeBundle writes them), for bundles serializeBundle
/// refuses to write.
inline std::vector<uint8_t>
framePayload(const uint8_t *payload, size_t size,
             uint32_t version = kBundleFormatVersion) {
  std::vector<uint8_t> out(kBundleHeaderSize);
  std::memcpy(out.data(), kBundleMagic, 8);
  for (int i = 0; i < 4; ++i)
    out[8 + i] = static_cast<uint8_t>(version >> (8 * i));
  uint64_t sum = fnv1a64(payload, size);
  for (int i = 0; i < 8; ++i) {
    out[16 + i] = static_cast<uint8_t>(uint64_t(size) >> (8 * i));
    out[24 + i] = static_cast<uint8_t>(sum >> (8 * i));
  }
  out.insert(out.end(), payload, payload + size);
  return out;
}

/// tinyLmBundle's logits in double precision: embedding, layer_norm (eps
/// 1e-5), tied head. `wte` is [16, 8], `gamma`/`beta` [8]; ids has
/// batch*seq entries; the result is [batch*seq, 16] row-major.
inline std::vector<double> tinyLmReference(const float *wte, const float *gamma,
                                           const float *beta,
                                           const std::vector<int64_t> &ids) {
  constexpr int D = 8, V = 16;
  std::vector<double> logits;
  for (int64_t id : ids) {
    const float *e = wte + id * D;
    double mean = 0, var = 0, h[D];
    for (int d = 0; d < D; ++d)
      mean += e[d];
    mean /= D;
    for (int d = 0; d < D; ++d)
      var += (e[d] - mean) * (e[d] - mean);
    var /= D;
    for (int d = 0; d < D; ++d)
      h[d] = (e[d] - mean) / std::sqrt(var + 1e-5) * gamma[d] + beta[d];
    for (int v = 0; v < V; ++v) {
      double s = 0;
      for (int d = 0; d < D; ++d)
        s += h[d] * wte[v * D + d];
      logits.push_back(s);
    }
  }
  return logits;
}

} // namespace hybrid::test
