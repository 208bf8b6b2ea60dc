// hg-autodiff of hg.label_log_probs and hg.embedding: one
// hg.label_log_probs_grad (the logits, the labels and the incoming f32
// gradient; the labels get none) and one hg.embedding_grad (the ids, the
// incoming gradient and the table's row count), no one-hot product; with
// padding_idx, that id's positions add nothing (their id becomes -1,
// outside the table).
// RUN: hybridc-opt --hg-autodiff --split-input-file %s | FileCheck %s

// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[IDS:[^:]+]]: tensor<?x?xi64> {{[^%]+}}, %[[LABELS:[^:]+]]: tensor<?x?xi64> {{[^%]+}}, %[[T:[^:]+]]: tensor<16x4xbf16> {{[^%]+}}, %[[W:[^:]+]]: tensor<16x4xbf16> {{[^)]+}})
// CHECK: %[[X:.+]] = hg.embedding %[[T]], %[[IDS]]
// CHECK: %[[LOGITS:.+]] = hg.linear %[[X]], %[[W]]
// CHECK: %[[LP:.+]] = hg.label_log_probs %[[LOGITS]], %[[LABELS]] : tensor<?x?x16xbf16>, tensor<?x?xi64> -> tensor<?x?xf32>
// CHECK: %[[LOSS:.+]] = hg.reduce_sum %[[LP]]
// CHECK: %[[DLOGITS:.+]] = hg.label_log_probs_grad %[[LOGITS]], %[[LABELS]], %{{.+}} : tensor<?x?x16xbf16>, tensor<?x?xi64>, tensor<?x?xf32> -> tensor<?x?x16xbf16>
// CHECK: %[[DX:.+]] = hg.linear %[[DLOGITS]], %[[W]]
// CHECK: %[[DT:.+]] = hg.embedding_grad %[[IDS]], %[[DX]] {rows = 16 : i64} : tensor<?x?xi64>, tensor<?x?x4xbf16> -> tensor<16x4xbf16>
// CHECK-NOT: hg.iota
// CHECK-NOT: hg.equal
// CHECK: return %[[LOSS]], %[[DT]], %{{.+}}
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %labels: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "labels"},
                   %t: tensor<16x4xbf16> {hg.param = "wte"},
                   %w: tensor<16x4xbf16> {hg.param = "lm_head.weight"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.embedding %t, %ids : tensor<16x4xbf16>, tensor<?x?xi64> -> tensor<?x?x4xbf16>
  %1 = hg.linear %0, %w : (tensor<?x?x4xbf16>, tensor<16x4xbf16>) -> tensor<?x?x16xbf16>
  %2 = hg.label_log_probs %1, %labels : tensor<?x?x16xbf16>, tensor<?x?xi64> -> tensor<?x?xf32>
  %3 = hg.reduce_sum %2 [] {keepdims = false} : tensor<?x?xf32> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A tied table: the embedding's gradient and the LM head's add up.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[DT:.+]] = hg.embedding_grad %{{.+}}, %{{.+}} {rows = 10 : i64} : tensor<2x3xi64>, tensor<2x3x4xf32> -> tensor<10x4xf32>
// CHECK: hg.add
// CHECK: return
func.func @forward(%ids: tensor<2x3xi64> {hg.name = "input_ids"},
                   %t: tensor<10x4xf32> {hg.param = "wte"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.embedding %t, %ids : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %1 = hg.linear %0, %t : (tensor<2x3x4xf32>, tensor<10x4xf32>) -> tensor<2x3x10xf32>
  %2 = hg.label_log_probs %1, %ids : tensor<2x3x10xf32>, tensor<2x3xi64> -> tensor<2x3xf32>
  %3 = hg.reduce_sum %2 [] {keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// padding_idx 3 (torch's nn.Embedding(..., padding_idx=3)): the ids the
// gradient sees are -1 where they are 3; the forward reads them as given.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[IDS:[^:]+]]: tensor<2x3xi64>
// CHECK: hg.embedding %{{.+}}, %[[IDS]] {padding_idx = 3 : i64}
// CHECK: %[[PAD:.+]] = hg.constant dense<3> : tensor<i64>
// CHECK: %[[IS_PAD:.+]] = hg.equal %[[IDS]], %[[PAD]]
// CHECK: %[[NONE:.+]] = hg.constant dense<-1> : tensor<i64>
// CHECK: %[[GRAD_IDS:.+]] = hg.select %[[IS_PAD]], %[[NONE]], %[[IDS]] : tensor<2x3xi1>, tensor<i64>, tensor<2x3xi64> -> tensor<2x3xi64>
// CHECK: hg.embedding_grad %[[GRAD_IDS]], %{{.+}} {rows = 10 : i64}
func.func @forward(%ids: tensor<2x3xi64> {hg.name = "input_ids"},
                   %t: tensor<10x4xf32> {hg.param = "wte"},
                   %w: tensor<10x4xf32> {hg.param = "lm_head.weight"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.embedding %t, %ids {padding_idx = 3 : i64} : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %1 = hg.linear %0, %w : (tensor<2x3x4xf32>, tensor<10x4xf32>) -> tensor<2x3x10xf32>
  %2 = hg.label_log_probs %1, %ids : tensor<2x3x10xf32>, tensor<2x3xi64> -> tensor<2x3xf32>
  %3 = hg.reduce_sum %2 [] {keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  return %3 : tensor<f32>
}
