// The kernels composed by hand into GPT-2, OPT and Llama forward passes on
// the shared HF fixtures (../shared/fixtures): logits must match PyTorch's to
// 1e-3, and greedy decoding (through a growing or a fixed-capacity KV cache)
// HF's tokens. This checks the kernels' numerics on real models independently
// of the compiler that will normally do the composing.
#include "KernelTestSupport.h"
#include "SafeTensorsReader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

namespace hybrid::cpu::test {
namespace {

/// A model's weights and reference outputs; skips the test when absent.
struct Fixture {
  std::map<std::string, HostTensor> weights, ref;
  const HostTensor &w(const std::string &name) const {
    auto it = weights.find(name);
    if (it == weights.end())
      throw Error("fixture has no tensor " + name);
    return it->second;
  }
};

bool loadFixture(const std::string &model, Fixture &f) {
  const std::string dir = std::string(HYBRID_FIXTURES_DIR) + "/" + model;
  f.weights = readSafeTensors(dir + "/model.safetensors");
  f.ref = readSafeTensors(dir + "/ref.safetensors");
  return !f.weights.empty() && f.ref.count("logits") &&
         f.ref.count("input_ids");
}

// Building blocks: each is one kernel call with the result shape worked out.
HostTensor reshape(const HostTensor &x, Shape shape) {
  return run(ops::Copy{}, {&x}, x.dtype, std::move(shape));
}
HostTensor linear(const HostTensor &x, const HostTensor &w,
                  const HostTensor *bias, bool transposeWeight) {
  Shape out = x.shape;
  out.back() = transposeWeight ? w.shape[0] : w.shape[1];
  HostTensor y(DType::F32, out);
  runKernel(ops::Linear{transposeWeight}, {&x, &w, bias, nullptr}, y);
  return y;
}
HostTensor binary(BinaryKind kind, const HostTensor &a, const HostTensor &b) {
  Shape out = a.numel() >= b.numel() ? a.shape : b.shape;
  return run(ops::Binary{kind}, {&a, &b}, DType::F32, out);
}
HostTensor layerNorm(const HostTensor &x, const HostTensor &w,
                     const HostTensor &b, double eps) {
  return run(ops::LayerNorm{eps}, {&x, &w, &b}, DType::F32, x.shape);
}
HostTensor rmsNorm(const HostTensor &x, const HostTensor &w, double eps) {
  return run(ops::RmsNorm{eps}, {&x, &w}, DType::F32, x.shape);
}
/// [B, T, H * D] -> [B, H, T, D]
HostTensor splitHeads(const HostTensor &x, int64_t heads) {
  const int64_t B = x.shape[0], T = x.shape[1], D = x.shape[2] / heads;
  HostTensor r = reshape(x, {B, T, heads, D});
  return run(ops::Transpose{{0, 2, 1, 3}}, {&r}, DType::F32, {B, heads, T, D});
}
/// [B, H, T, D] -> [B, T, H * D]
HostTensor mergeHeads(const HostTensor &x) {
  const int64_t B = x.shape[0], H = x.shape[1], T = x.shape[2], D = x.shape[3];
  HostTensor t =
      run(ops::Transpose{{0, 2, 1, 3}}, {&x}, DType::F32, {B, T, H, D});
  return reshape(t, {B, T, H * D});
}
HostTensor causalAttention(const HostTensor &q, const HostTensor &k,
                           const HostTensor &v) {
  return run(ops::Attention{1 / std::sqrt(double(q.shape[3])), true},
             {&q, &k, &v, nullptr, nullptr, nullptr, nullptr}, DType::F32,
             q.shape);
}
HostTensor embed(const HostTensor &table, const HostTensor &ids) {
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  return run(ops::Embedding{}, {&table, &ids}, DType::F32, out);
}
HostTensor positions(int64_t T, int64_t start) {
  return run(ops::Iota{double(start)}, {}, DType::I64, {T});
}

void expectLogits(const HostTensor &logits, const Fixture &f) {
  const HostTensor &want = f.ref.at("logits");
  ASSERT_EQ(logits.shape, want.shape);
  double maxDiff = 0;
  for (int64_t e = 0; e < want.numel(); ++e)
    maxDiff = std::max(maxDiff, double(std::fabs(logits.f()[e] - want.f()[e])));
  EXPECT_LE(maxDiff, 1e-3);
  std::cout << "  max |logits - HF| = " << maxDiff << "\n";
}

/// Keys and values of the positions seen so far, per layer. With capacity
/// 0 they grow by concatenation ([B, H, S, D]); with a capacity C they are
/// what the decode step keeps: [B, H, C, D] state that cache_write fills at
/// each step's position and attention reads key_length slots of.
struct KvCache {
  int64_t capacity = 0;
  std::vector<HostTensor> keys, values;
};

/// Appends this step's k and v ([B, H, T, D]) to the layer's cache and
/// replaces them with everything cached.
void extendCache(KvCache &cache, size_t layer, HostTensor &k, HostTensor &v) {
  if (cache.keys.size() <= layer) {
    cache.keys.push_back(k);
    cache.values.push_back(v);
  } else {
    for (auto [past, now] : {std::pair{&cache.keys[layer], &k},
                             std::pair{&cache.values[layer], &v}}) {
      Shape s = past->shape;
      s[2] += now->shape[2];
      *past = run(ops::Concat{2}, {past, now}, DType::F32, s);
    }
  }
  k = cache.keys[layer];
  v = cache.values[layer];
}

/// Causal attention of this step's queries (positions start, start + 1,
/// ...) over the cache, after adding this step's keys and values to it.
HostTensor attendCached(KvCache &cache, size_t layer, const HostTensor &q,
                        HostTensor k, HostTensor v, int64_t start) {
  if (cache.capacity == 0) {
    extendCache(cache, layer, k, v);
    return causalAttention(q, k, v);
  }
  if (cache.keys.size() <= layer) {
    for (auto *slots : {&cache.keys, &cache.values}) {
      Shape s = k.shape;
      s[2] = cache.capacity;
      HostTensor empty(DType::F32, s);
      std::fill(empty.f(), empty.f() + empty.numel(), NAN); // never read
      slots->push_back(std::move(empty));
    }
  }
  HostTensor offset = i64({1}, {start});
  runKernel(ops::CacheWrite{2}, {&k, &offset}, cache.keys[layer]);
  runKernel(ops::CacheWrite{2}, {&v, &offset}, cache.values[layer]);
  HostTensor length = i64({1}, {start + k.shape[2]});
  return run(ops::Attention{1 / std::sqrt(double(q.shape[3])), true},
             {&q, &cache.keys[layer], &cache.values[layer], nullptr, nullptr,
              &length, nullptr},
             DType::F32, q.shape);
}

/// GPT-2 logits for `ids` at positions start, start + 1, ...
HostTensor gpt2Logits(const Fixture &f, const HostTensor &ids, int64_t start,
                      KvCache &cache) {
  const int64_t T = ids.shape[1], H = 4;
  HostTensor pos = positions(T, start);
  HostTensor x =
      binary(BinaryKind::Add, embed(f.w("transformer.wte.weight"), ids),
             embed(f.w("transformer.wpe.weight"), pos));
  for (int l = 0; l < 2; ++l) {
    auto w = [&](const std::string &n) -> const HostTensor & {
      return f.w("transformer.h." + std::to_string(l) + "." + n);
    };
    HostTensor h = layerNorm(x, w("ln_1.weight"), w("ln_1.bias"), 1e-5);
    HostTensor qkv =
        linear(h, w("attn.c_attn.weight"), &w("attn.c_attn.bias"), false);
    auto part = [&](int i) {
      Shape s = qkv.shape;
      s.back() /= 3;
      HostTensor p =
          run(ops::Slice{{-1}, {i * s.back()}, {(i + 1) * s.back()}, {1}},
              {&qkv}, DType::F32, s);
      return splitHeads(p, H);
    };
    HostTensor q = part(0), k = part(1), v = part(2);
    HostTensor a = mergeHeads(attendCached(cache, l, q, k, v, start));
    a = linear(a, w("attn.c_proj.weight"), &w("attn.c_proj.bias"), false);
    x = binary(BinaryKind::Add, x, a);
    h = layerNorm(x, w("ln_2.weight"), w("ln_2.bias"), 1e-5);
    h = linear(h, w("mlp.c_fc.weight"), &w("mlp.c_fc.bias"), false);
    h = run(ops::Unary{UnaryKind::GeluTanh}, {&h}, DType::F32, h.shape);
    h = linear(h, w("mlp.c_proj.weight"), &w("mlp.c_proj.bias"), false);
    x = binary(BinaryKind::Add, x, h);
  }
  x = layerNorm(x, f.w("transformer.ln_f.weight"), f.w("transformer.ln_f.bias"),
                1e-5);
  return linear(x, f.w("transformer.wte.weight"), nullptr, true);
}

/// Greedy decoding from greedy_prompt, one token per step through the KV
/// cache (attention with T = 1 query aligned to the end of the keys), must
/// give greedy_tokens. With a capacity, the cache is fixed-size state as in
/// the decode step, and the sample kernel (temperature 0) picks the tokens.
template <typename Forward>
void expectGreedyTokens(const Fixture &f, Forward forward,
                        int64_t capacity = 0) {
  const HostTensor &prompt = f.ref.at("greedy_prompt");
  const HostTensor &want = f.ref.at("greedy_tokens");
  const int64_t B = prompt.shape[0], N = want.shape[1];
  KvCache cache{capacity};
  HostTensor ids = prompt;
  int64_t start = 0;
  HostTensor got(DType::I64, {B, N});
  const HostTensor greedy = f32({3}, {0, 1, 0}), rng = i64({2}, {0, 0});
  for (int64_t step = 0; step < N; ++step) {
    HostTensor logits = forward(f, ids, start, cache);
    start += ids.shape[1];
    const int64_t T = logits.shape[1], V = logits.shape[2];
    HostTensor last(DType::F32, {B, V});
    for (int64_t b = 0; b < B; ++b)
      std::memcpy(last.f() + b * V, logits.f() + (b * T + T - 1) * V,
                  V * sizeof(float));
    HostTensor sampled =
        run(ops::Sample{}, {&last, &greedy, &rng}, DType::I64, {B});
    HostTensor next(DType::I64, {B, 1});
    for (int64_t b = 0; b < B; ++b) {
      const float *row = last.f() + b * V;
      next.i()[b] =
          capacity ? sampled.i()[b] : std::max_element(row, row + V) - row;
      got.i()[b * N + step] = next.i()[b];
    }
    ids = next;
  }
  expectEqual(got, want,
              "greedy tokens, cache capacity " + std::to_string(capacity));
}

TEST(ModelParity, Gpt2) {
  Fixture f;
  if (!loadFixture("gpt2", f))
    GTEST_SKIP() << "no gpt2 fixture under " << HYBRID_FIXTURES_DIR;
  KvCache cache;
  expectLogits(gpt2Logits(f, f.ref.at("input_ids"), 0, cache), f);
  expectGreedyTokens(f, gpt2Logits);
  expectGreedyTokens(f, gpt2Logits, 40); // prompt 8 + 16 new in 40 slots
}

TEST(ModelParity, Opt) {
  Fixture f;
  if (!loadFixture("opt", f))
    GTEST_SKIP() << "no opt fixture under " << HYBRID_FIXTURES_DIR;
  const HostTensor &ids = f.ref.at("input_ids");
  const int64_t T = ids.shape[1], H = 4;
  const std::string p = "model.decoder.";
  // OPT's learned positions start at offset 2.
  HostTensor pos = positions(T, 2);
  HostTensor x =
      binary(BinaryKind::Add, embed(f.w(p + "embed_tokens.weight"), ids),
             embed(f.w(p + "embed_positions.weight"), pos));
  for (int l = 0; l < 2; ++l) {
    auto w = [&](const std::string &n) -> const HostTensor & {
      return f.w(p + "layers." + std::to_string(l) + "." + n);
    };
    HostTensor h = layerNorm(x, w("self_attn_layer_norm.weight"),
                             w("self_attn_layer_norm.bias"), 1e-5);
    auto proj = [&](const std::string &n) {
      return splitHeads(linear(h, w("self_attn." + n + ".weight"),
                               &w("self_attn." + n + ".bias"), true),
                        H);
    };
    HostTensor a = mergeHeads(
        causalAttention(proj("q_proj"), proj("k_proj"), proj("v_proj")));
    a = linear(a, w("self_attn.out_proj.weight"), &w("self_attn.out_proj.bias"),
               true);
    x = binary(BinaryKind::Add, x, a);
    h = layerNorm(x, w("final_layer_norm.weight"), w("final_layer_norm.bias"),
                  1e-5);
    h = linear(h, w("fc1.weight"), &w("fc1.bias"), true);
    h = run(ops::Unary{UnaryKind::Relu}, {&h}, DType::F32, h.shape);
    h = linear(h, w("fc2.weight"), &w("fc2.bias"), true);
    x = binary(BinaryKind::Add, x, h);
  }
  x = layerNorm(x, f.w(p + "final_layer_norm.weight"),
                f.w(p + "final_layer_norm.bias"), 1e-5);
  expectLogits(linear(x, f.w(p + "embed_tokens.weight"), nullptr, true), f);
}

/// Llama logits for `ids` at positions start, start + 1, ...
HostTensor llamaLogits(const Fixture &f, const HostTensor &ids, int64_t start,
                       KvCache &cache) {
  const int64_t T = ids.shape[1], Hq = 4, Hkv = 2, D = 16;
  // HF default rope: inv_freq[i] = theta^(-2i/D), both halves repeated.
  HostTensor cos(DType::F32, {1, T, D}), sin(DType::F32, {1, T, D});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < D / 2; ++i) {
      float invFreq = float(1.0 / std::pow(10000.0, double(2 * i) / D));
      float angle = float(start + t) * invFreq;
      for (int64_t j : {i, i + D / 2}) {
        cos.f()[t * D + j] = std::cos(angle);
        sin.f()[t * D + j] = std::sin(angle);
      }
    }
  auto rope = [&](const HostTensor &x) {
    return run(ops::Rotary{}, {&x, &cos, &sin}, DType::F32, x.shape);
  };
  HostTensor x = embed(f.w("model.embed_tokens.weight"), ids);
  for (int l = 0; l < 2; ++l) {
    auto w = [&](const std::string &n) -> const HostTensor & {
      return f.w("model.layers." + std::to_string(l) + "." + n);
    };
    HostTensor h = rmsNorm(x, w("input_layernorm.weight"), 1e-6);
    HostTensor q = rope(
        splitHeads(linear(h, w("self_attn.q_proj.weight"), nullptr, true), Hq));
    HostTensor k = rope(splitHeads(
        linear(h, w("self_attn.k_proj.weight"), nullptr, true), Hkv));
    HostTensor v =
        splitHeads(linear(h, w("self_attn.v_proj.weight"), nullptr, true), Hkv);
    HostTensor a = mergeHeads(attendCached(cache, l, q, k, v, start));
    a = linear(a, w("self_attn.o_proj.weight"), nullptr, true);
    x = binary(BinaryKind::Add, x, a);
    h = rmsNorm(x, w("post_attention_layernorm.weight"), 1e-6);
    HostTensor gate = linear(h, w("mlp.gate_proj.weight"), nullptr, true);
    gate = run(ops::Unary{UnaryKind::Silu}, {&gate}, DType::F32, gate.shape);
    HostTensor up = linear(h, w("mlp.up_proj.weight"), nullptr, true);
    h = linear(binary(BinaryKind::Mul, gate, up), w("mlp.down_proj.weight"),
               nullptr, true);
    x = binary(BinaryKind::Add, x, h);
  }
  x = rmsNorm(x, f.w("model.norm.weight"), 1e-6);
  return linear(x, f.w("lm_head.weight"), nullptr, true);
}

TEST(ModelParity, Llama) {
  Fixture f;
  if (!loadFixture("llama", f))
    GTEST_SKIP() << "no llama fixture under " << HYBRID_FIXTURES_DIR;
  KvCache cache;
  expectLogits(llamaLogits(f, f.ref.at("input_ids"), 0, cache), f);
  expectGreedyTokens(f, llamaLogits);
  expectGreedyTokens(f, llamaLogits, 40);
}

} // namespace
} // namespace hybrid::cpu::test
