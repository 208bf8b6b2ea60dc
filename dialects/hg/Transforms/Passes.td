// Passes over the hg dialect, grouped and alphabetical.
#ifndef HG_TRANSFORMS_PASSES_TD
#define HG_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// LoRA adapters (PEFT's names and files; DeepSpeed-Chat's step 3)
//===----------------------------------------------------------------------===//

def Lora : Pass<"hg-lora", "mlir::ModuleOp"> {
  let summary = "LoRA adapters on @forward's targeted linears";
  let description = [{
    Gives each targeted hg.linear of @forward, whose weight is the parameter
    `<module>.weight` (W [out, in], or [in, out] for a GPT-2 Conv1D:
    transpose_weight = false), two parameters as PEFT names them in
    adapter_model.safetensors: `base_model.model.<module>.lora_A.weight`
    A [r, in] and `base_model.model.<module>.lora_B.weight` B [out, r],
    and adds their path beside the linear:
      y = linear(x, W, bias) + linear(linear(x, A) * alpha / r, B)
    (PEFT's x W^T + b + B(A(x)) * scaling). A module is targeted when its
    path equals a target or ends in "." + target (PEFT's target_modules
    list); without targets, every linear of a numbered block (a path with
    a numeric component: model.layers.3.mlp.up_proj, transformer.h.0.attn.
    c_attn): the decoder layers, not the embeddings or the head. A target
    that matches no linear, a weight shared with another op (tied) and a
    linear that already has a fused epilogue are errors naming them. With
    only-optimize, every other parameter of @forward gets `hg.frozen`:
    hg-autodiff gives it no gradient, so the optimizer passes give it no
    accumulator, moment or master (DeepSpeed-Chat's only_optimize_lora).
    The module attribute `hg.lora` records rank, alpha, the targets and,
    per adapter, module, weight, A, B and whether W is [in, out]
    (`fan_in_fan_out`), for the bundle and hg-lora-fused-generation.
  }];
  let options = [
    Option<"rank", "rank", "int64_t", "8", "r: the adapters' rank">,
    Option<"alpha", "alpha", "double", "1.0",
           "lora_alpha: the path is scaled by alpha / r">,
    ListOption<"targets", "targets", "std::string",
               "module names or suffixes (PEFT's target_modules); none: "
               "every linear of a numbered block">,
    Option<"onlyOptimize", "only-optimize", "bool", "false",
           "freeze every parameter but the adapters (hg.frozen)">
  ];
}

def LoraFusedGeneration : Pass<"hg-lora-fused-generation", "mlir::ModuleOp"> {
  let summary = "@prefill/@decode on merged weights, @lora_fuse/@lora_unfuse";
  let description = [{
    After hg-split-generation on a module with `hg.lora` (hg-lora): removes
    the adapters' path from @prefill and @decode, which then read the base
    weights alone, and adds @lora_fuse, which adds alpha / r x B A (its
    transpose for a [in, out] weight) into every adapted weight in place,
    and @lora_unfuse, which subtracts it again: what DeepSpeed's hybrid
    engine does around generate (fuse_lora_weight, unfuse_lora_weight).
    The runtime runs them around Engine::generate, so generation costs no
    adapter GEMMs and every other executable sees unmerged weights. A
    round trip rounds twice: W comes back within one rounding of W + d of
    where it was (bench/RESULTS.md measures the drift).
  }];
}

//===----------------------------------------------------------------------===//
// Training: the train lowering of @forward (DESIGN §1)
//===----------------------------------------------------------------------===//

def CausalLmLoss : Pass<"hg-causal-lm-loss", "mlir::ModuleOp"> {
  let summary = "@forward_loss and @logprobs: HF's causal-LM loss, per token";
  let description = [{
    Adds @forward_loss, a copy of @forward (input_ids -> logits) that also
    takes `labels` (i64, input_ids' shape) and returns `loss` [1]: the mean
    cross-entropy (in f32) of the logits at position t against
    labels[t + 1], over labels other than -100, as HF computes it with
    `labels` (position t is scored against labels[t + 1], -100 ignored).
    Omitted, `labels` is filled with -2^63, which reads as input_ids with
    -100 where attention_mask is 0 (HF's labels =
    input_ids.masked_fill(attention_mask == 0, -100)), so padding never
    counts. A batch without a label that counts has loss 0 and zero
    gradients (HF's is NaN). And @logprobs returning `logprobs`
    [batch, seq - 1]: the log-probability of each next token of input_ids
    (PPO's per-token log-probs of the actor and the reference model).
  }];
}

def PpoLosses : Pass<"hg-ppo-losses", "mlir::ModuleOp"> {
  let summary = "DeepSpeed-Chat's PPO losses and experience maths";
  let description = [{
    Adds @ppo_actor_loss, a copy of @logprobs (hg-causal-lm-loss) that
    takes the experience as inputs of the log-probabilities' shape [batch,
    seq - 1] (position t scores token t + 1): `old_logprobs`, `advantages`
    and `action_mask` (f32, 1 for the answer's tokens, 0 for the prompt and
    padding), and returns `loss` [1]: the clipped surrogate
    (hg.clipped_surrogate, clip range [1 - clip-low, 1 + clip-high]) summed
    over the actions and divided by their count, as DeepSpeed-Chat's
    actor_loss_fn. The function is marked `hg.loss`, and `hg.accumulate`
    names the executable the optimizer pass builds from its gradient
    (@ppo_actor_forward_backward).
    On a value model (@forward returning `values` [batch, seq]) instead:
    @critic_loss, a copy of @forward over values[:, :-1] taking
    `old_values`, `returns` and `action_mask` of that shape and returning
    0.5 x the masked mean of hg.clipped_value_loss (clip
    cliprange-value), DeepSpeed-Chat's critic_loss_fn, accumulated by
    @critic_forward_backward; and @ppo_experience, DeepSpeed-Chat's
    compute_rewards and GAE from the models' outputs: (logprobs,
    ref_logprobs, values [batch, actions], reward_scores [batch],
    action_mask, kl_ctl [1]) -> rewards, old_values, advantages and
    returns (the last two from start = prompt-length - 1 on).
    With grpo, a language model also gets @grpo_loss (inputs old_logprobs,
    ref_logprobs, advantages, action_mask as @ppo_actor_loss's): the
    clipped surrogate plus kl-beta x hg.kl_k3 per token, hg.masked_mean
    per sequence (GRPO) or per token (DAPO), accumulated by
    @grpo_forward_backward; and @grpo_advantages (scores [batch] ->
    advantages [batch], hg.group_advantages over groups of group-size).
  }];
  let options = [
    Option<"clipLow", "clip-low", "double", "0.2",
           "the ratio's clip below 1 (DeepSpeed-Chat's cliprange)">,
    Option<"clipHigh", "clip-high", "double", "0.2",
           "the ratio's clip above 1 (DAPO's clip-higher; cliprange)">,
    Option<"cliprangeValue", "cliprange-value", "double", "0.2",
           "the value's clip around the old value">,
    Option<"promptLength", "prompt-length", "int64_t", "0",
           "a value model's experience: the prompts' (padded) length">,
    Option<"clipRewardValue", "clip-reward-value", "double", "5.0",
           "the reward score's clip">,
    Option<"grpo", "grpo", "bool", "false",
           "a language model: also @grpo_loss and @grpo_advantages">,
    Option<"groupSize", "group-size", "int64_t", "1",
           "GRPO: samples per prompt, contiguous in a batch">,
    Option<"klBeta", "kl-beta", "double", "0.04",
           "GRPO: the k3 KL penalty's coefficient (0: none)">,
    Option<"perSequence", "per-sequence", "bool", "true",
           "GRPO: average per sequence (GRPO) or per token (DAPO)">,
    Option<"scaleAdvantages", "scale-advantages", "bool", "true",
           "GRPO: divide the advantages by the group's std">,
    Option<"gamma", "gamma", "double", "1.0", "GAE's discount">,
    Option<"lambda", "lambda", "double", "0.95", "GAE's lambda">
  ];
}

def RewardLoss : Pass<"hg-reward-loss", "mlir::ModuleOp"> {
  let summary = "DeepSpeed-Chat's reward-model (step 2) pairwise ranking loss";
  let description = [{
    On a value model (@forward taking input_ids and attention_mask [batch,
    seq] and returning `values` [batch, seq]), adds @reward_loss, a copy of
    @forward whose batch is 2B rows, the chosen answers then the rejected
    ones (pair b = rows b and B + b; right padding, attention_mask 0 at
    padding: DeepSpeed-Chat's num_padding_at_beginning = 0), returning
    hg.pairwise_ranking_loss's `loss` [1] (RewardModel.forward's mean over
    pairs of -logsigmoid(chosen - rejected) averaged from the first
    differing position to the later end), `end_scores` [batch] (each row's
    value at its last token: chosen_mean_scores, then
    rejected_mean_scores) and `accuracy` [1] (the fraction of pairs whose
    chosen end score is the higher). The function is marked `hg.loss`,
    `hg.accumulate` naming @reward_forward_backward, the accumulation the
    optimizer pass builds from its gradient; end_scores and accuracy are
    marked `hg.metric`, so hg-autodiff and the accumulation keep them.
  }];
}

def AdamW : Pass<"hg-adamw", "mlir::ModuleOp"> {
  let summary = "The optimizer executables: AdamW in place, accumulation";
  let description = [{
    From @forward_loss_grad, with torch.optim.AdamW's update (decoupled
    weight decay, bias-corrected moments; one hg.adamw_update per
    parameter) written back in place (results
    tagged `hg.param`), the moments (`opt.exp_avg.<name>`,
    `opt.exp_avg_sq.<name>`, f32) and the step count (`opt.step`) as state,
    and lr, beta1, beta2, eps, weight_decay as f32 [1] inputs (defaults
    1e-3, 0.9, 0.999, 1e-8, 0.01):
    * @train_step: one batch's loss and gradients, then the update;
    * @forward_backward: a micro-batch's loss, its gradients added to the
      f32 accumulators `opt.grad.<name>`;
    * @step: the accumulators times `grad_scale`, clipped to the global L2
      norm `max_grad_norm` (0: off) as clip_grad_norm_ does, then the
      update; returns `grad_norm`. The caller zeroes the accumulators;
    * @backward, when the module has @forward_vjp (hg-autodiff
      `cotangent=logits`): the gradients of a loss computed outside the
      model, from its cotangent `grad_logits`, added to the same
      accumulators.
    A module with @forward_vjp and no @forward_loss_grad (a value model,
    `cotangent=values`: its losses are computed outside it) gets @step,
    @init_optimizer and @backward over @forward_vjp, no @train_step or
    @forward_backward.
    Precision plan (shared with hg-sgd). A bf16 or f16 parameter is updated
    through an f32 master copy (state `opt.master.<name>`) and written back
    as its cast: here the update's own fourth result (hg.adamw_update's
    `working_dtype`), which also reads a bf16 or f16 gradient as it is,
    so no cast runs around it; @init_optimizer copies the working weights
    into the masters (the engine runs it after binding weights). When
    @forward_loss_grad reads state `opt.loss_scale` (hg-autodiff's
    `loss-scale`: fp16), @step and @train_step unscale the gradients, take
    an inf or NaN global norm as an overflow and then skip the step (every
    write-back keeps its old value through a select), and update the scale
    as DeepSpeed's dynamic loss scaling does (inputs dynamic_loss_scale,
    loss_scale_window, hysteresis, min_loss_scale; states
    `opt.loss_scale`, `opt.loss_scale_hysteresis`,
    `opt.loss_scale_good_steps`, started by @init_optimizer from
    initial_loss_scale and hysteresis); they return `overflow` (0: none,
    1: skipped, the hysteresis spent; 2: skipped, the scale shifted),
    `loss_scale` (the one the step's gradients carried), `next_loss_scale`
    and `hysteresis_left`.
  }];
}

def Autodiff : Pass<"hg-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode gradients of a scalar loss w.r.t. the parameters";
  let description = [{
    Adds @<function>_grad: a copy of @<function> that returns its result
    named `loss` (one float) and, for each parameter argument (`hg.param`)
    not marked `hg.frozen` (hg-lora's only-optimize), the gradient of the
    loss with respect to it (`hg.name` = "grad.<checkpoint name>"), and after
    the loss its results marked `hg.metric`, as they are. Each op's
    vector-Jacobian rule comes from
    VjpOpInterface (VjpRules.cpp); gradients of a value used several times
    are summed; integer and boolean values stop gradients. An op on the
    path with float results and no rule is an error naming it, as is a
    linear with a fused epilogue (differentiate first, fuse after).
    With `cotangent=R`, the backward pass starts from an input instead:
    @<function>_vjp takes `grad_R` (f32, the shape of the result named R,
    its dynamic sizes named in `hg.dims` as R's) and returns, for each
    parameter, the gradient of sum(R * grad_R) (a vector-Jacobian product;
    no loss). With `loss-scale` too, the cotangent is multiplied by it.
    `loss-scale-f16-only` lets a pipeline name the scale for every model
    and have it only where a parameter is f16.
  }];
  let options = [
    Option<"function", "function", "std::string", "\"forward\"",
           "the function to differentiate">,
    Option<"loss", "loss", "std::string", "\"loss\"",
           "the hg.name of its scalar result">,
    Option<"cotangent", "cotangent", "std::string", "\"\"",
           "the hg.name of a result whose cotangent @<function>_vjp takes "
           "as input grad_<name> (instead of differentiating a loss)">,
    Option<"lossScale", "loss-scale", "std::string", "\"\"",
           "a state (f32 [1], added as an argument) the gradients are "
           "scaled by: they are those of loss x state (fp16 loss scaling); "
           "the loss returned stays unscaled">,
    Option<"lossScaleF16Only", "loss-scale-f16-only", "bool", "false",
           "apply loss-scale only when a parameter of the function is f16 "
           "(f32 and bf16 gradients need no scaling)">
  ];
}

def Sgd : Pass<"hg-sgd", "mlir::ModuleOp"> {
  let summary = "The optimizer executables: SGD with momentum in place";
  let description = [{
    hg-adamw's executables and precision plan with torch.optim.SGD's
    update: d = g + weight_decay p; the momentum buffer
    (`opt.momentum_buffer.<name>`, f32 state) is d on the first step, else
    momentum b + (1 - dampening) d; p -= lr (nesterov ? d + momentum b : b);
    momentum 0 is plain SGD. lr, momentum, dampening, weight_decay and
    nesterov (0 or 1) are f32 [1] inputs (defaults 1e-3, 0, 0, 0, 0).
  }];
}

//===----------------------------------------------------------------------===//
// Fusion of exported subgraphs into hg's transformer ops
//===----------------------------------------------------------------------===//

def FuseActivations : Pass<"hg-fuse-activations", "mlir::func::FuncOp"> {
  let summary = "Fuse decomposed GELU (tanh and erf forms) and SiLU";
  let description = [{
    Rewrites 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))) into
    `hg.gelu {approximate = "tanh"}`, 0.5 * x * (1 + erf(x / sqrt(2))) into
    `hg.gelu`, and x * sigmoid(x) into `hg.silu`, in any association and
    operand order. A tanh that still looks like part of a GELU afterwards
    gets a warning: it runs unfused.
  }];
}

