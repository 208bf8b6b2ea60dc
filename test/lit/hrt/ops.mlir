// Every hrt op parses, verifies and prints back (and again, identically).
// RUN: hybridc-opt %s | hybridc-opt | FileCheck %s

// CHECK-LABEL: hrt.executable @all_ops symbols ["batch", "seq"] params read
hrt.executable @all_ops symbols ["batch", "seq"] params read attributes {symbol_max = array<i64: 0, 1024>} {
  // CHECK: %[[IDS:.+]] = hrt.input "ids" : <i64, [batch, seq]>
  %ids = hrt.input "ids" : !hrt.buffer<i64, [batch, seq]>
  // CHECK: %[[W:.+]] = hrt.param "w" : <f32, [64, 64]>
  %w = hrt.param "w" : !hrt.buffer<f32, [64, 64]>
  %table = hrt.param "table" : !hrt.buffer<f32, [100, 64]>
  // CHECK: %[[KV:.+]] = hrt.state "kv" read_write : <bf16, [batch, "2*seq", 64]>
  %kv = hrt.state "kv" read_write : !hrt.buffer<bf16, [batch, "2*seq", 64]>
  // CHECK: hrt.constant dense<1.000000e+00> : tensor<64xf32> : <f32, [64]>
  %one = hrt.constant dense<1.0> : tensor<64xf32> : !hrt.buffer<f32, [64]>
  %out = hrt.output "y" : !hrt.buffer<f32, [batch, seq, 64]>
  %x = hrt.alloc : !hrt.buffer<f32, [batch, seq, 64]>
  // CHECK: hrt.embedding %{{.+}} : <f32, [100, 64]>, %[[IDS]] : <i64, [batch, seq]> into
  hrt.embedding %table : !hrt.buffer<f32, [100, 64]>, %ids : !hrt.buffer<i64, [batch, seq]> into %x : !hrt.buffer<f32, [batch, seq, 64]>
  %dtable = hrt.alloc : !hrt.buffer<f32, [100, 64]>
  // CHECK: hrt.embedding_grad %[[IDS]] : <i64, [batch, seq]>, %{{.+}} : <f32, [batch, seq, 64]> into %{{.+}} : <f32, [100, 64]>
  hrt.embedding_grad %ids : !hrt.buffer<i64, [batch, seq]>, %x : !hrt.buffer<f32, [batch, seq, 64]> into %dtable : !hrt.buffer<f32, [100, 64]>
  %lp = hrt.alloc : !hrt.buffer<f32, [batch, seq]>
  // CHECK: hrt.label_log_probs %{{.+}} : <f32, [batch, seq, 64]>, %[[IDS]] : <i64, [batch, seq]> into %{{.+}} : <f32, [batch, seq]>
  hrt.label_log_probs %x : !hrt.buffer<f32, [batch, seq, 64]>, %ids : !hrt.buffer<i64, [batch, seq]> into %lp : !hrt.buffer<f32, [batch, seq]>
  %dlogits = hrt.alloc : !hrt.buffer<f32, [batch, seq, 64]>
  // CHECK: hrt.label_log_probs_grad %{{.+}} : <f32, [batch, seq, 64]>, %[[IDS]] : <i64, [batch, seq]>, %{{.+}} : <f32, [batch, seq]> into %{{.+}} : <f32, [batch, seq, 64]>
  hrt.label_log_probs_grad %x : !hrt.buffer<f32, [batch, seq, 64]>, %ids : !hrt.buffer<i64, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %dlogits : !hrt.buffer<f32, [batch, seq, 64]>
  %pg = hrt.alloc : !hrt.buffer<f32, [batch, seq]>
  // CHECK: hrt.clipped_surrogate %[[LP:[^ ]+]] : <f32, [batch, seq]>, %[[LP]] : <f32, [batch, seq]>, %[[LP]] : <f32, [batch, seq]>, %[[LP]] : <f32, [batch, seq]> into %{{.+}} : <f32, [batch, seq]> {clip_low = 1.000000e-01 : f64}
  hrt.clipped_surrogate %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %pg : !hrt.buffer<f32, [batch, seq]> {clip_low = 0.1 : f64}
  // CHECK: hrt.clipped_surrogate_grad {{.+}}, %[[LP]] : <f32, [batch, seq]> into %{{.+}} : <f32, [batch, seq]>{{$}}
  hrt.clipped_surrogate_grad %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %pg : !hrt.buffer<f32, [batch, seq]>
  // The RLHF ops: several results (rewards and old values, advantages and
  // returns), a [1] scalar operand and a rank-0 mean.
  %scores = hrt.alloc : !hrt.buffer<f32, [batch]>
  %klc = hrt.alloc : !hrt.buffer<f32, [1]>
  %rw = hrt.alloc : !hrt.buffer<f32, [batch, seq]>
  %ov = hrt.alloc : !hrt.buffer<f32, [batch, seq]>
  // CHECK: hrt.ppo_rewards %[[LP]] : <f32, [batch, seq]>, {{.+}}, %{{.+}} : <f32, [batch]>, {{.+}}, %{{.+}} : <f32, [1]> into %[[RW:[^ ]+]] : <f32, [batch, seq]>, %[[OV:[^ ]+]] : <f32, [batch, seq]> {start = 3 : i64}
  hrt.ppo_rewards %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %scores : !hrt.buffer<f32, [batch]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %klc : !hrt.buffer<f32, [1]> into %rw : !hrt.buffer<f32, [batch, seq]>, %ov : !hrt.buffer<f32, [batch, seq]> {start = 3 : i64}
  %adv = hrt.alloc : !hrt.buffer<f32, [batch, "seq-3"]>
  %ret = hrt.alloc : !hrt.buffer<f32, [batch, "seq-3"]>
  // CHECK: hrt.gae %[[RW]] : <f32, [batch, seq]>, %[[OV]] : <f32, [batch, seq]> into %{{.+}} : <f32, [batch, "seq-3"]>, %{{.+}} : <f32, [batch, "seq-3"]> {gamma = 5.000000e-01 : f64, start = 3 : i64}
  hrt.gae %rw : !hrt.buffer<f32, [batch, seq]>, %ov : !hrt.buffer<f32, [batch, seq]> into %adv : !hrt.buffer<f32, [batch, "seq-3"]>, %ret : !hrt.buffer<f32, [batch, "seq-3"]> {start = 3 : i64, gamma = 0.5 : f64}
  %mean = hrt.alloc : !hrt.buffer<f32, []>
  // CHECK: hrt.masked_mean %[[LP]] : <f32, [batch, seq]>, %[[LP]] : <f32, [batch, seq]> into %[[MEAN:[^ ]+]] : <f32, []> {per_sequence = true}
  hrt.masked_mean %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %mean : !hrt.buffer<f32, []> {per_sequence = true}
  // CHECK: hrt.masked_mean_grad %[[LP]] : <f32, [batch, seq]>, %[[MEAN]] : <f32, []> into %{{.+}} : <f32, [batch, seq]>{{$}}
  hrt.masked_mean_grad %lp : !hrt.buffer<f32, [batch, seq]>, %mean : !hrt.buffer<f32, []> into %rw : !hrt.buffer<f32, [batch, seq]>
  // CHECK: hrt.clipped_value_loss {{.+}} into %{{.+}} : <f32, [batch, seq]> {clip = 5.000000e-01 : f64}
  hrt.clipped_value_loss %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %rw : !hrt.buffer<f32, [batch, seq]> {clip = 0.5 : f64}
  // CHECK: hrt.kl_k3_grad {{.+}} into %{{.+}} : <f32, [batch, seq]>{{$}}
  hrt.kl_k3_grad %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %rw : !hrt.buffer<f32, [batch, seq]>
  // CHECK: hrt.group_advantages %{{.+}} : <f32, [batch]> into %{{.+}} : <f32, [batch]> {group_size = 4 : i64, scale = false}
  hrt.group_advantages %scores : !hrt.buffer<f32, [batch]> into %scores : !hrt.buffer<f32, [batch]> {group_size = 4 : i64, scale = false}
  // CHECK: hrt.masked_whiten {{.+}} into %{{.+}} : <f32, [batch, seq]>{{$}}
  hrt.masked_whiten %lp : !hrt.buffer<f32, [batch, seq]>, %lp : !hrt.buffer<f32, [batch, seq]> into %rw : !hrt.buffer<f32, [batch, seq]>
  // The reward model's ranking loss: i64 ids and mask, three results.
  %rscalar = hrt.alloc : !hrt.buffer<f32, []>
  // CHECK: hrt.pairwise_ranking_loss %[[LP]] : <f32, [batch, seq]>, %[[IDS]] : <i64, [batch, seq]>, %[[IDS]] : <i64, [batch, seq]> into %[[RL:[^ ]+]] : <f32, []>, %[[ES:[^ ]+]] : <f32, [batch]>, %{{.+}} : <f32, []>{{$}}
  hrt.pairwise_ranking_loss %lp : !hrt.buffer<f32, [batch, seq]>, %ids : !hrt.buffer<i64, [batch, seq]>, %ids : !hrt.buffer<i64, [batch, seq]> into %rscalar : !hrt.buffer<f32, []>, %scores : !hrt.buffer<f32, [batch]>, %mean : !hrt.buffer<f32, []>
  // CHECK: hrt.pairwise_ranking_loss_grad %[[LP]] : <f32, [batch, seq]>, %[[IDS]] : <i64, [batch, seq]>, %[[IDS]] : <i64, [batch, seq]>, %[[RL]] : <f32, []>, %[[ES]] : <f32, [batch]> into %{{.+}} : <f32, [batch, seq]>{{$}}
  hrt.pairwise_ranking_loss_grad %lp : !hrt.buffer<f32, [batch, seq]>, %ids : !hrt.buffer<i64, [batch, seq]>, %ids : !hrt.buffer<i64, [batch, seq]>, %rscalar : !hrt.buffer<f32, []>, %scores : !hrt.buffer<f32, [batch]> into %rw : !hrt.buffer<f32, [batch, seq]>
  %dact = hrt.alloc : !hrt.buffer<f32, [batch, seq, 64]>
  // CHECK: hrt.activation_grad gelu_tanh %{{.+}} : <f32, [batch, seq, 64]> grad %{{.+}} : <f32, [batch, seq, 64]> into %{{.+}} : <f32, [batch, seq, 64]>
  hrt.activation_grad gelu_tanh %x : !hrt.buffer<f32, [batch, seq, 64]> grad %dlogits : !hrt.buffer<f32, [batch, seq, 64]> into %dact : !hrt.buffer<f32, [batch, seq, 64]>
  // CHECK: hrt.activation_grad relu %{{.+}} : <f32, [batch, seq, 64]> grad %{{.+}} : <f32, [batch, seq, 64]> into %{{.+}} : <f32, [batch, seq, 64]> {stream = 1 : i32}
  hrt.activation_grad relu %x : !hrt.buffer<f32, [batch, seq, 64]> grad %dlogits : !hrt.buffer<f32, [batch, seq, 64]> into %dact : !hrt.buffer<f32, [batch, seq, 64]> {stream = 1 : i32}
  %flat = hrt.view %x : !hrt.buffer<f32, [batch, seq, 64]> to !hrt.buffer<f32, ["batch*seq", 64]>
  %y = hrt.alloc : !hrt.buffer<f32, ["batch*seq", 64]>
  // CHECK: hrt.linear %{{.+}} : <f32, ["batch*seq", 64]>, %[[W]] : <f32, [64, 64]> bias %{{.+}} : !hrt.buffer<f32, [64]> into %{{.+}} {transpose_weight = true}
  hrt.linear %flat : !hrt.buffer<f32, ["batch*seq", 64]>, %w : !hrt.buffer<f32, [64, 64]> bias %one : !hrt.buffer<f32, [64]> into %y : !hrt.buffer<f32, ["batch*seq", 64]> {transpose_weight = true}
  // The epilogue: bias, then the activation, then a residual.
  // CHECK: hrt.linear %{{.+}}, %[[W]] : <f32, [64, 64]> bias %{{.+}} : !hrt.buffer<f32, [64]> activation silu residual %{{.+}} : !hrt.buffer<f32, ["batch*seq", 64]> into %{{.+}} {transpose_weight = true}
  hrt.linear %flat : !hrt.buffer<f32, ["batch*seq", 64]>, %w : !hrt.buffer<f32, [64, 64]> bias %one : !hrt.buffer<f32, [64]> activation silu residual %flat : !hrt.buffer<f32, ["batch*seq", 64]> into %y : !hrt.buffer<f32, ["batch*seq", 64]> {transpose_weight = true}
  // CHECK: hrt.linear %{{.+}}, %[[W]] : <f32, [64, 64]> activation gelu into
  hrt.linear %flat : !hrt.buffer<f32, ["batch*seq", 64]>, %w : !hrt.buffer<f32, [64, 64]> activation gelu into %y : !hrt.buffer<f32, ["batch*seq", 64]> {transpose_weight = true}
  // Members: all of w, then its features [16, 48) (a column range when
  // the weight is [K, N]).
  %g0 = hrt.alloc : !hrt.buffer<f32, ["batch*seq", 64]>
  %g1 = hrt.alloc : !hrt.buffer<f32, ["batch*seq", 32]>
  // CHECK: hrt.linear_group %{{.+}} : <f32, ["batch*seq", 64]> weights(%[[W]], %[[W]] : !hrt.buffer<f32, [64, 64]>, !hrt.buffer<f32, [64, 64]>) biases(%{{.+}}, %{{.+}} : !hrt.buffer<f32, [64]>, !hrt.buffer<f32, [64]>) features [0, 16] to [64, 48] activation gelu into(%{{.+}}, %{{.+}} : !hrt.buffer<f32, ["batch*seq", 64]>, !hrt.buffer<f32, ["batch*seq", 32]>) {transpose_weight = false}
  hrt.linear_group %flat : !hrt.buffer<f32, ["batch*seq", 64]> weights(%w, %w : !hrt.buffer<f32, [64, 64]>, !hrt.buffer<f32, [64, 64]>) biases(%one, %one : !hrt.buffer<f32, [64]>, !hrt.buffer<f32, [64]>) features [0, 16] to [64, 48] activation gelu into(%g0, %g1 : !hrt.buffer<f32, ["batch*seq", 64]>, !hrt.buffer<f32, ["batch*seq", 32]>) {transpose_weight = false}
  // CHECK: hrt.linear_group %{{.+}} weights(%[[W]] : !hrt.buffer<f32, [64, 64]>) features [8] to [40] into(%{{.+}} : !hrt.buffer<f32, ["batch*seq", 32]>) {stream = 1 : i32, transpose_weight = true}
  hrt.linear_group %flat : !hrt.buffer<f32, ["batch*seq", 64]> weights(%w : !hrt.buffer<f32, [64, 64]>) features [8] to [40] into(%g1 : !hrt.buffer<f32, ["batch*seq", 32]>) {transpose_weight = true, stream = 1 : i32}
  // CHECK: hrt.binary add
  hrt.binary add %y : !hrt.buffer<f32, ["batch*seq", 64]>, %one : !hrt.buffer<f32, [64]> into %y : !hrt.buffer<f32, ["batch*seq", 64]>
  // CHECK: hrt.unary gelu_tanh {{.+}} {stream = 1 : i32}
  hrt.unary gelu_tanh %y : !hrt.buffer<f32, ["batch*seq", 64]> into %y : !hrt.buffer<f32, ["batch*seq", 64]> {stream = 1 : i32}
  // CHECK: hrt.record_event 0 {stream = 1 : i32}
  hrt.record_event 0 {stream = 1 : i32}
  // CHECK: hrt.wait_event 0
  hrt.wait_event 0
  %y3 = hrt.view %y : !hrt.buffer<f32, ["batch*seq", 64]> to !hrt.buffer<f32, [batch, seq, 64]>
  // CHECK: hrt.layer_norm {{.+}} weight {{.+}} bias {{.+}} into {{.+}} {axis = -1 : i64, epsilon = 1.000000e-05 : f64}
  hrt.layer_norm %y3 : !hrt.buffer<f32, [batch, seq, 64]> weight %one : !hrt.buffer<f32, [64]> bias %one : !hrt.buffer<f32, [64]> into %out : !hrt.buffer<f32, [batch, seq, 64]> {axis = -1 : i64, epsilon = 1.0e-5 : f64}
  %dw = hrt.alloc : !hrt.buffer<f32, [64]>
  // CHECK: hrt.layer_norm_grad {{.+}} weight {{.+}} grad {{.+}} into {{.+}}, {{.+}}, {{.+}} {axis = -1 : i64, epsilon = 1.000000e-05 : f64}
  hrt.layer_norm_grad %y3 : !hrt.buffer<f32, [batch, seq, 64]> weight %one : !hrt.buffer<f32, [64]> grad %out : !hrt.buffer<f32, [batch, seq, 64]> into %out : !hrt.buffer<f32, [batch, seq, 64]>, %dw : !hrt.buffer<f32, [64]>, %dw : !hrt.buffer<f32, [64]> {axis = -1 : i64, epsilon = 1.0e-5 : f64}
  // CHECK: hrt.rms_norm {{.+}} into
  hrt.rms_norm %y3 : !hrt.buffer<f32, [batch, seq, 64]> into %out : !hrt.buffer<f32, [batch, seq, 64]> {axis = -1 : i64, epsilon = 1.0e-6 : f64}
  %c = hrt.communicator "world"
  // CHECK: hrt.collective all_reduce {{.+}} over %{{.+}}
  hrt.collective all_reduce %out : !hrt.buffer<f32, [batch, seq, 64]> into %out : !hrt.buffer<f32, [batch, seq, 64]> over %c
  %kvf = hrt.alloc : !hrt.buffer<f32, [batch, "2*seq", 64]>
  // CHECK: hrt.cast
  hrt.cast %kv : !hrt.buffer<bf16, [batch, "2*seq", 64]> into %kvf : !hrt.buffer<f32, [batch, "2*seq", 64]>
  // CHECK: hrt.fill 0.000000e+00 into %[[KV]]
  hrt.fill 0.0 into %kv : !hrt.buffer<bf16, [batch, "2*seq", 64]>
  %q = hrt.alloc : !hrt.buffer<f32, [batch, 4, seq, 16]>
  %att = hrt.alloc : !hrt.buffer<f32, [batch, 4, seq, 16]>
  // CHECK: hrt.attention {{.+}} into {{.+}} {causal = true, scale = 2.500000e-01 : f64, sliding_window = 0 : i64}
  hrt.attention %q : !hrt.buffer<f32, [batch, 4, seq, 16]>, %q : !hrt.buffer<f32, [batch, 4, seq, 16]>, %q : !hrt.buffer<f32, [batch, 4, seq, 16]> into %att : !hrt.buffer<f32, [batch, 4, seq, 16]> {causal = true, scale = 0.25 : f64, sliding_window = 0 : i64}
  %dq = hrt.alloc : !hrt.buffer<f32, [batch, 4, seq, 16]>
  %dkv = hrt.alloc : !hrt.buffer<f32, [batch, 2, seq, 16]>
  // CHECK: hrt.attention_grad {{.+}} key_mask {{.+}} into {{.+}}, {{.+}}, {{.+}} {causal = true, scale = 2.500000e-01 : f64, sliding_window = 8 : i64}
  hrt.attention_grad %q : !hrt.buffer<f32, [batch, 4, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]>, %att : !hrt.buffer<f32, [batch, 4, seq, 16]> key_mask %ids : !hrt.buffer<i64, [batch, seq]> into %dq : !hrt.buffer<f32, [batch, 4, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]> {causal = true, scale = 0.25 : f64, sliding_window = 8 : i64}
  %sl = hrt.alloc : !hrt.buffer<f32, [4]>
  // CHECK: hrt.attention_grad {{.+}} alibi %{{.+}} : !hrt.buffer<f32, [4]> into {{.+}} {causal = true, scale = 2.500000e-01 : f64, sliding_window = 0 : i64}
  hrt.attention_grad %q : !hrt.buffer<f32, [batch, 4, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]>, %att : !hrt.buffer<f32, [batch, 4, seq, 16]> alibi %sl : !hrt.buffer<f32, [4]> into %dq : !hrt.buffer<f32, [batch, 4, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]>, %dkv : !hrt.buffer<f32, [batch, 2, seq, 16]> {causal = true, scale = 0.25 : f64, sliding_window = 0 : i64}
  %m = hrt.alloc : !hrt.buffer<i1, [batch, seq]>
  // CHECK: hrt.binary less
  hrt.binary less %ids : !hrt.buffer<i64, [batch, seq]>, %ids : !hrt.buffer<i64, [batch, seq]> into %m : !hrt.buffer<i1, [batch, seq]>
  %r = hrt.alloc : !hrt.buffer<i64, [batch, 1]>
  // CHECK: hrt.reduce max {{.+}} {axes = array<i64: 1>, keepdims = true}
  hrt.reduce max %ids : !hrt.buffer<i64, [batch, seq]> into %r : !hrt.buffer<i64, [batch, 1]> {axes = array<i64: 1>, keepdims = true}
}
