// hg-causal-lm-loss: @forward_loss returns HF's causal-LM loss of the
// logits against its `labels` input shifted by one, ignoring labels of
// -100: one hg.label_log_probs over every position's logits, the last
// position's label -100 (no slice of the logits, no one-hot product).
// Omitted, the labels are filled with -2^63, read as input_ids (with -100
// where attention_mask is 0, when the model takes one). The mean divides
// by at least 1: no counted label is a loss of 0. @logprobs: the same
// log-probabilities of input_ids without the last position.
// RUN: hybridc-opt --hg-causal-lm-loss --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @forward_loss
// CHECK-SAME: (%[[IDS:[^:]+]]: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"}
// CHECK-SAME: %[[LABELS_IN:[^:]+]]: tensor<?x?xi64> {hg.default = -9223372036854775808 : i64, hg.dims = ["batch", "seq"], hg.name = "labels"})
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"})
// CHECK: %[[L:.+]] = hg.linear
// CHECK: %[[OMITTED_FILL:.+]] = hg.constant dense<-9223372036854775808> : tensor<i64>
// CHECK: %[[OMITTED:.+]] = hg.equal %[[LABELS_IN]], %[[OMITTED_FILL]]
// CHECK: %[[ALIGNED:.+]] = hg.select %[[OMITTED]], %[[IDS]], %[[LABELS_IN]] : tensor<?x?xi1>, tensor<?x?xi64>, tensor<?x?xi64> -> tensor<?x?xi64>
// CHECK: %[[NEXT:.+]] = hg.slice %[[ALIGNED]] {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 1>}
// CHECK: %[[IGNORE:.+]] = hg.constant dense<-100> : tensor<i64>
// CHECK: %[[LAST:.+]] = hg.broadcast_to %[[IGNORE]]
// CHECK: %[[LABELS:.+]] = hg.concat %[[NEXT]], %[[LAST]]
// CHECK: %[[LP:.+]] = hg.label_log_probs %[[L]], %[[LABELS]] : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK-NOT: hg.log_softmax
// CHECK-NOT: hg.iota
// CHECK: hg.equal %[[LABELS]]
// CHECK: hg.not
// CHECK: %[[WEIGHT:.+]] = hg.cast
// CHECK: %[[TOTAL:.+]] = hg.reduce_sum %[[LP]]
// CHECK: %[[COUNT:.+]] = hg.reduce_sum %[[WEIGHT]]
// CHECK: %[[ZERO:.+]] = hg.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[ONE:.+]] = hg.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[NEG:.+]] = hg.sub %[[ZERO]], %[[TOTAL]]
// CHECK: %[[AT_LEAST_ONE:.+]] = hg.max %[[COUNT]], %[[ONE]]
// CHECK: %[[MEAN:.+]] = hg.div %[[NEG]], %[[AT_LEAST_ONE]]
// CHECK: %[[LOSS:.+]] = hg.reshape %[[MEAN]] [1] : tensor<f32> -> tensor<1xf32>
// CHECK: return %[[LOSS]]

// CHECK-LABEL: func.func @logprobs
// CHECK-SAME: -> (tensor<?x?xf32> {hg.name = "logprobs"})
// CHECK-NOT: hg.name = "labels"
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

// A model that takes attention_mask: omitted labels are input_ids with
// -100 where the mask is 0 (HF's input_ids.masked_fill(mask == 0, -100)).
// CHECK-LABEL: func.func @forward_loss
// CHECK-SAME: (%[[IDS:[^:]+]]: tensor<?x?xi64> {{[^%]+}}, %[[MASK:[^:]+]]: tensor<?x?xi64> {{.+}}, %[[LABELS_IN:[^:]+]]: tensor<?x?xi64> {hg.default = -9223372036854775808 : i64, hg.dims = ["batch", "seq"], hg.name = "labels"})
// CHECK: %[[MASK_ZERO:.+]] = hg.constant dense<0> : tensor<i64>
// CHECK: %[[PADDING:.+]] = hg.equal %[[MASK]], %[[MASK_ZERO]]
// CHECK: %[[IGNORE:.+]] = hg.constant dense<-100> : tensor<i64>
// CHECK: %[[FROM_INPUT:.+]] = hg.select %[[PADDING]], %[[IGNORE]], %[[IDS]]
// CHECK: %[[OMITTED:.+]] = hg.equal %[[LABELS_IN]], %{{.+}}
// CHECK: %[[ALIGNED:.+]] = hg.select %[[OMITTED]], %[[FROM_INPUT]], %[[LABELS_IN]]
// CHECK: hg.slice %[[ALIGNED]]
// CHECK-LABEL: func.func @logprobs
// CHECK-NOT: hg.select
// CHECK: return
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %mask: tensor<?x?xi64> {hg.default = 1 : i64, hg.dims = ["batch", "seq"], hg.name = "attention_mask"},
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

// -----

// expected-error @+1 {{hg-causal-lm-loss: @forward takes an input named labels already; the loss adds its own}}
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %labels: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "labels"},
                   %w: tensor<8x4xf32> {hg.param = "lm_head.weight"},
                   %t: tensor<8x4xf32> {hg.param = "wte"}) -> (tensor<?x?x8xf32> {hg.name = "logits"}) {
  %0 = hg.embedding %t, %ids : tensor<8x4xf32>, tensor<?x?xi64> -> tensor<?x?x4xf32>
  %1 = hg.linear %0, %w : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  return %1 : tensor<?x?x8xf32>
}