def FuseAttention : Pass<"hg-fuse-attention", "mlir::func::FuncOp"> {
  let summary = "Fuse scaled dot-product attention into hg.attention";
  let description = [{
    Matches matmul(softmax(matmul(q * s1, k^T * s2) [+ mask], -1), v) with an
    optional NaN cleanup select(is_nan(p), 0, p) after the softmax and
    rank-4 q, k, v. The key transpose may be an hg.transpose or the
    reshape / transpose / reshape that exporters emit; keys and values
    repeated for grouped-query attention (reshape of broadcast_to) are
    replaced by the unrepeated ones. Scalar multipliers on q, k^T or the
    scores (also through reshapes and transposes) become `scale`. The mask
    stays an operand unless it is proven, from the IR, to be the causal
    mask (then `causal = true`) or to mask nothing. A softmax left unfused
    gets a warning: it runs unfused.
  }];
}

def FuseEpilogues : Pass<"hg-fuse-epilogues", "mlir::func::FuncOp"> {
  let summary = "Fold activations and residual adds into the linear before them";
  let description = [{
    The inference pipeline's epilogue fusion: relu, gelu (erf and tanh) and
    silu of a linear become its `activation`, and an add of a linear and a
    value of the result's type becomes its `residual` (after the
    activation), when the linear's result has no other use. The GEMM then
    applies bias, activation and residual before it stores its output. The
    training pipeline runs it once the backward pass is built: where the
    backward reads a pre-activation value, the linear has another use and
    stays apart. A function marked `hg.no_epilogue_fusion` (@lora_fuse,
    whose adds run in the weights' own buffers) is left as it is.
  }];
}

