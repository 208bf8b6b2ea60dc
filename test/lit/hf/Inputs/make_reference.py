#!/usr/bin/env python3
"""Reference checkpoints for the HF families the shared fixtures do not cover.

For each folder holding a config.json, writes
  model.safetensors  random weights under the HuggingFace names, and
  ref.safetensors    input_ids [2, 12] (int64) and logits [2, 12, vocab] (f32)
computed by a float32 numpy transcription of transformers' modeling code
(GPT2LMHeadModel, OPTForCausalLM, Llama/Mistral/Qwen2ForCausalLM,
GPTNeoXForCausalLM, Phi3ForCausalLM, BloomForCausalLM in eval mode).

It is an independent reading of HF, not HF itself: the e2e parity tests built
on it check the compiler and runtime on every family's graph shape (GQA,
sliding windows, ALiBi, partial rotary, packed projections); the fixtures in
../shared/fixtures remain the oracle for HF's semantics. Needs only numpy.

    python3 make_reference.py Inputs/mistral Inputs/qwen2 ...
"""
import json
import math
import os
import struct
import sys
import zlib

import numpy as np

f32 = np.float32
BATCH, SEQ = 2, 12


class Weights:
    """Creates each named weight on first use (deterministic per name)."""

    def __init__(self):
        self.tensors = {}

    def __call__(self, name, shape):
        if name not in self.tensors:
            rng = np.random.default_rng(zlib.crc32(name.encode()))
            if len(shape) > 1:
                w = rng.standard_normal(shape) * 0.3
            elif "norm" in name or ".ln" in name or name.endswith("ln_f.weight"):
                w = 1.0 + 0.1 * rng.standard_normal(shape) if name.endswith("weight") \
                    else 0.1 * rng.standard_normal(shape)
            else:
                w = 0.1 * rng.standard_normal(shape)
            self.tensors[name] = w.astype(f32)
        w = self.tensors[name]
        assert list(w.shape) == list(shape), (name, w.shape, shape)
        return w


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + f32(eps))
    return y * w + b if w is not None else y


def rms_norm(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + f32(eps)))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(f32(math.sqrt(2 / math.pi)) * (x + f32(0.044715) * x ** 3)))


def gelu_erf(x):
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return (0.5 * x * (1 + erf(x / math.sqrt(2)))).astype(f32)


ACT2FN = {
    "gelu": gelu_erf,
    "gelu_new": gelu_tanh,
    "gelu_pytorch_tanh": gelu_tanh,
    "relu": lambda x: np.maximum(x, f32(0)),
    "silu": lambda x: x / (1 + np.exp(-x)),
}


def linear(x, w, b=None):
    y = x @ w.T
    return y if b is None else y + b


def split_heads(x, heads, head_dim):
    b, t, _ = x.shape
    return x.reshape(b, t, heads, head_dim).transpose(0, 2, 1, 3)


def merge_heads(x):
    b, h, t, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, t, h * d)


def attention(q, k, v, scale, window=None, bias=None):
    """eager_attention_forward with HF's causal (and sliding-window) mask."""
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, 1), np.repeat(v, groups, 1)
    scores = (q @ np.swapaxes(k, 2, 3)) * f32(scale)
    if bias is not None:
        scores = scores + bias
    i = np.arange(q.shape[2])[:, None]
    j = np.arange(k.shape[2])[None, :]
    allowed = j <= i
    if window:
        allowed &= j > i - window
    scores = np.where(allowed, scores, np.finfo(f32).min)
    scores = scores - scores.max(-1, keepdims=True)
    p = np.exp(scores)
    return (p / p.sum(-1, keepdims=True)) @ v


def rope_parameters(cfg, default_partial=1.0):
    params = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    theta = params.get("rope_theta", cfg.get("rope_theta", cfg.get("rotary_emb_base", 10000.0)))
    partial = params.get("partial_rotary_factor",
                         cfg.get("partial_rotary_factor", cfg.get("rotary_pct", default_partial)))
    return params, theta, partial


