// hg-causal-lm-loss: @forward_loss returns HF's causal-LM loss of the
// logits against input_ids shifted by one, ignoring labels of -100.
// RUN: hybridc-opt --hg-causal-lm-loss --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @forward_loss
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"})
// CHECK: %[[L:.+]] = hg.linear
// CHECK: %[[SHIFT:.+]] = hg.slice %[[L]] {axes = array<i64: 1>, ends = array<i64: -1>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK: %[[LABELS:.+]] = hg.slice %{{.+}} {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: 1>, steps = array<i64: 1>}
// CHECK: %[[LP:.+]] = hg.log_softmax %[[SHIFT]] {axis = 2 : i64}
// CHECK: hg.iota [8] {{.+}} : tensor<8xi64>
// CHECK: hg.reshape %[[LABELS]] ["batch", "seq - 1", 1]
// CHECK: hg.equal
// CHECK: hg.mul %[[LP]]
// CHECK: hg.constant dense<-100> : tensor<i64>
// CHECK: hg.not
// CHECK: %[[MEAN:.+]] = hg.neg
// CHECK: %[[LOSS:.+]] = hg.reshape %[[MEAN]] [1] : tensor<f32> -> tensor<1xf32>
// CHECK: return %[[LOSS]]

// CHECK-LABEL: func.func @logprobs
// CHECK-SAME: -> (tensor<?x?xf32> {hg.name = "logprobs"})
// CHECK: %[[PICKED:.+]] = hg.reduce_sum %{{.+}} [2] {keepdims = false} : tensor<?x?x8xf32> -> tensor<?x?xf32>
// CHECK: return %[[PICKED]]
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %w: tensor<8x4xf32> {hg.param = "lm_head.weight"},
                   %t: tensor<8x4xf32> {hg.param = "wte"}) -> (tensor<?x?x8xf32> {hg.name = "logits"}) {
  %0 = hg.embedding %t, %ids : tensor<8x4xf32>, tensor<?x?xi64> -> tensor<?x?x4xf32>
  %1 = hg.linear %0, %w : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  return %1 : tensor<?x?x8xf32>
}

// -----

// expected-error @+1 {{hg-causal-lm-loss: @forward must take input_ids and return logits [batch, seq, vocab]}}
func.func @forward(%x: tensor<2x3xf32> {hg.name = "x"}) -> (tensor<2x3xf32> {hg.name = "y"}) {
  return %x : tensor<2x3xf32>
}