def FuseLinear : Pass<"hg-fuse-linear", "mlir::func::FuncOp"> {
  let summary = "Fuse matmul by a parameter matrix (and a bias) into hg.linear";
  let description = [{
    Rewrites matmul(x, W) where W is a 2-D parameter ([K, N]) or the
    transpose of one ([N, K]) into hg.linear, and folds a following add of a
    [N] bias into it (also for an hg.linear without bias).
  }];
}

def FuseNorms : Pass<"hg-fuse-norms", "mlir::func::FuncOp"> {
  let summary = "Fuse decomposed RMSNorm and LayerNorm";
  let description = [{
    Rewrites x * rsqrt(mean(x^2) + eps) [* w] (also with reciprocal(sqrt),
    division by sqrt, or pow(-0.5)) into hg.rms_norm, and
    (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* w] [+ b] into
    hg.layer_norm, over trailing axes. A reciprocal square root left
    unfused gets a warning: it runs unfused.
  }];
}

def FuseNormPrologues : Pass<"hg-fuse-norm-prologues", "mlir::func::FuncOp"> {
  let summary = "Fold a layer_norm / rms_norm into the linears it feeds";
  let description = [{
    In @decode (functions marked hg.generation = "decode"): a layer_norm or
    rms_norm over the last dim whose every use is the input of a linear
    becomes those linears' `norm` prologue (each normalises its own rows,
    rounded to the element type before the product), and the norm op goes.
    A decode step launches one kernel per projection instead of two.
    Prompts (@prefill) and the training functions keep the norm apart: for
    many rows, normalising once and reading the result is cheaper than
    normalising in every projection.
  }];
}

