// Llama-style decoders (LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM): RMSNorm, rotary q/k, grouped-query attention, SwiGLU.
// The three differ in projection biases and sliding-window attention.
#include "frontends/hf/DecoderBuilder.h"
#include "frontends/hf/Families.h"

#include <cassert>
#include <cmath>

namespace hybridc::hf {

namespace {

struct LlamaParams : LlamaStyleParams {
  bool qkvBias, outBias, mlpBias;
  /// Sliding window per layer; 0 for full causal attention.
  std::vector<int64_t> windows;
  RopeFrequencies rope;
};

/// `sliding_window` as Mistral and Qwen2 configs define it: 4096 when the
/// key is absent (their class default), none when null.
std::optional<int64_t> readSlidingWindow(HfConfig &config) {
  if (!config.isPresent("sliding_window"))
    return 4096;
  if (!config.has("sliding_window"))
    return std::nullopt;
  return config.getSize("sliding_window");
}

/// Qwen2: `use_sliding_window` gates `sliding_window`, which applies to the
/// layers `layer_types` marks "sliding_attention" (by default layers at and
/// past `max_window_layers`).
std::vector<int64_t> readQwen2Windows(HfConfig &config, int64_t layers) {
  std::optional<int64_t> window;
  if (config.getBool("use_sliding_window", false))
    window = readSlidingWindow(config);
  std::vector<std::string> types = config.getStringList("layer_types");
  if (types.empty()) {
    int64_t firstSliding = config.getInt("max_window_layers", 28);
    for (int64_t i = 0; i < layers; ++i)
      types.push_back(window && i >= firstSliding ? "sliding_attention"
                                                  : "full_attention");
  }
  if (types.size() != static_cast<size_t>(layers)) {
    config.reject("'layer_types' has " + llvm::Twine(types.size()) +
                  " entries for " + llvm::Twine(layers) + " layers");
    return {};
  }
  std::vector<int64_t> windows;
  for (int64_t i = 0; i < layers; ++i) {
    if (types[i] == "full_attention") {
      windows.push_back(0);
    } else if (types[i] == "sliding_attention") {
      if (!window) {
        config.reject("layer_types marks layer " + llvm::Twine(i) +
                      " sliding_attention but no sliding_window is in use");
        return {};
      }
      windows.push_back(*window);
    } else {
      config.reject("unsupported layer type '" + types[i] +
                    "' in 'layer_types' (supported: full_attention, "
                    "sliding_attention)");
      return {};
    }
  }
  return windows;
}

LlamaParams readLlama(HfConfig &config) {
  llvm::StringRef type = config.modelType();
  LlamaParams p;
  readLlamaStyleParams(config, 1e-6, p);

  if (type == "llama") {
    p.qkvBias = p.outBias = config.getBool("attention_bias", false);
    p.mlpBias = config.getBool("mlp_bias", false);
    p.windows.assign(p.layers, 0);
  } else if (type == "mistral") {
    p.qkvBias = p.outBias = p.mlpBias = false;
    int64_t window = readSlidingWindow(config).value_or(0);
    p.windows.assign(p.layers, window);
  } else {
    assert(type == "qwen2" && "importLlama dispatched an unknown family");
    p.qkvBias = true;
    p.outBias = p.mlpBias = false;
    p.windows = readQwen2Windows(config, p.layers);
  }
  if (!config.failed())
    p.rope = readRopeFrequencies(config, p.headDim, RopeDefaults{});
  return p;
}

} // namespace

ImportResult importLlama(mlir::MLIRContext &context, HfConfig &config) {
  LlamaParams p = readLlama(config);
  if (llvm::Error error = config.takeError())
    return std::move(error);

  DecoderBuilder b(context, config, /*basePrefix=*/"model.");
  mlir::Value embed = b.param("model.embed_tokens.weight", {p.vocab, p.dim});
  mlir::Value h =
      b.embedding(embed, b.inputIds(), "embed.tokens", p.paddingIdx);
  RotaryTables rotary = b.rotaryTables(p.rope);

  for (int64_t i = 0; i < p.layers; ++i) {
    std::string hf = "model.layers." + std::to_string(i);
    std::string at = "layers." + std::to_string(i);

    mlir::Value x = b.rmsNormLayer(h, hf + ".input_layernorm", p.dim, p.epsilon,
                                   at + ".attn_norm");
    auto projection = [&](const char *name, int64_t heads) {
      mlir::Value y =
          b.linearLayer(x, hf + ".self_attn." + name, p.dim, heads * p.headDim,
                        p.qkvBias, at + ".attn." + name);
      return b.splitHeads(y, heads, p.headDim, at + ".attn." + name + "_heads");
    };
    mlir::Value q = projection("q_proj", p.heads);
    mlir::Value k = projection("k_proj", p.kvHeads);
    mlir::Value v = projection("v_proj", p.kvHeads);
    AttentionOptions attention;
    attention.scale = 1.0 / std::sqrt(double(p.headDim));
    attention.slidingWindow = p.windows[i];
    attention.rotary = &rotary;
    mlir::Value attn = b.causalAttention(q, k, v, attention, at + ".attn");
    attn = b.linearLayer(attn, hf + ".self_attn.o_proj", p.heads * p.headDim,
                         p.dim, p.outBias, at + ".attn.o_proj");
    h = b.add(h, attn, at + ".attn_residual");

    x = b.rmsNormLayer(h, hf + ".post_attention_layernorm", p.dim, p.epsilon,
                       at + ".mlp_norm");
    mlir::Value gate = b.linearLayer(x, hf + ".mlp.gate_proj", p.dim, p.inner,
                                     p.mlpBias, at + ".mlp.gate_proj");
    mlir::Value up = b.linearLayer(x, hf + ".mlp.up_proj", p.dim, p.inner,
                                   p.mlpBias, at + ".mlp.up_proj");
    x = b.gatedActivation(gate, up, p.act, at + ".mlp");
    x = b.linearLayer(x, hf + ".mlp.down_proj", p.inner, p.dim, p.mlpBias,
                      at + ".mlp.down_proj");
    h = b.add(h, x, at + ".mlp_residual");
  }

  h = b.rmsNormLayer(h, "model.norm", p.dim, p.epsilon, "final_norm");
  return b.finishWithLmHead(h, p.tied, embed, "lm_head.weight", p.vocab, p.dim);
}

} // namespace hybridc::hf
