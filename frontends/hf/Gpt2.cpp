// GPT-2 (GPT2LMHeadModel): learned positions, pre-LayerNorm blocks, Conv1D
// projections with packed c_attn, tied LM head by default.
#include "frontends/hf/DecoderBuilder.h"
#include "frontends/hf/Families.h"

#include <cmath>

namespace hybridc::hf {

namespace {

struct Gpt2Params {
  int64_t vocab, positions, dim, layers, heads, inner;
  double epsilon;
  Activation act;
  bool scaleByHeadDim, scaleByInverseLayer, tied;
};

Gpt2Params readGpt2(HfConfig &config) {
  // GPT2Config.attribute_map.
  config.addAlias("n_embd", "hidden_size");
  config.addAlias("n_positions", "max_position_embeddings");
  config.addAlias("n_head", "num_attention_heads");
  config.addAlias("n_layer", "num_hidden_layers");

  Gpt2Params p;
  p.vocab = config.getSize("vocab_size");
  p.positions = config.getSize("n_positions");
  p.dim = config.getSize("n_embd");
  p.layers = config.getSize("n_layer");
  p.heads = config.getSize("n_head");
  p.inner = config.getSize("n_inner", 4 * p.dim);
  p.epsilon = config.getEpsilon("layer_norm_epsilon", 1e-5);
  p.act = readActivation(config, "activation_function", "gelu_new");
  p.scaleByHeadDim = config.getBool("scale_attn_weights", true);
  p.scaleByInverseLayer =
      config.getBool("scale_attn_by_inverse_layer_idx", false);
  p.tied = config.getBool("tie_word_embeddings", true);
  // Only a precision directive for fp16 training; our mixed-precision pass
  // decides where attention is upcast, so honouring it is not expressible.
  config.requireBool("reorder_and_upcast_attn", false, false,
                     "attention precision is chosen by the compiler");
  config.requireBool("add_cross_attention", false, false,
                     "decoder-only models have no encoder to attend to");
  config.requireDivisible("n_embd", p.dim, "n_head", p.heads);
  return p;
}

} // namespace

ImportResult importGpt2(mlir::MLIRContext &context, HfConfig &config) {
  Gpt2Params p = readGpt2(config);
  if (llvm::Error error = config.takeError())
    return std::move(error);

  DecoderBuilder b(context, config, /*basePrefix=*/"transformer.");
  int64_t headDim = p.dim / p.heads;
  mlir::Value wte = b.param("transformer.wte.weight", {p.vocab, p.dim});
  mlir::Value wpe = b.param("transformer.wpe.weight", {p.positions, p.dim});
  b.limitSeq(p.positions); // one row of wpe per position
  mlir::Value tokens = b.embedding(wte, b.inputIds(), "embed.tokens");
  mlir::Value positions = b.embedding(
      wpe, b.positions(0, b.builder().getI64Type(), "embed.position_ids"),
      "embed.positions");
  mlir::Value h = b.add(tokens, positions, "embed");

  for (int64_t i = 0; i < p.layers; ++i) {
    std::string hf = "transformer.h." + std::to_string(i);
    std::string at = "layers." + std::to_string(i);

    mlir::Value x =
        b.layerNormLayer(h, hf + ".ln_1", p.dim, p.epsilon, at + ".attn_norm");
    mlir::Value qkv = b.conv1dLayer(x, hf + ".attn.c_attn", p.dim, 3 * p.dim,
                                    at + ".attn.c_attn");
    // c_attn's output is [q | k | v], each [heads * headDim].
    auto heads = [&](int64_t part, const char *name) {
      mlir::Value slice = b.sliceLast(qkv, part * p.dim, (part + 1) * p.dim,
                                      at + ".attn.split_" + name);
      return b.splitHeads(slice, p.heads, headDim,
                          at + ".attn." + name + "_heads");
    };
    AttentionOptions attention;
    attention.scale = p.scaleByHeadDim ? 1.0 / std::sqrt(double(headDim)) : 1.0;
    if (p.scaleByInverseLayer)
      attention.scale /= double(i + 1);
    // One statement each: C++ leaves argument evaluation order open.
    mlir::Value q = heads(0, "q");
    mlir::Value k = heads(1, "k");
    mlir::Value v = heads(2, "v");
    mlir::Value attn = b.causalAttention(q, k, v, attention, at + ".attn");
    attn = b.conv1dLayer(attn, hf + ".attn.c_proj", p.dim, p.dim,
                         at + ".attn.c_proj");
    h = b.add(attn, h, at + ".attn_residual");

    x = b.layerNormLayer(h, hf + ".ln_2", p.dim, p.epsilon, at + ".mlp_norm");
    x = b.conv1dLayer(x, hf + ".mlp.c_fc", p.dim, p.inner, at + ".mlp.c_fc");
    x = b.activation(p.act, x, at + ".mlp.act");
    x = b.conv1dLayer(x, hf + ".mlp.c_proj", p.inner, p.dim,
                      at + ".mlp.c_proj");
    h = b.add(h, x, at + ".mlp_residual");
  }

  h = b.layerNormLayer(h, "transformer.ln_f", p.dim, p.epsilon, "final_norm");
  return b.finishWithLmHead(h, p.tied, wte, "lm_head.weight", p.vocab, p.dim);
}

} // namespace hybridc::hf