def FuseRotary : Pass<"hg-fuse-rotary", "mlir::func::FuncOp"> {
  let summary = "Fuse rotate-half rotary embeddings into hg.rotary";
  let description = [{
    Rewrites x * cos + concat(-x[..., d/2:], x[..., :d/2]) * sin, with
    x [B, H, T, d] and cos / sin broadcast from [B or 1, 1, T, d], into
    hg.rotary with cos / sin reshaped to [B or 1, T, d].
  }];
}

//===----------------------------------------------------------------------===//
// Generation: the inference lowering of @forward (DESIGN §2.7)
//===----------------------------------------------------------------------===//

def KvCache : Pass<"hg-kv-cache", "mlir::func::FuncOp"> {
  let summary = "Attention of a generation step over KV-cache state buffers";
  let description = [{
    In a function marked `hg.generation` ("prefill" or "decode", made by
    hg-split-generation), every hg.attention gets two state buffers,
    `kv.<i>.key` and `kv.<i>.value` of shape [batch, heads, cap, head_dim]:
    its keys and values are written into them with hg.cache_write — at
    slot 0 in @prefill, at the slots already filled (the argument tagged
    `hg.state = "gen.past"`) in @decode — and the updated caches are
    returned as those states. In @prefill the attention itself still reads the prompt's
    own keys and values. In @decode it reads the caches, limited by
    `key_length` = past + 1, so one step costs what the filled prefix costs
    and its shapes do not depend on the position. Functions without the
    mark are left alone.
  }];
}

