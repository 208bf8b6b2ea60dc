// The RLHF ops defined once in runtime/base/ops/ops.py lower one to one,
// the ops with two results (ppo_rewards, gae) included: each hg op becomes
// its hrt command over the operands' buffers, every result its own buffer
// (GAE's [batch, seq - start]), attributes as they were.
// RUN: hybridc-opt --convert-hg-to-hrt %s | FileCheck %s

// CHECK-LABEL: hrt.executable @forward symbols ["batch", "seq"]
// CHECK-DAG: %[[LP:.+]] = hrt.input "logprobs"
// CHECK-DAG: %[[REF:.+]] = hrt.input "ref"
// CHECK-DAG: %[[S:.+]] = hrt.input "scores"
// CHECK-DAG: %[[MASK:.+]] = hrt.input "mask"
// CHECK-DAG: %[[V:.+]] = hrt.input "values"
// CHECK-DAG: %[[KL:.+]] = hrt.input "kl_ctl"
// CHECK: hrt.ppo_rewards %[[LP]] : <f32, [batch, seq]>, %[[REF]] : <f32, [batch, seq]>, %[[S]] : <f32, [batch]>, %[[MASK]] : <f32, [batch, seq]>, %[[V]] : <f32, [batch, seq]>, %[[KL]] : <f32, [1]> into %[[RW:[^ ]+]] : <f32, [batch, seq]>, %[[OV:[^ ]+]] : <f32, [batch, seq]> {start = 3 : i64}
// CHECK: hrt.gae %[[RW]] : <f32, [batch, seq]>, %[[OV]] : <f32, [batch, seq]> into %[[ADV:[^ ]+]] : <f32, [batch, "seq - 3"]>, %{{.+}} : <f32, [batch, "seq - 3"]> {start = 3 : i64}
// CHECK: hrt.masked_whiten %[[ADV]] : <f32, [batch, "seq - 3"]>, %{{.+}} into %{{.+}} : <f32, [batch, "seq - 3"]>
// CHECK: hrt.kl_k3 %[[LP]] : <f32, [batch, seq]>, %[[REF]] : <f32, [batch, seq]> into %[[K:[^ ]+]] : <f32, [batch, seq]>
// CHECK: hrt.masked_mean %[[K]] : <f32, [batch, seq]>, %[[MASK]] : <f32, [batch, seq]> into %{{.+}} : <f32, []> {per_sequence = true}
func.func @forward(%lp: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "logprobs"},
                   %ref: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "ref"},
                   %s: tensor<?xf32> {hg.dims = ["batch"], hg.name = "scores"},
                   %mask: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "mask"},
                   %v: tensor<?x?xf32> {hg.dims = ["batch", "seq"], hg.name = "values"},
                   %kl: tensor<1xf32> {hg.name = "kl_ctl"},
                   %amask: tensor<?x?xf32> {hg.dims = ["batch", "seq-3"], hg.name = "answer_mask"})
    -> (tensor<?x?xf32> {hg.name = "advantages"}, tensor<f32> {hg.name = "kl"}) {
  %r:2 = hg.ppo_rewards %lp, %ref, %s, %mask, %v, %kl {start = 3 : i64} : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?xf32>, tensor<?x?xf32>, tensor<?x?xf32>, tensor<1xf32> -> tensor<?x?xf32>, tensor<?x?xf32>
  %a:2 = hg.gae %r#0, %r#1 {start = 3 : i64} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>, tensor<?x?xf32>
  %w = hg.masked_whiten %a#0, %amask : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %k = hg.kl_k3 %lp, %ref : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<?x?xf32>
  %m = hg.masked_mean %k, %mask {per_sequence = true} : tensor<?x?xf32>, tensor<?x?xf32> -> tensor<f32>
  return %w, %m : tensor<?x?xf32>, tensor<f32>
}
