// The reward model's ranking loss lowers one to one: hg.pairwise_ranking_loss
// becomes its hrt command over the values' and the i64 ids' and mask's
// buffers, each of its three results its own buffer (end scores [batch]).
// RUN: hybridc-opt --convert-hg-to-hrt %s | FileCheck %s

// CHECK-LABEL: hrt.executable @forward symbols ["batch", "seq"]
// CHECK-DAG: %[[V:.+]] = hrt.input "values"
// CHECK-DAG: %[[IDS:.+]] = hrt.input "input_ids"
// CHECK-DAG: %[[MASK:.+]] = hrt.input "attention_mask"
// CHECK-DAG: %[[SCORES:.+]] = hrt.output "end_scores"
// CHECK: hrt.pairwise_ranking_loss %[[V]] : <f32, [batch, seq]>, %[[IDS]] : <i64, [batch, seq]>, %[[MASK]] : <i64, [batch, seq]> into %{{.+}} : <f32, []>, %[[SCORES]] : <f32, [batch]>, %{{.+}} : <f32, []>
func.func @forward(%v: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "values"},
                   %ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %mask: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "attention_mask"})
    -> (tensor<f32> {hg.name = "loss"}, tensor<?xf32> {hg.name = "end_scores"}, tensor<f32> {hg.name = "accuracy"}) {
  %l:3 = hg.pairwise_ranking_loss %v, %ids, %mask : tensor<?x?xf32>, tensor<?x?xi64>, tensor<?x?xi64> -> tensor<f32>, tensor<?xf32>, tensor<f32>
  return %l#0, %l#1, %l#2 : tensor<f32>, tensor<?xf32>, tensor<f32>
}