def SinkSlices : Pass<"hg-sink-slices", "mlir::func::FuncOp"> {
  let summary = "Slice rows before the row-wise ops that produce them";
  let description = [{
    slice(linear(x, W, b, residual r)) becomes linear(slice(x), W, b,
    slice(r)), slice(layer_norm / rms_norm(x)) becomes norm(slice(x)) and
    slice(cast(x)) becomes cast(slice(x)), when the slice cuts only rows (not linear's last axis,
    not the normalised axes) and the op's result has no other use. @prefill
    keeps the last position's logits: the LM head, the final norm and what
    feeds them row by row then run on that position only.
  }];
}

def SplitGeneration : Pass<"hg-split-generation", "mlir::ModuleOp"> {
  let summary = "Split @forward into @prefill and @decode with device-side sampling";
  let description = [{
    Clones @forward (input_ids [batch, seq], an optional attention_mask
    [batch, seq], logits [batch, seq, vocab]) twice:

    * @prefill(input_ids, attention_mask): the prompt pass. It keeps the
      last position's logits only, and initialises the generation state
      (`gen.key_mask` [batch, cap], `gen.position` [batch], `gen.past` [1],
      `gen.count` [1], `gen.finished` [batch], `gen.lengths` [batch]).
    * @decode(): one token per row, every input a state: the last sampled
      token (`gen.token`), its position and slot; `seq` is 1 throughout, so
      the step has the same shapes at every position (one captured graph).

    Both end in the same epilogue, one hg.sample_step over the step's
    logits (in their own dtype): `min_new_tokens` bans EOS (`gen.config`
    i64 [4] = {eos or -1, pad, min_new, unused}), the token is drawn as
    hg.sample draws it (`gen.sampling` f32 [3], `gen.rng` i64 [2]; the
    counter advances each step), its log-probability is log_softmax(logits
    / T) (T = 1 when greedy), finished rows emit `pad` and log-probability
    0, and token and log-probability are written into `gen.tokens` and
    `gen.logprobs` [batch, nmax] at column `gen.count`; the op's results
    are the new `gen.token`, `gen.tokens`, `gen.logprobs`, `gen.lengths`,
    `gen.finished`, `gen.count` and `gen.rng` (computed in place by the
    lowering). Attention over the
    KV cache is the job of hg-kv-cache, which runs next. Without an
    attention_mask, positions come from the graph's iota over `seq`, offset
    by `gen.past` in @decode (no padding).
  }];
}

def UnitTransposes : Pass<"hg-unit-transposes", "mlir::func::FuncOp"> {
  let summary = "Turn transposes that move only dims of size 1 into reshapes";
  let description = [{
    A transpose whose dims larger than 1 (as far as the symbolic shapes
    show) keep their order moves no element: it becomes an hg.reshape to
    its result shape, which lowers to a view. A decode step (seq = 1) is
    full of them around attention.
  }];
}

#endif // HG_TRANSFORMS_PASSES_TD