def rotary_tables(cfg, head_dim, seq, default_partial=1.0):
    params, theta, partial = rope_parameters(cfg, default_partial)
    dim = int(head_dim * partial)
    inv_freq = f32(1.0) / (f32(theta) ** (np.arange(0, dim, 2).astype(f32) / f32(dim)))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind == "linear":
        inv_freq = inv_freq / f32(params["factor"])
    elif kind == "llama3":
        factor, low, high = params["factor"], params["low_freq_factor"], params["high_freq_factor"]
        old = params["original_max_position_embeddings"]
        wavelen = f32(2 * math.pi) / inv_freq
        scaled = np.where(wavelen > old / low, inv_freq / f32(factor), inv_freq)
        smooth = (f32(old) / wavelen - f32(low)) / f32(high - low)
        smoothed = (1 - smooth) * scaled / f32(factor) + smooth * scaled
        medium = ~(wavelen < old / high) & ~(wavelen > old / low)
        inv_freq = np.where(medium, smoothed, scaled)
    else:
        assert kind == "default", kind
    freqs = np.arange(seq).astype(f32)[:, None] * inv_freq.astype(f32)[None, :]
    emb = np.concatenate([freqs, freqs], -1)
    return np.cos(emb)[None, None], np.sin(emb)[None, None]


def apply_rotary(x, cos, sin):
    dim = cos.shape[-1]
    rot, rest = x[..., :dim], x[..., dim:]
    half = dim // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], -1)
    return np.concatenate([rot * cos + rotated * sin, rest], -1)


def gpt2(c, W, ids):
    d, h, layers, vocab = c["n_embd"], c["n_head"], c["n_layer"], c["vocab_size"]
    inner, hd = c.get("n_inner") or 4 * d, d // h
    eps, act = c.get("layer_norm_epsilon", 1e-5), ACT2FN[c.get("activation_function", "gelu_new")]
    wte = W("transformer.wte.weight", [vocab, d])
    x = wte[ids] + W("transformer.wpe.weight", [c["n_positions"], d])[np.arange(ids.shape[1])]
    for i in range(layers):
        p = f"transformer.h.{i}."
        y = layer_norm(x, W(p + "ln_1.weight", [d]), W(p + "ln_1.bias", [d]), eps)
        qkv = y @ W(p + "attn.c_attn.weight", [d, 3 * d]) + W(p + "attn.c_attn.bias", [3 * d])
        q, k, v = (split_heads(t, h, hd) for t in np.split(qkv, 3, -1))
        scale = 1 / math.sqrt(hd) if c.get("scale_attn_weights", True) else 1.0
        if c.get("scale_attn_by_inverse_layer_idx", False):
            scale /= i + 1
        a = merge_heads(attention(q, k, v, scale))
        x = x + a @ W(p + "attn.c_proj.weight", [d, d]) + W(p + "attn.c_proj.bias", [d])
        y = layer_norm(x, W(p + "ln_2.weight", [d]), W(p + "ln_2.bias", [d]), eps)
        y = act(y @ W(p + "mlp.c_fc.weight", [d, inner]) + W(p + "mlp.c_fc.bias", [inner]))
        x = x + y @ W(p + "mlp.c_proj.weight", [inner, d]) + W(p + "mlp.c_proj.bias", [d])
    x = layer_norm(x, W("transformer.ln_f.weight", [d]), W("transformer.ln_f.bias", [d]), eps)
    tied = c.get("tie_word_embeddings", True)
    return linear(x, wte if tied else W("lm_head.weight", [vocab, d]))


