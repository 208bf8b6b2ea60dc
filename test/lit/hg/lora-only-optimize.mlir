// hg-lora with targets and only-optimize.
// RUN: hybridc-opt --hg-lora='rank=2 targets=q_proj only-optimize=true' %s | FileCheck %s
// RUN: not hybridc-opt --hg-lora='rank=2 targets=q_proj,v_proj' %s 2>&1 | FileCheck %s --check-prefix=NONE

// With targets and only-optimize: q_proj alone, and every other parameter
// frozen (no gradient for hg-autodiff); alpha 1 / r 2 scales by 0.5.
// CHECK-LABEL: module attributes {hg.lora = {{.+}}only_optimize = true, rank = 2 : i64, targets = ["q_proj"]}}
// CHECK: func.func @forward({{.+}}: tensor<3x4xf32> {hg.frozen, hg.param = "model.layers.0.attn.q_proj.weight"}, %{{[^:]+}}: tensor<3xf32> {hg.frozen, hg.param = "model.layers.0.attn.q_proj.bias"}, %{{[^:]+}}: tensor<3x5xf32> {hg.frozen, hg.param = "h.0.c_fc.weight"}, %{{[^:]+}}: tensor<6x3xf32> {hg.frozen, hg.param = "lm_head.weight"}, %{{[^:]+}}: tensor<2x4xf32> {hg.param = "base_model.model.model.layers.0.attn.q_proj.lora_A.weight"}, %{{[^:]+}}: tensor<3x2xf32> {hg.param = "base_model.model.model.layers.0.attn.q_proj.lora_B.weight"})
// CHECK: hg.constant dense<5.000000e-01> : tensor<1xf32>
// CHECK-NOT: c_fc.lora
// A target that matches no linear is named, with the linears there are.
// NONE: error: hg-lora: target 'v_proj' matches no linear (the linears are: q_proj, c_fc, lm_head)

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

