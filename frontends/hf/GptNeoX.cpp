// GPT-NeoX (GPTNeoXForCausalLM, Pythia): per-head packed query_key_value,
// partial rotary, optional parallel residual, untied embed_out by default.
#include "frontends/hf/DecoderBuilder.h"
#include "frontends/hf/Families.h"

#include <cmath>

namespace hybridc::hf {

namespace {

struct GptNeoXParams {
  int64_t vocab, dim, inner, layers, heads;
  double epsilon;
  Activation act;
  bool parallelResidual, attentionBias, tied;
  RopeFrequencies rope;
};

GptNeoXParams readGptNeoX(HfConfig &config) {
  // Names older configs use for the rope settings.
  config.addAlias("rope_theta", "rotary_emb_base");
  config.addAlias("partial_rotary_factor", "rotary_pct");

  GptNeoXParams p;
  p.vocab = config.getSize("vocab_size");
  p.dim = config.getSize("hidden_size");
  p.inner = config.getSize("intermediate_size");
  p.layers = config.getSize("num_hidden_layers");
  p.heads = config.getSize("num_attention_heads");
  p.epsilon = config.getEpsilon("layer_norm_eps", 1e-5);
  p.act = readActivation(config, "hidden_act", "gelu");
  p.parallelResidual = config.getBool("use_parallel_residual", true);
  p.attentionBias = config.getBool("attention_bias", true);
  p.tied = config.getBool("tie_word_embeddings", false);
  config.requireDivisible("hidden_size", p.dim, "num_attention_heads", p.heads);
  if (!config.failed()) {
    RopeDefaults defaults;
    defaults.partialRotaryFactor = 0.25;
    defaults.allowPartial = true;
    p.rope = readRopeFrequencies(config, p.dim / p.heads, defaults);
  }
  return p;
}

} // namespace

ImportResult importGptNeoX(mlir::MLIRContext &context, HfConfig &config) {
  GptNeoXParams p = readGptNeoX(config);
  if (llvm::Error error = config.takeError())
    return std::move(error);

  DecoderBuilder b(context, config, /*basePrefix=*/"gpt_neox.");
  int64_t headDim = p.dim / p.heads;
  mlir::Value embed = b.param("gpt_neox.embed_in.weight", {p.vocab, p.dim});
  mlir::Value h = b.embedding(embed, b.inputIds(), "embed.tokens");
  RotaryTables rotary = b.rotaryTables(p.rope);

  for (int64_t i = 0; i < p.layers; ++i) {
    std::string hf = "gpt_neox.layers." + std::to_string(i);
    std::string at = "layers." + std::to_string(i);

    mlir::Value x = b.layerNormLayer(h, hf + ".input_layernorm", p.dim,
                                     p.epsilon, at + ".attn_norm");
    mlir::Value qkv =
        b.linearLayer(x, hf + ".attention.query_key_value", p.dim, 3 * p.dim,
                      p.attentionBias, at + ".attn.query_key_value");
    // The packed output is laid out per head: [heads, (q | k | v), headDim].
    mlir::Value perHead =
        b.splitHeads(qkv, p.heads, 3 * headDim, at + ".attn.qkv_heads");
    auto part = [&](int64_t index, const char *name) {
      return b.sliceLast(perHead, index * headDim, (index + 1) * headDim,
                         at + ".attn.split_" + name);
    };
    AttentionOptions attention;
    attention.scale = 1.0 / std::sqrt(double(headDim));
    attention.rotary = &rotary;
    // One statement each: C++ leaves argument evaluation order open.
    mlir::Value q = part(0, "q");
    mlir::Value k = part(1, "k");
    mlir::Value v = part(2, "v");
    mlir::Value attn = b.causalAttention(q, k, v, attention, at + ".attn");
    attn = b.linearLayer(attn, hf + ".attention.dense", p.dim, p.dim,
                         p.attentionBias, at + ".attn.dense");

    auto mlp = [&](mlir::Value input) {
      mlir::Value y = b.layerNormLayer(input, hf + ".post_attention_layernorm",
                                       p.dim, p.epsilon, at + ".mlp_norm");
      y = b.linearLayer(y, hf + ".mlp.dense_h_to_4h", p.dim, p.inner, true,
                        at + ".mlp.dense_h_to_4h");
      y = b.activation(p.act, y, at + ".mlp.act");
      return b.linearLayer(y, hf + ".mlp.dense_4h_to_h", p.inner, p.dim, true,
                           at + ".mlp.dense_4h_to_h");
    };
    if (p.parallelResidual) {
      // HF: mlp_output + attn_output + hidden_states, in that order.
      mlir::Value y = mlp(h);
      h = b.add(b.add(y, attn, at + ".parallel_residual"), h,
                at + ".parallel_residual");
    } else {
      h = b.add(attn, h, at + ".attn_residual");
      h = b.add(mlp(h), h, at + ".mlp_residual");
    }
  }

  h = b.layerNormLayer(h, "gpt_neox.final_layer_norm", p.dim, p.epsilon,
                       "final_norm");
  return b.finishWithLmHead(h, p.tied, embed, "embed_out.weight", p.vocab,
                            p.dim);
}

} // namespace hybridc::hf
