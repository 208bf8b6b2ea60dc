// convert-hg-to-hrt of the fused cross-entropy and embedding gradient: one
// hrt.label_log_probs, one hrt.label_log_probs_grad and one
// hrt.embedding_grad command each, on the ops' buffers.
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// CHECK-LABEL: hrt.executable @loss
// CHECK-DAG: %[[X:.+]] = hrt.input "logits" : <bf16, [batch, seq, 16]>
// CHECK-DAG: %[[L:.+]] = hrt.input "labels" : <i64, [batch, seq]>
// CHECK-DAG: %[[LP:.+]] = hrt.output "lp" : <f32, [batch, seq]>
// CHECK-DAG: %[[DX:.+]] = hrt.output "dx" : <bf16, [batch, seq, 16]>
// CHECK: hrt.label_log_probs %[[X]] : <bf16, [batch, seq, 16]>, %[[L]] : <i64, [batch, seq]> into %[[LP]] : <f32, [batch, seq]>
// CHECK: hrt.label_log_probs_grad %[[X]] : <bf16, [batch, seq, 16]>, %[[L]] : <i64, [batch, seq]>, %[[LP]] : <f32, [batch, seq]> into %[[DX]] : <bf16, [batch, seq, 16]>
module {
  func.func @loss(%x: tensor<?x?x16xbf16> {hg.name = "logits", hg.dims = ["batch", "seq", 16]},
                  %l: tensor<?x?xi64> {hg.name = "labels", hg.dims = ["batch", "seq"]})
      -> (tensor<?x?xf32> {hg.name = "lp"}, tensor<?x?x16xbf16> {hg.name = "dx"}) {
    %lp = hg.label_log_probs %x, %l : tensor<?x?x16xbf16>, tensor<?x?xi64> -> tensor<?x?xf32>
    %dx = hg.label_log_probs_grad %x, %l, %lp : tensor<?x?x16xbf16>, tensor<?x?xi64>, tensor<?x?xf32> -> tensor<?x?x16xbf16>
    return %lp, %dx : tensor<?x?xf32>, tensor<?x?x16xbf16>
  }
}

// -----

// CHECK-LABEL: hrt.executable @table_grad
// CHECK-DAG: %[[IDS:.+]] = hrt.input "ids" : <i64, [batch, seq]>
// CHECK-DAG: %[[G:.+]] = hrt.input "g" : <bf16, [batch, seq, 4]>
// CHECK-DAG: %[[DT:.+]] = hrt.output "dt" : <bf16, [10, 4]>
// CHECK: hrt.embedding_grad %[[IDS]] : <i64, [batch, seq]>, %[[G]] : <bf16, [batch, seq, 4]> into %[[DT]] : <bf16, [10, 4]>
module {
  func.func @table_grad(%ids: tensor<?x?xi64> {hg.name = "ids", hg.dims = ["batch", "seq"]},
                        %g: tensor<?x?x4xbf16> {hg.name = "g", hg.dims = ["batch", "seq", 4]})
      -> (tensor<10x4xbf16> {hg.name = "dt"}) {
    %dt = hg.embedding_grad %ids, %g {rows = 10 : i64} : tensor<?x?xi64>, tensor<?x?x4xbf16> -> tensor<10x4xbf16>
    return %dt : tensor<10x4xbf16>
  }
}
