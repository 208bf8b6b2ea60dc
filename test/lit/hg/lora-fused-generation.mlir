// hg-lora-fused-generation: @prefill and @decode read the base weights
// alone; @lora_fuse adds alpha / r x B A into each adapted weight (its
// transpose for a Conv1D weight; the add is computed in W's buffer),
// @lora_unfuse subtracts it.
// RUN: hybridc-opt --pass-pipeline='builtin.module(hg-lora{rank=2 alpha=4}, hg-split-generation, hg-lora-fused-generation)' %s | FileCheck %s
// After hg-fuse-epilogues (the training pipeline runs it on @forward before
// the generation lowering) the sums are residuals of the linears: the same.
// RUN: hybridc-opt --pass-pipeline='builtin.module(hg-lora{rank=2 alpha=4}, func.func(hg-fuse-epilogues), hg-split-generation, hg-lora-fused-generation)' %s | FileCheck %s
// RUN: not hybridc-opt --pass-pipeline='builtin.module(hg-split-generation, hg-lora-fused-generation)' %s 2>&1 | FileCheck %s --check-prefix=NONE

// CHECK-LABEL: func.func @forward
// CHECK: lora_A.weight
// CHECK-LABEL: func.func @decode
// CHECK-NOT: lora_
// CHECK-LABEL: func.func @prefill
// CHECK-SAME: (%{{[^:]+}}: tensor<?x?xi64> {{[^%]+}}, %[[EMB:[^:]+]]: tensor<8x4xf32> {hg.param = "model.embed.weight"}, %[[WQ:[^:]+]]: tensor<4x4xf32> {hg.param = "model.layers.0.q_proj.weight"}, %[[WC:[^:]+]]: tensor<4x4xf32> {hg.param = "h.0.c_fc.weight"}, %{{[^:]+}}: tensor<1xi64> {hg.state = "gen.past"}
// CHECK-NOT: lora_
// CHECK: %[[X:.+]] = hg.embedding %[[EMB]]
// CHECK-NEXT: %[[Q:.+]] = hg.linear %[[X]], %[[WQ]] : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
// CHECK-NEXT: %[[H:.+]] = hg.relu %[[Q]]
// CHECK-NEXT: %{{.+}} = hg.linear %[[H]], %[[WC]] {transpose_weight = false} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
// CHECK-NOT: lora_
// CHECK-LABEL: func.func @lora_fuse
// CHECK-SAME: (%[[W1:[^:]+]]: tensor<4x4xf32> {hg.param = "model.layers.0.q_proj.weight"}, %[[A1:[^:]+]]: tensor<2x4xf32> {hg.param = "base_model.model.model.layers.0.q_proj.lora_A.weight"}, %[[B1:[^:]+]]: tensor<4x2xf32> {hg.param = "base_model.model.model.layers.0.q_proj.lora_B.weight"}, %[[W2:[^:]+]]: tensor<4x4xf32> {hg.param = "h.0.c_fc.weight"}, %[[A2:[^:]+]]: tensor<2x4xf32> {{[^%]+}}, %[[B2:[^:]+]]: tensor<4x2xf32> {hg.param = "base_model.model.h.0.c_fc.lora_B.weight"})
// CHECK-SAME: -> (tensor<4x4xf32> {hg.param = "model.layers.0.q_proj.weight"}, tensor<4x4xf32> {hg.param = "h.0.c_fc.weight"})
// CHECK: %[[S:.+]] = hg.constant dense<2.000000e+00> : tensor<1xf32>
// CHECK: %[[SB:.+]] = hg.mul %[[B1]], %[[S]]
// CHECK: %[[D1:.+]] = hg.linear %[[SB]], %[[A1]] {transpose_weight = false} : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[M1:.+]] = hg.add %[[W1]], %[[D1]]
// CHECK: %[[AT:.+]] = hg.transpose %[[A2]] [1, 0]
// CHECK: %[[SA:.+]] = hg.mul %[[AT]], %{{.+}}
// CHECK: %[[D2:.+]] = hg.linear %[[SA]], %[[B2]] : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
// CHECK: %[[M2:.+]] = hg.add %[[W2]], %[[D2]]
// CHECK: return %[[M1]], %[[M2]]
// CHECK-LABEL: func.func @lora_unfuse
// CHECK: hg.constant dense<-2.000000e+00> : tensor<1xf32>
// CHECK: hg.add

// NONE: error: hg-lora-fused-generation: hg.lora: absent (run hg-lora first)
module {
func.func @forward(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "input_ids"},
                   %emb: tensor<8x4xf32> {hg.param = "model.embed.weight"},
                   %wq: tensor<4x4xf32> {hg.param = "model.layers.0.q_proj.weight"},
                   %wc: tensor<4x4xf32> {hg.param = "h.0.c_fc.weight"}) -> (tensor<?x?x8xf32> {hg.name = "logits"}) {
  %0 = hg.embedding %emb, %ids : tensor<8x4xf32>, tensor<?x?xi64> -> tensor<?x?x4xf32>
  %1 = hg.linear %0, %wq : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %2 = hg.relu %1 : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %3 = hg.linear %2, %wc {transpose_weight = false} : (tensor<?x?x4xf32>, tensor<4x4xf32>) -> tensor<?x?x4xf32>
  %4 = hg.add %3, %0 : tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x4xf32>
  %5 = hg.linear %4, %emb : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  return %5 : tensor<?x?x8xf32>
}
}
