// An op defined once in runtime/base/ops/ops.py lowers one to one: each
// hg.clipped_surrogate(_grad) becomes its hrt command over the operands'
// buffers, attributes as they were.
// RUN: hybridc-opt --convert-hg-to-hrt %s | FileCheck %s

// CHECK-LABEL: hrt.executable @forward symbols ["batch", "seq"]
// CHECK-DAG: %[[LP:.+]] = hrt.input "logprobs"
// CHECK-DAG: %[[OLD:.+]] = hrt.input "old"
// CHECK-DAG: %[[ADV:.+]] = hrt.input "adv"
// CHECK-DAG: %[[MASK:.+]] = hrt.input "mask"
// CHECK: hrt.clipped_surrogate %[[LP]] : <f32, [batch, seq]>, %[[OLD]] : <f32, [batch, seq]>, %[[ADV]] : <f32, [batch, seq]>, %[[MASK]] : <f32, [batch, seq]> into %{{.+}} : <f32, [batch, seq]> {clip_high = 2.800000e-01 : f64}
// CHECK: hrt.clipped_surrogate_grad %[[LP]] : {{.+}}, %[[MASK]] : <f32, [batch, seq]>, %{{.+}} : <f32, [batch, seq]> into %{{.+}} : <f32, [batch, seq]> {clip_high = 2.800000e-01 : f64}
func.func @forward(%lp: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "logprobs"},
                   %old: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "old"},
                   %adv: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "adv"},
                   %mask: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "mask"})
    -> (tensor<?x?xf32> {hg.name = "loss"}, tensor<?x?xf32> {hg.name = "grad"}) {
  %0 = hg.clipped_surrogate %lp, %old, %adv, %mask {clip_high = 0.28 : f64} : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %1 = hg.clipped_surrogate_grad %lp, %old, %adv, %mask, %0 {clip_high = 0.28 : f64} : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xf32>
}