def opt(c, W, ids):
    d, h, layers, vocab, ffn = (c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"],
                                c["vocab_size"], c["ffn_dim"])
    proj, hd = c.get("word_embed_proj_dim") or d, d // h
    pre, bias = c.get("do_layer_norm_before", True), c.get("enable_bias", True)
    act = ACT2FN[c.get("activation_function", "relu")]

    def dense(x, name, n_in, n_out):
        return linear(x, W(name + ".weight", [n_out, n_in]), W(name + ".bias", [n_out]) if bias else None)

    def norm(x, name):
        return layer_norm(x, W(name + ".weight", [d]), W(name + ".bias", [d]), 1e-5)

    embed = W("model.decoder.embed_tokens.weight", [vocab, proj])
    x = embed[ids]
    if proj != d:
        x = linear(x, W("model.decoder.project_in.weight", [d, proj]))
    positions = W("model.decoder.embed_positions.weight", [c["max_position_embeddings"] + 2, d])
    x = x + positions[np.arange(ids.shape[1]) + 2]
    for i in range(layers):
        p = f"model.decoder.layers.{i}."
        y = norm(x, p + "self_attn_layer_norm") if pre else x
        q = dense(y, p + "self_attn.q_proj", d, d) * f32(hd ** -0.5)
        k, v = dense(y, p + "self_attn.k_proj", d, d), dense(y, p + "self_attn.v_proj", d, d)
        a = merge_heads(attention(split_heads(q, h, hd), split_heads(k, h, hd), split_heads(v, h, hd), 1.0))
        x = x + dense(a, p + "self_attn.out_proj", d, d)
        if not pre:
            x = norm(x, p + "self_attn_layer_norm")
        y = norm(x, p + "final_layer_norm") if pre else x
        x = x + dense(act(dense(y, p + "fc1", d, ffn)), p + "fc2", ffn, d)
        if not pre:
            x = norm(x, p + "final_layer_norm")
    if pre and not c.get("_remove_final_layer_norm", False):
        x = norm(x, "model.decoder.final_layer_norm")
    if proj != d:
        x = linear(x, W("model.decoder.project_out.weight", [proj, d]))
    tied = c.get("tie_word_embeddings", True)
    return linear(x, embed if tied else W("lm_head.weight", [vocab, proj]))


def llama(c, W, ids):
    kind = c["model_type"]
    d, h, layers, vocab, inner = (c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"],
                                  c["vocab_size"], c["intermediate_size"])
    kv, hd = c.get("num_key_value_heads") or h, c.get("head_dim") or d // h
    eps, act = c.get("rms_norm_eps", 1e-6), ACT2FN[c.get("hidden_act", "silu")]
    qkv_bias = c.get("attention_bias", False) if kind == "llama" else kind == "qwen2"
    o_bias = c.get("attention_bias", False) if kind == "llama" else False
    mlp_bias = c.get("mlp_bias", False) if kind == "llama" else False
    if kind == "mistral":
        windows = [c.get("sliding_window", 4096)] * layers
    elif kind == "qwen2":
        window = c.get("sliding_window", 4096) if c.get("use_sliding_window", False) else None
        first = c.get("max_window_layers", 28)
        windows = [window if window and i >= first else None for i in range(layers)]
    else:
        windows = [None] * layers

    def dense(x, name, n_in, n_out, has_bias):
        return linear(x, W(name + ".weight", [n_out, n_in]), W(name + ".bias", [n_out]) if has_bias else None)

    cos, sin = rotary_tables(c, hd, ids.shape[1])
    embed = W("model.embed_tokens.weight", [vocab, d])
    x = embed[ids]
    for i in range(layers):
        p = f"model.layers.{i}."
        y = rms_norm(x, W(p + "input_layernorm.weight", [d]), eps)
        q = split_heads(dense(y, p + "self_attn.q_proj", d, h * hd, qkv_bias), h, hd)
        k = split_heads(dense(y, p + "self_attn.k_proj", d, kv * hd, qkv_bias), kv, hd)
        v = split_heads(dense(y, p + "self_attn.v_proj", d, kv * hd, qkv_bias), kv, hd)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        a = merge_heads(attention(q, k, v, hd ** -0.5, windows[i]))
        x = x + dense(a, p + "self_attn.o_proj", h * hd, d, o_bias)
        y = rms_norm(x, W(p + "post_attention_layernorm.weight", [d]), eps)
        gate = dense(y, p + "mlp.gate_proj", d, inner, mlp_bias)
        up = dense(y, p + "mlp.up_proj", d, inner, mlp_bias)
        x = x + dense(act(gate) * up, p + "mlp.down_proj", inner, d, mlp_bias)
    x = rms_norm(x, W("model.norm.weight", [d]), eps)
    tied = c.get("tie_word_embeddings", False)
    return linear(x, embed if tied else W("lm_head.weight", [vocab, d]))


