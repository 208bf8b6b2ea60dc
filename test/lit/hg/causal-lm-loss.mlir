// hg-causal-lm-loss: @forward_loss returns HF's causal-LM loss of the
// logits against input_ids shifted by one, ignoring labels of -100: one
// hg.label_log_probs over every position's logits, the last position's
// label -100 (no slice of the logits, no one-hot product); @logprobs the
// same log-probabilities without the last position.
// RUN: hybridc-opt --hg-causal-lm-loss --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @forward_loss
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"})
// CHECK: %[[L:.+]] = hg.linear
// CHECK: %[[NEXT:.+]] = hg.slice %{{.+}} {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 1>}
// CHECK: %[[IGNORE:.+]] = hg.constant dense<-100> : tensor<i64>
// CHECK: %[[LAST:.+]] = hg.broadcast_to %[[IGNORE]]
// CHECK: %[[LABELS:.+]] = hg.concat %[[NEXT]], %[[LAST]]
// CHECK: %[[LP:.+]] = hg.label_log_probs %[[L]], %[[LABELS]] : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK-NOT: hg.log_softmax
// CHECK-NOT: hg.iota
// CHECK: hg.equal %[[LABELS]]
// CHECK: hg.not
// CHECK: hg.reduce_sum %[[LP]]
// CHECK: %[[MEAN:.+]] = hg.neg
// CHECK: %[[LOSS:.+]] = hg.reshape %[[MEAN]] [1] : tensor<f32> -> tensor<1xf32>
// CHECK: return %[[LOSS]]

// CHECK-LABEL: func.func @logprobs
// CHECK-SAME: -> (tensor<?x?xf32> {hg.name = "logprobs"})
// CHECK: %[[LP:.+]] = hg.label_log_probs
// CHECK: %[[PICKED:.+]] = hg.slice %[[LP]] {axes = array<i64: 1>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
// CHECK: return %[[PICKED]]
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %w: tensor<8x4xf32> {hg.param = "lm_head.weight"},
                   %t: tensor<8x4xf32> {hg.param = "wte"}) -> (tensor<?x?x8xf32> {hg.name = "logits"}) {
  %0 = hg.embedding %t, %ids : tensor<8x4xf32>, tensor<?x?xi64> -> tensor<?x?x4xf32>
  %1 = hg.linear %0, %w : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  return %1 : tensor<?x?x8xf32>
}

// -----

// bf16 logits widened to f32 for the caller: the loss reads the bf16
// logits (the widening is exact and label_log_probs computes in f32), and
// the unused cast goes, so neither the loss nor its gradient holds f32
// logits.
// CHECK-LABEL: func.func @forward_loss
// CHECK: %[[L:.+]] = hg.linear
// CHECK-NOT: hg.cast %[[L]]
// CHECK: hg.label_log_probs %[[L]], %{{.+}} : tensor<?x?x8xbf16>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK-LABEL: func.func @logprobs
// CHECK-NOT: hg.cast %{{.+}} : tensor<?x?x8xbf16> -> tensor<?x?x8xf32>
// CHECK: hg.label_log_probs %{{.+}} : tensor<?x?x8xbf16>
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %w: tensor<8x4xbf16> {hg.param = "lm_head.weight"},
                   %t: tensor<8x4xbf16> {hg.param = "wte"}) -> (tensor<?x?x8xf32> {hg.name = "logits"}) {
  %0 = hg.embedding %t, %ids : tensor<8x4xbf16>, tensor<?x?xi64> -> tensor<?x?x4xbf16>
  %1 = hg.linear %0, %w : (tensor<?x?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x?x8xbf16>
  %2 = hg.cast %1 : tensor<?x?x8xbf16> -> tensor<?x?x8xf32>
  return %2 : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{hg-causal-lm-loss: @forward must take input_ids and return logits [batch, seq, vocab]}}
func.func @forward(%x: tensor<2x3xf32> {hg.name = "x"}) -> (tensor<2x3xf32> {hg.name = "y"}) {
  return %x : tensor<2x3xf32>
}
