// Phi-3 (Phi3ForCausalLM): a Llama-style decoder with packed qkv_proj
// [q; k; v] and gate_up_proj [gate; up], optional partial rotary and
// sliding-window attention.
#include "frontends/hf/DecoderBuilder.h"
#include "frontends/hf/Families.h"

#include <cmath>

namespace hybridc::hf {

namespace {

struct Phi3Params : LlamaStyleParams {
  int64_t slidingWindow;
  RopeFrequencies rope;
};

Phi3Params readPhi3(HfConfig &config) {
  Phi3Params p;
  readLlamaStyleParams(config, 1e-5, p);
  // Phi3Config defaults sliding_window to null (full attention).
  p.slidingWindow =
      config.has("sliding_window") ? config.getSize("sliding_window") : 0;
  if (!config.failed()) {
    RopeDefaults defaults;
    defaults.allowPartial = true;
    p.rope = readRopeFrequencies(config, p.headDim, defaults);
  }
  return p;
}

} // namespace

ImportResult importPhi3(mlir::MLIRContext &context, HfConfig &config) {
  Phi3Params p = readPhi3(config);
  if (llvm::Error error = config.takeError())
    return std::move(error);

  DecoderBuilder b(context, config, /*basePrefix=*/"model.");
  mlir::Value embed = b.param("model.embed_tokens.weight", {p.vocab, p.dim});
  mlir::Value h =
      b.embedding(embed, b.inputIds(), "embed.tokens", p.paddingIdx);
  RotaryTables rotary = b.rotaryTables(p.rope);
  int64_t qWidth = p.heads * p.headDim;
  int64_t kvWidth = p.kvHeads * p.headDim;

  for (int64_t i = 0; i < p.layers; ++i) {
    std::string hf = "model.layers." + std::to_string(i);
    std::string at = "layers." + std::to_string(i);

    mlir::Value x = b.rmsNormLayer(h, hf + ".input_layernorm", p.dim, p.epsilon,
                                   at + ".attn_norm");
    mlir::Value qkv =
        b.linearLayer(x, hf + ".self_attn.qkv_proj", p.dim,
                      qWidth + 2 * kvWidth, false, at + ".attn.qkv_proj");
    // qkv_proj's output is [q (heads) | k (kv heads) | v (kv heads)].
    auto part = [&](int64_t begin, int64_t heads, const char *name) {
      mlir::Value y = b.sliceLast(qkv, begin, begin + heads * p.headDim,
                                  at + ".attn.split_" + name);
      return b.splitHeads(y, heads, p.headDim, at + ".attn." + name + "_heads");
    };
    mlir::Value q = part(0, p.heads, "q");
    mlir::Value k = part(qWidth, p.kvHeads, "k");
    mlir::Value v = part(qWidth + kvWidth, p.kvHeads, "v");
    AttentionOptions attention;
    attention.scale = 1.0 / std::sqrt(double(p.headDim));
    attention.slidingWindow = p.slidingWindow;
    attention.rotary = &rotary;
    mlir::Value attn = b.causalAttention(q, k, v, attention, at + ".attn");
    attn = b.linearLayer(attn, hf + ".self_attn.o_proj", qWidth, p.dim, false,
                         at + ".attn.o_proj");
    h = b.add(h, attn, at + ".attn_residual");

    x = b.rmsNormLayer(h, hf + ".post_attention_layernorm", p.dim, p.epsilon,
                       at + ".mlp_norm");
    // gate_up_proj's output is [gate | up].
    mlir::Value gateUp =
        b.linearLayer(x, hf + ".mlp.gate_up_proj", p.dim, 2 * p.inner, false,
                      at + ".mlp.gate_up_proj");
    mlir::Value gate = b.sliceLast(gateUp, 0, p.inner, at + ".mlp.split_gate");
    mlir::Value up =
        b.sliceLast(gateUp, p.inner, 2 * p.inner, at + ".mlp.split_up");
    x = b.gatedActivation(gate, up, p.act, at + ".mlp");
    x = b.linearLayer(x, hf + ".mlp.down_proj", p.inner, p.dim, false,
                      at + ".mlp.down_proj");
    h = b.add(h, x, at + ".mlp_residual");
  }

  h = b.rmsNormLayer(h, "model.norm", p.dim, p.epsilon, "final_norm");
  return b.finishWithLmHead(h, p.tied, embed, "lm_head.weight", p.vocab, p.dim);
}

} // namespace hybridc::hf
