// Small bundles built by hand as BundleDesc, shared by the runtime unit tests
// and the generator of hybrid-run's test data.
#pragma once

#include "hybrid/BundleDesc.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace hybrid::test {

inline AttrDesc intAttr(std::string name, int64_t v) {
  AttrDesc a;
  a.name = std::move(name);
  a.i = v;
  return a;
}

inline AttrDesc floatAttr(std::string name, double v) {
  AttrDesc a;
  a.name = std::move(name);
  a.f = v;
  return a;
}

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

inline CommandDesc command(std::string kernel, std::vector<int32_t> operands,
                           std::vector<int32_t> results,
                           std::vector<AttrDesc> attrs = {},
                           std::string loc = "") {
  CommandDesc c;
  c.kernel = std::move(kernel);
  c.operands = std::move(operands);
  c.results = std::move(results);
  c.attrs = std::move(attrs);
  c.loc = std::move(loc);
  return c;
}

/// Values of the constant `c` of normBundle().
inline std::vector<float> normBundleConstant() {
  return {0.5f, -1.f, 2.f, 0.25f};
}

/// x f32 [batch, 4] -> t0 = x + c -> t1 = layer_norm(t0, ln.weight, ln.bias)
/// -> t2 = t1 + x (reusing t0's workspace bytes) -> v = t2 viewed as
/// [batch, 2, 2] (an Alias) -> outputs y = copy(v) [batch, 2, 2] and
/// normed = copy(t1) [batch, 4].
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
  SymExpr batch = SymExpr::symbol(0);
  e.buffers = {
      buffer(BufferKind::Input, DType::F32, {batch, 4}, 0, "x"),      // 0
      buffer(BufferKind::Constant, DType::F32, {4}, 0, "c"),          // 1
      buffer(BufferKind::Param, DType::F32, {4}, 0, "ln.weight"),     // 2
      buffer(BufferKind::Param, DType::F32, {4}, 1, "ln.bias"),       // 3
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "t0", // 4
             SymExpr(0)),
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "t1", // 5
             SymExpr(16) * batch),
      buffer(BufferKind::Workspace, DType::F32, {batch, 4}, -1, "t2", // 6
             SymExpr(0)),
      buffer(BufferKind::Alias, DType::F32, {batch, 2, 2}, 6, "v"),    // 7
      buffer(BufferKind::Output, DType::F32, {batch, 2, 2}, 0, "y"),   // 8
      buffer(BufferKind::Output, DType::F32, {batch, 4}, 1, "normed"), // 9
  };
  e.inputs = {{"x", 0}};
  e.outputs = {{"y", 8}, {"normed", 9}};
  e.commands = {
      command("add", {0, 1}, {4}, {}, "test.mlir:1"),
      command("layer_norm", {4, 2, 3}, {5},
              {floatAttr("epsilon", 1e-5), intAttr("axis", -1),
               intAttr("has_weight", 1), intAttr("has_bias", 1)},
              "test.mlir:2"),
      command("add", {5, 0}, {6}, {}, "test.mlir:3"),
      command("copy", {7}, {8}, {}, "test.mlir:4"),
      command("copy", {5}, {9}, {}, "test.mlir:5"),
  };
  e.workspaceBytes = SymExpr(32) * batch;
  b.executables.push_back(e);
  return b;
}

/// A tiny language model: input_ids i64 [batch, seq] -> embedding(wte) ->
/// layer_norm(ln_f) -> linear with the tied wte ([V, D], transposed) ->
/// logits f32 [batch, seq, 16]. Vocabulary 16, width 8.
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
  SymExpr batch = SymExpr::symbol(0), seq = SymExpr::symbol(1);
  e.buffers = {
      buffer(BufferKind::Input, DType::I64, {batch, seq}, 0, "input_ids"),
      buffer(BufferKind::Param, DType::F32, {16, 8}, 0, "wte.weight"),
      buffer(BufferKind::Param, DType::F32, {8}, 1, "ln_f.weight"),
      buffer(BufferKind::Param, DType::F32, {8}, 2, "ln_f.bias"),
      buffer(BufferKind::Workspace, DType::F32, {batch, seq, 8}, -1, "h0",
             SymExpr(0)),
      buffer(BufferKind::Workspace, DType::F32, {batch, seq, 8}, -1, "h1",
             SymExpr(32) * batch * seq),
      buffer(BufferKind::Output, DType::F32, {batch, seq, 16}, 0, "logits"),
  };
  e.inputs = {{"input_ids", 0}};
  e.outputs = {{"logits", 6}};
  e.commands = {
      command("embedding", {1, 0}, {4}, {}, "tiny.mlir:1"),
      command("layer_norm", {4, 2, 3}, {5},
              {floatAttr("epsilon", 1e-5), intAttr("has_weight", 1),
               intAttr("has_bias", 1)},
              "tiny.mlir:2"),
      command("linear", {5, 1, -1}, {6},
              {intAttr("transpose_weight", 1), intAttr("has_bias", 0)},
              "tiny.mlir:3"),
  };
  e.workspaceBytes = SymExpr(64) * batch * seq;
  b.executables.push_back(e);
  return b;
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
