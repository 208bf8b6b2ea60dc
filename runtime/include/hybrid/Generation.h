// Generation with a bundle's @prefill and @decode executables: the options
// (HuggingFace's and DeepSpeed's names) and the result; and the options and
// result of an optimizer step (Engine::step, with fp16 loss scaling).
// Engine::generate runs it; the executables do all the work on the device,
// the host only starts steps and, every few of them, looks whether every
// row finished.
#pragma once

#include "hybrid/HostTensor.h"

#include <cstdint>

namespace hybrid {

struct GenerateConfig {
  int64_t maxNewTokens = 16;
  int64_t minNewTokens = 0; ///< EOS is banned before this many tokens
  /// Greedy (argmax) when true; else temperature / top-k / top-p sampling.
  bool greedy = true;
  float temperature = 1.0f; ///< > 0 when sampling
  int64_t topK = 0;         ///< 0: no top-k limit
  float topP = 1.0f;        ///< 1: no nucleus limit
  uint64_t seed = 0;        ///< counter-based: same seed, same tokens
  int64_t eosTokenId = -1;  ///< -1: no EOS (every row runs to the end)
  int64_t padTokenId = 0;   ///< what finished rows emit
  /// KV-cache capacity in tokens: prompt + new tokens must fit
  /// (DeepSpeed's hybrid_engine.max_out_tokens). 0 picks 512, or the
  /// model's position limit when that is smaller, or prompt + new tokens
  /// when that is larger. A capacity kept across calls keeps the cache:
  /// calls with other prompt lengths reuse it without reallocating.
  int64_t maxOutTokens = 0;
  /// Release the KV cache (and the other generation state) and the
  /// workspaces of @prefill and @decode to the device allocator when
  /// generate() returns (DeepSpeed's release_inference_cache); the next
  /// call takes them again (and captures its decode graph anew).
  bool releaseInferenceCache = false;
  /// Decode steps between two looks at whether every row finished.
  int64_t stopCheckInterval = 8;
  /// Capture the decode step once per batch bucket and replay it for every
  /// position (DeepSpeed's hybrid_engine.enable_cuda_graph), on devices
  /// that have graphs (CUDA; the CPU runs steps directly); the prompt's pass
  /// too, from the second call of a bucket on. A batch is then
  /// padded up to its bucket (a power of two up to 64, then a multiple of
  /// 64) with copies of its last row, whose results are dropped.
  bool cudaGraph = true;
};

/// The update rule a bundle's training executables were compiled with
/// (hybridc --train --optimizer=adamw|sgd).
enum class Optimizer { AdamW, Sgd };

/// fp16 dynamic loss scaling (DeepSpeed's fp16 block, its defaults): the
/// loss starts scaled by initialScale; a step whose gradients overflow is
/// skipped and spends one unit of hysteresis, or, with none left, halves
/// the scale (not below minScale); `window` good steps in a row double it
/// and refill the hysteresis. A static scale (DeepSpeed's loss_scale > 0:
/// dynamic false) never changes, and overflowing steps are still skipped.
struct LossScaleConfig {
  bool dynamic = true;
  float initialScale = 65536.0f; ///< 2^initial_scale_power, or loss_scale
  int64_t window = 1000;
  int64_t hysteresis = 2;
  float minScale = 1.0f;
};

/// The optimizer step's hyperparameters: torch.optim.AdamW's or
/// torch.optim.SGD's (the one the bundle was compiled with), with
/// DeepSpeed's gradient_clipping as max_grad_norm (0 turns clipping off).
struct StepConfig {
  Optimizer optimizer = Optimizer::AdamW;
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f; ///< AdamW
  float eps = 1e-8f;                  ///< AdamW
  float weightDecay = 0.01f;
  float momentum = 0.0f, dampening = 0.0f; ///< SGD
  bool nesterov = false;                   ///< SGD
  float maxGradNorm = 0.0f;
  LossScaleConfig lossScale; ///< bundles of f16 weights
};

struct StepResult {
  float gradNorm = 0;       ///< global L2 norm of the mean gradient, unclipped
  int64_t microBatches = 0; ///< forwardBackward calls the step averaged
  /// Bundles of f16 weights: the gradients overflowed and the step was
  /// skipped (weights, masters, moments and step count unchanged).
  bool overflow = false;
  float lossScale = 0;        ///< the scale the step's gradients carried
  float nextLossScale = 0;    ///< the scale of the next micro-batches
  int64_t hysteresisLeft = 0; ///< overflows the scale survives unchanged
};

struct GenerateResult {
  HostTensor tokens;   ///< i64 [batch, steps]; pad after a row's EOS
  HostTensor logprobs; ///< f32 [batch, steps]: log-softmax of the
                       ///< temperature-scaled logits at the chosen token
  HostTensor lengths;  ///< i64 [batch]: tokens up to and including EOS
  int64_t steps = 0;   ///< new tokens generated per row (<= maxNewTokens)
  double prefillMs = 0, decodeMs = 0; ///< wall time, device synchronised
  /// Device operations (kernels, copies) in one replay of the captured
  /// decode step; 0 when decode ran command by command.
  size_t decodeGraphOperations = 0;
  /// Fused LoRA: wall time of @lora_fuse and @lora_unfuse together.
  double loraMergeMs = 0;
};

} // namespace hybrid
