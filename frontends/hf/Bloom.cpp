// BLOOM (BloomForCausalLM): ALiBi instead of positions, LayerNorm after the
// word embeddings, per-head packed query_key_value, tanh GELU, tied head.
#include "frontends/hf/DecoderBuilder.h"
#include "frontends/hf/Families.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hybridc::hf {

namespace {

struct BloomParams {
  int64_t vocab, dim, layers, heads;
  double epsilon;
  bool residualAfterNorm, tied;
};

BloomParams readBloom(HfConfig &config) {
  // BloomConfig.attribute_map, and the legacy `n_embed` for hidden_size.
  config.addAlias("n_layer", "num_hidden_layers");
  config.addAlias("n_head", "num_attention_heads");
  config.addAlias("hidden_size", "n_embed");

  BloomParams p;
  p.vocab = config.getSize("vocab_size");
  p.dim = config.getSize("hidden_size");
  p.layers = config.getSize("n_layer");
  p.heads = config.getSize("n_head");
  p.epsilon = config.getEpsilon("layer_norm_epsilon", 1e-5);
  p.residualAfterNorm =
      config.getBool("apply_residual_connection_post_layernorm", false);
  p.tied = config.getBool("tie_word_embeddings", true);
  config.requireDivisible("hidden_size", p.dim, "n_head", p.heads);
  return p;
}

/// transformers' build_alibi_tensor slopes: a geometric sequence starting at
/// 2^(-8/n) for the largest power of two n <= heads, interleaved with the
/// sequence of 2n for the remaining heads. Computed in float32 like HF.
std::vector<float> alibiSlopes(int64_t heads) {
  int64_t closest = int64_t(1)
                    << static_cast<int>(std::floor(std::log2(heads)));
  auto baseFor = [](int64_t n) {
    return static_cast<float>(
        std::pow(2.0, -std::pow(2.0, -(std::log2(double(n)) - 3))));
  };
  std::vector<float> slopes;
  float base = baseFor(closest);
  for (int64_t power = 1; power <= closest; ++power)
    slopes.push_back(std::pow(base, static_cast<float>(power)));
  if (closest != heads) {
    float extraBase = baseFor(2 * closest);
    int64_t remaining = std::min(closest, heads - closest);
    for (int64_t power = 1; power < 1 + 2 * remaining; power += 2)
      slopes.push_back(std::pow(extraBase, static_cast<float>(power)));
  }
  return slopes;
}

} // namespace

ImportResult importBloom(mlir::MLIRContext &context, HfConfig &config) {
  BloomParams p = readBloom(config);
  if (llvm::Error error = config.takeError())
    return std::move(error);

  DecoderBuilder b(context, config, /*basePrefix=*/"transformer.");
  int64_t headDim = p.dim / p.heads;
  mlir::Value embed =
      b.param("transformer.word_embeddings.weight", {p.vocab, p.dim});
  mlir::Value h = b.embedding(embed, b.inputIds(), "embed.tokens");
  h = b.layerNormLayer(h, "transformer.word_embeddings_layernorm", p.dim,
                       p.epsilon, "embed.norm");
  // BLOOM adds slope[h] * key_position to the scores; softmax is invariant
  // to the per-row shift, so hg.attention's slope * (j - i) is the same.
  AttentionOptions attention;
  attention.scale = 1.0 / std::sqrt(double(headDim));
  attention.alibiSlopes =
      b.constant(alibiSlopes(p.heads), {p.heads}, "alibi.slopes");

  for (int64_t i = 0; i < p.layers; ++i) {
    std::string hf = "transformer.h." + std::to_string(i);
    std::string at = "layers." + std::to_string(i);

    mlir::Value x = b.layerNormLayer(h, hf + ".input_layernorm", p.dim,
                                     p.epsilon, at + ".attn_norm");
    mlir::Value residual = p.residualAfterNorm ? x : h;
    mlir::Value qkv =
        b.linearLayer(x, hf + ".self_attention.query_key_value", p.dim,
                      3 * p.dim, true, at + ".attn.query_key_value");
    // The packed output is laid out per head: [heads, (q | k | v), headDim].
    mlir::Value perHead =
        b.splitHeads(qkv, p.heads, 3 * headDim, at + ".attn.qkv_heads");
    auto part = [&](int64_t index, const char *name) {
      return b.sliceLast(perHead, index * headDim, (index + 1) * headDim,
                         at + ".attn.split_" + name);
    };
    // One statement each: C++ leaves argument evaluation order open.
    mlir::Value q = part(0, "q");
    mlir::Value k = part(1, "k");
    mlir::Value v = part(2, "v");
    mlir::Value attn = b.causalAttention(q, k, v, attention, at + ".attn");
    attn = b.linearLayer(attn, hf + ".self_attention.dense", p.dim, p.dim, true,
                         at + ".attn.dense");
    h = b.add(attn, residual, at + ".attn_residual");

    x = b.layerNormLayer(h, hf + ".post_attention_layernorm", p.dim, p.epsilon,
                         at + ".mlp_norm");
    residual = p.residualAfterNorm ? x : h;
    mlir::Value y = b.linearLayer(x, hf + ".mlp.dense_h_to_4h", p.dim,
                                  4 * p.dim, true, at + ".mlp.dense_h_to_4h");
    y = b.activation(Activation::GeluTanh, y, at + ".mlp.act");
    y = b.linearLayer(y, hf + ".mlp.dense_4h_to_h", 4 * p.dim, p.dim, true,
                      at + ".mlp.dense_4h_to_h");
    h = b.add(y, residual, at + ".mlp_residual");
  }

  h = b.layerNormLayer(h, "transformer.ln_f", p.dim, p.epsilon, "final_norm");
  return b.finishWithLmHead(h, p.tied, embed, "lm_head.weight", p.vocab, p.dim);
}

} // namespace hybridc::hf
