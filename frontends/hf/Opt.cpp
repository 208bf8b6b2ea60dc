// OPT (OPTForCausalLM): learned positions offset by 2, pre- or post-
// LayerNorm blocks, optional project_in/project_out around the decoder.
#include "frontends/hf/DecoderBuilder.h"
#include "frontends/hf/Families.h"

#include <cmath>

namespace hybridc::hf {

namespace {

/// OPTLearnedPositionalEmbedding's offset: rows 0 and 1 are never used.
constexpr int64_t kPositionOffset = 2;

struct OptParams {
  int64_t vocab, positions, dim, embedDim, layers, heads, ffn;
  Activation act;
  bool preNorm, finalNorm, affineNorm, bias, tied;
  std::optional<int64_t> paddingIdx;
};

OptParams readOpt(HfConfig &config) {
  OptParams p;
  p.vocab = config.getSize("vocab_size");
  p.positions = config.getSize("max_position_embeddings");
  p.dim = config.getSize("hidden_size");
  p.embedDim = config.getSize("word_embed_proj_dim", p.dim);
  p.layers = config.getSize("num_hidden_layers");
  p.heads = config.getSize("num_attention_heads");
  p.ffn = config.getSize("ffn_dim");
  p.act = readActivation(config, "activation_function", "relu");
  p.preNorm = config.getBool("do_layer_norm_before", true);
  p.finalNorm = p.preNorm && !config.getBool("_remove_final_layer_norm", false);
  p.affineNorm = config.getBool("layer_norm_elementwise_affine", true);
  p.bias = config.getBool("enable_bias", true);
  p.tied = config.getBool("tie_word_embeddings", true);
  p.paddingIdx = readPaddingIdx(config, p.vocab);
  config.requireDivisible("hidden_size", p.dim, "num_attention_heads", p.heads);
  return p;
}

} // namespace

ImportResult importOpt(mlir::MLIRContext &context, HfConfig &config) {
  OptParams p = readOpt(config);
  if (llvm::Error error = config.takeError())
    return std::move(error);

  DecoderBuilder b(context, config, /*basePrefix=*/"model.");
  // nn.LayerNorm's default epsilon; OPT has no config key for it.
  const double epsilon = 1e-5;
  int64_t headDim = p.dim / p.heads;
  bool project = p.embedDim != p.dim;

  mlir::Value embed =
      b.param("model.decoder.embed_tokens.weight", {p.vocab, p.embedDim});
  mlir::Value h =
      b.embedding(embed, b.inputIds(), "embed.tokens", p.paddingIdx);
  if (project)
    h = b.linearLayer(h, "model.decoder.project_in", p.embedDim, p.dim,
                      /*hasBias=*/false, "embed.project_in");
  // Without padding, cumsum(attention_mask) - 1 is 0..seq-1.
  mlir::Value positionTable = b.param("model.decoder.embed_positions.weight",
                                      {p.positions + kPositionOffset, p.dim});
  b.limitSeq(p.positions); // the table's rows past the offset
  mlir::Value positions =
      b.embedding(positionTable,
                  b.positions(kPositionOffset, b.builder().getI64Type(),
                              "embed.position_ids"),
                  "embed.positions");
  h = b.add(h, positions, "embed");

  for (int64_t i = 0; i < p.layers; ++i) {
    std::string hf = "model.decoder.layers." + std::to_string(i);
    std::string at = "layers." + std::to_string(i);
    auto norm = [&](mlir::Value x, const char *hfName, const char *name) {
      return b.layerNormLayer(x, hf + "." + hfName, p.dim, epsilon,
                              at + "." + name, p.affineNorm);
    };

    mlir::Value x =
        p.preNorm ? norm(h, "self_attn_layer_norm", "attn_norm") : h;
    auto projection = [&](const char *name) {
      mlir::Value y = b.linearLayer(x, hf + ".self_attn." + name, p.dim, p.dim,
                                    p.bias, at + ".attn." + name);
      return b.splitHeads(y, p.heads, headDim, at + ".attn." + name + "_heads");
    };
    AttentionOptions attention;
    attention.scale = 1.0 / std::sqrt(double(headDim));
    mlir::Value q = projection("q_proj");
    mlir::Value k = projection("k_proj");
    mlir::Value v = projection("v_proj");
    mlir::Value attn = b.causalAttention(q, k, v, attention, at + ".attn");
    attn = b.linearLayer(attn, hf + ".self_attn.out_proj", p.dim, p.dim, p.bias,
                         at + ".attn.out_proj");
    h = b.add(h, attn, at + ".attn_residual");
    if (!p.preNorm)
      h = norm(h, "self_attn_layer_norm", "attn_norm");

    x = p.preNorm ? norm(h, "final_layer_norm", "mlp_norm") : h;
    x = b.linearLayer(x, hf + ".fc1", p.dim, p.ffn, p.bias, at + ".mlp.fc1");
    x = b.activation(p.act, x, at + ".mlp.act");
    x = b.linearLayer(x, hf + ".fc2", p.ffn, p.dim, p.bias, at + ".mlp.fc2");
    h = b.add(h, x, at + ".mlp_residual");
    if (!p.preNorm)
      h = norm(h, "final_layer_norm", "mlp_norm");
  }

  if (p.finalNorm)
    h = b.layerNormLayer(h, "model.decoder.final_layer_norm", p.dim, epsilon,
                         "final_norm", p.affineNorm);
  if (project)
    h = b.linearLayer(h, "model.decoder.project_out", p.dim, p.embedDim,
                      /*hasBias=*/false, "project_out");
  return b.finishWithLmHead(h, p.tied, embed, "lm_head.weight", p.vocab,
                            p.embedDim);
}

} // namespace hybridc::hf