def gpt_neox(c, W, ids):
    d, h, layers, vocab, inner = (c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"],
                                  c["vocab_size"], c["intermediate_size"])
    hd, eps = d // h, c.get("layer_norm_eps", 1e-5)
    act, attn_bias = ACT2FN[c.get("hidden_act", "gelu")], c.get("attention_bias", True)

    def dense(x, name, n_in, n_out, has_bias=True):
        return linear(x, W(name + ".weight", [n_out, n_in]), W(name + ".bias", [n_out]) if has_bias else None)

    def norm(x, name):
        return layer_norm(x, W(name + ".weight", [d]), W(name + ".bias", [d]), eps)

    b, t = ids.shape
    cos, sin = rotary_tables(c, hd, t, default_partial=0.25)
    embed = W("gpt_neox.embed_in.weight", [vocab, d])
    x = embed[ids]
    for i in range(layers):
        p = f"gpt_neox.layers.{i}."
        qkv = dense(norm(x, p + "input_layernorm"), p + "attention.query_key_value", d, 3 * d, attn_bias)
        q, k, v = np.split(qkv.reshape(b, t, h, 3 * hd).transpose(0, 2, 1, 3), 3, -1)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        a = dense(merge_heads(attention(q, k, v, hd ** -0.5)), p + "attention.dense", d, d, attn_bias)

        def mlp(y):
            y = dense(norm(y, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h", d, inner)
            return dense(act(y), p + "mlp.dense_4h_to_h", inner, d)

        if c.get("use_parallel_residual", True):
            x = mlp(x) + a + x
        else:
            a = a + x
            x = mlp(a) + a
    x = norm(x, "gpt_neox.final_layer_norm")
    tied = c.get("tie_word_embeddings", False)
    return linear(x, embed if tied else W("embed_out.weight", [vocab, d]))


def phi3(c, W, ids):
    d, h, layers, vocab, inner = (c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"],
                                  c["vocab_size"], c["intermediate_size"])
    kv, hd = c.get("num_key_value_heads") or h, c.get("head_dim") or d // h
    eps, act = c.get("rms_norm_eps", 1e-5), ACT2FN[c.get("hidden_act", "silu")]
    cos, sin = rotary_tables(c, hd, ids.shape[1])
    embed = W("model.embed_tokens.weight", [vocab, d])
    x = embed[ids]
    for i in range(layers):
        p = f"model.layers.{i}."
        y = rms_norm(x, W(p + "input_layernorm.weight", [d]), eps)
        qkv = linear(y, W(p + "self_attn.qkv_proj.weight", [(h + 2 * kv) * hd, d]))
        q = split_heads(qkv[..., :h * hd], h, hd)
        k = split_heads(qkv[..., h * hd:(h + kv) * hd], kv, hd)
        v = split_heads(qkv[..., (h + kv) * hd:], kv, hd)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        a = merge_heads(attention(q, k, v, hd ** -0.5, c.get("sliding_window")))
        x = x + linear(a, W(p + "self_attn.o_proj.weight", [d, h * hd]))
        y = rms_norm(x, W(p + "post_attention_layernorm.weight", [d]), eps)
        gate, up = np.split(linear(y, W(p + "mlp.gate_up_proj.weight", [2 * inner, d])), 2, -1)
        x = x + linear(up * act(gate), W(p + "mlp.down_proj.weight", [d, inner]))
    x = rms_norm(x, W("model.norm.weight", [d]), eps)
    tied = c.get("tie_word_embeddings", False)
    return linear(x, embed if tied else W("lm_head.weight", [vocab, d]))


def bloom(c, W, ids):
    d, h, layers, vocab = c["hidden_size"], c["n_head"], c["n_layer"], c["vocab_size"]
    hd, eps = d // h, c.get("layer_norm_epsilon", 1e-5)
    post = c.get("apply_residual_connection_post_layernorm", False)
    b, t = ids.shape
    # build_alibi_tensor: slope[h] * key position.
    closest = 2 ** math.floor(math.log2(h))
    base = f32(2 ** (-(2 ** -(math.log2(closest) - 3))))
    slopes = base ** np.arange(1, 1 + closest).astype(f32)
    if closest != h:
        extra = f32(2 ** (-(2 ** -(math.log2(2 * closest) - 3))))
        count = min(closest, h - closest)
        slopes = np.concatenate([slopes, extra ** np.arange(1, 1 + 2 * count, 2).astype(f32)])
    alibi = (slopes[:, None] * np.arange(t).astype(f32)[None, :])[None, :, None, :]

    def dense(x, name, n_in, n_out):
        return linear(x, W(name + ".weight", [n_out, n_in]), W(name + ".bias", [n_out]))

    def norm(x, name):
        return layer_norm(x, W(name + ".weight", [d]), W(name + ".bias", [d]), eps)

    embed = W("transformer.word_embeddings.weight", [vocab, d])
    x = norm(embed[ids], "transformer.word_embeddings_layernorm")
    for i in range(layers):
        p = f"transformer.h.{i}."
        y = norm(x, p + "input_layernorm")
        residual = y if post else x
        qkv = dense(y, p + "self_attention.query_key_value", d, 3 * d).reshape(b, t, h, 3, hd)
        q, k, v = (qkv[..., j, :].transpose(0, 2, 1, 3) for j in range(3))
        a = merge_heads(attention(q, k, v, 1 / math.sqrt(hd), bias=alibi))
        x = dense(a, p + "self_attention.dense", d, d) + residual
        y = norm(x, p + "post_attention_layernorm")
        residual = y if post else x
        y = gelu_tanh(dense(y, p + "mlp.dense_h_to_4h", d, 4 * d))
        x = dense(y, p + "mlp.dense_4h_to_h", 4 * d, d) + residual
    x = norm(x, "transformer.ln_f")
    tied = c.get("tie_word_embeddings", True)
    return linear(x, embed if tied else W("lm_head.weight", [vocab, d]))


FAMILIES = {"gpt2": gpt2, "opt": opt, "llama": llama, "mistral": llama, "qwen2": llama,
            "gpt_neox": gpt_neox, "phi3": phi3, "bloom": bloom}


def write_safetensors(path, tensors):
    dtypes = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name]).astype(tensors[name].dtype.newbyteorder("<"))
        blob = data.tobytes()
        header[name] = {"dtype": dtypes[data.dtype], "shape": list(data.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    for folder in sys.argv[1:]:
        config = json.load(open(os.path.join(folder, "config.json")))
        rng = np.random.default_rng(zlib.crc32(folder.rstrip("/").split("/")[-1].encode()))
        ids = rng.integers(0, config["vocab_size"], size=(BATCH, SEQ)).astype(np.int64)
        weights = Weights()
        logits = FAMILIES[config["model_type"]](config, weights, ids).astype(f32)
        write_safetensors(os.path.join(folder, "model.safetensors"), weights.tensors)
        write_safetensors(os.path.join(folder, "ref.safetensors"), {"input_ids": ids, "logits": logits})
        print(f"{folder}: {len(weights.tensors)} tensors, logits std {logits.std():.2f}")


if __name__ == "__main__":
    main()
