// hg-lora: PEFT's adapters beside the targeted linears of @forward.
// RUN: hybridc-opt --hg-lora='rank=2 alpha=4' --split-input-file --verify-diagnostics %s | FileCheck %s

// Default targets: the linears of numbered blocks (q_proj, c_fc), not the
// head. An nn.Linear weight [out, in] gets A [r, in] and B [out, r]; a
// Conv1D weight [in, out] (transpose_weight = false) the same from its
// transposed shape. The path, scaled by alpha / r = 2 on the rank-r
// activations, is added before what used the linear (the relu).
// CHECK-LABEL: module attributes {hg.lora = {adapters = [{fan_in_fan_out = false, lora_A = "base_model.model.model.layers.0.attn.q_proj.lora_A.weight", lora_B = "base_model.model.model.layers.0.attn.q_proj.lora_B.weight", module = "model.layers.0.attn.q_proj", weight = "model.layers.0.attn.q_proj.weight"}, {fan_in_fan_out = true, lora_A = "base_model.model.h.0.c_fc.lora_A.weight", lora_B = "base_model.model.h.0.c_fc.lora_B.weight", module = "h.0.c_fc", weight = "h.0.c_fc.weight"}], alpha = 4.000000e+00 : f64, only_optimize = false, rank = 2 : i64, targets = []}}
// CHECK: func.func @forward(%[[X:[^:]+]]: tensor<?x4xf32> {{[^%]+}}, %[[WQ:[^:]+]]: tensor<3x4xf32> {{[^%]+}}, %[[BQ:[^:]+]]: tensor<3xf32> {{[^%]+}}, %[[WC:[^:]+]]: tensor<3x5xf32> {{[^%]+}}, %[[WH:[^:]+]]: tensor<6x3xf32> {{[^%]+}},
// CHECK-SAME: %[[AQ:[^:]+]]: tensor<2x4xf32> {hg.param = "base_model.model.model.layers.0.attn.q_proj.lora_A.weight"}, %[[BQL:[^:]+]]: tensor<3x2xf32> {hg.param = "base_model.model.model.layers.0.attn.q_proj.lora_B.weight"},
// CHECK-SAME: %[[AC:[^:]+]]: tensor<2x3xf32> {hg.param = "base_model.model.h.0.c_fc.lora_A.weight"}, %[[BC:[^:]+]]: tensor<5x2xf32> {hg.param = "base_model.model.h.0.c_fc.lora_B.weight"})
// CHECK: %[[Y0:.+]] = hg.linear %[[X]], %[[WQ]] bias %[[BQ]]
// CHECK: %[[DOWN:.+]] = hg.linear %[[X]], %[[AQ]] : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
// CHECK: %[[S:.+]] = hg.constant dense<2.000000e+00> : tensor<1xf32>
// CHECK: %[[SCALED:.+]] = hg.mul %[[DOWN]], %[[S]]
// CHECK: %[[UP:.+]] = hg.linear %[[SCALED]], %[[BQL]] : (tensor<?x2xf32>, tensor<3x2xf32>) -> tensor<?x3xf32>
// CHECK: %[[SUM:.+]] = hg.add %[[Y0]], %[[UP]]
// CHECK: %[[H:.+]] = hg.relu %[[SUM]]
// CHECK: %[[C0:.+]] = hg.linear %[[H]], %[[WC]] {transpose_weight = false}
// CHECK: %[[CDOWN:.+]] = hg.linear %[[H]], %[[AC]] : (tensor<?x3xf32>, tensor<2x3xf32>) -> tensor<?x2xf32>
// CHECK: %[[CUP:.+]] = hg.linear %{{.+}}, %[[BC]] : (tensor<?x2xf32>, tensor<5x2xf32>) -> tensor<?x5xf32>
// CHECK: hg.add %[[C0]], %[[CUP]]
// CHECK: %[[LOGITS:.+]] = hg.linear %[[H]], %[[WH]] :
// CHECK: return %[[LOGITS]]

module {
func.func @forward(%x: tensor<?x4xf32> {hg.dims = ["batch", 4], hg.name = "x"},
                   %wq: tensor<3x4xf32> {hg.param = "model.layers.0.attn.q_proj.weight"},
                   %bq: tensor<3xf32> {hg.param = "model.layers.0.attn.q_proj.bias"},
                   %wc: tensor<3x5xf32> {hg.param = "h.0.c_fc.weight"},
                   %wh: tensor<6x3xf32> {hg.param = "lm_head.weight"}) -> (tensor<?x6xf32> {hg.name = "logits"}) {
  %0 = hg.linear %x, %wq bias %bq : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = hg.relu %0 : tensor<?x3xf32> -> tensor<?x3xf32>
  %2 = hg.linear %1, %wc {transpose_weight = false} : (tensor<?x3xf32>, tensor<3x5xf32>) -> tensor<?x5xf32>
  %3 = hg.linear %1, %wh : (tensor<?x3xf32>, tensor<6x3xf32>) -> tensor<?x6xf32>
  return %3 : tensor<?x6xf32>
}
}

// -----

// A weight that is also an embedding table (tied) cannot take an adapter.
module {
func.func @forward(%x: tensor<?x4xf32> {hg.dims = ["batch", 4], hg.name = "x"},
                   %ids: tensor<?xi64> {hg.dims = ["batch"], hg.name = "ids"},
                   %w: tensor<4x4xf32> {hg.param = "model.layers.0.q_proj.weight"}) -> (tensor<?x4xf32> {hg.name = "y"}) {
  // expected-error @+1 {{hg-lora: 'model.layers.0.q_proj.weight' is used by more than this linear (tied); it cannot take an adapter}}
  %0 = hg.linear %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %1 = hg.embedding %w, %ids : tensor<4x4xf32>, tensor<?xi64> -> tensor<?x4xf32>
  %2 = hg.add %0, %1 : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return %2 : tensor<?x4xf32>
}
}

// -----

// Nothing in a numbered block: the default targets match nothing.
// expected-error @+1 {{hg-lora: no linear of a numbered block to adapt (name the modules with targets)}}
module {
func.func @forward(%x: tensor<?x4xf32> {hg.dims = ["batch", 4], hg.name = "x"},
                   %w: tensor<4x4xf32> {hg.param = "score.weight"}) -> (tensor<?x4xf32> {hg.name = "y"}) {
  %0 = hg.linear %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}
}
