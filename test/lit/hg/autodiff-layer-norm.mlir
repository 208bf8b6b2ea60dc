// hg-autodiff of hg.layer_norm: one hg.layer_norm_grad (the layer norm's
// input, weight, epsilon and axis, and the incoming gradient), whose
// grad_weight and grad_bias are used only for the parameters the layer
// norm has.
// RUN: hybridc-opt --hg-autodiff --split-input-file %s | FileCheck %s

// Weight and bias: the three gradients.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32> {{[^%]+}}, %[[W:[^:]+]]: tensor<8xf32> {{[^%]+}}, %[[B:[^:]+]]: tensor<8xf32> {{[^)]+}})
// CHECK: %[[Y:.+]] = hg.layer_norm %[[X]] weight %[[W]] bias %[[B]]
// CHECK: %[[LOSS:.+]] = hg.reduce_sum %[[Y]]
// CHECK: %[[DX:[^,]+]], %[[DW:[^,]+]], %[[DB:[^ ]+]] = hg.layer_norm_grad %[[X]] weight %[[W]] grad %{{.+}} {epsilon = 1.000000e-05 : f64} : (tensor<?x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NOT: hg.reduce_mean
// CHECK: return %[[LOSS]], %[[DW]], %[[DB]]
func.func @forward(%x: tensor<?x8xf32> {hg.dims = ["batch", 8], hg.name = "x"},
                   %w: tensor<8xf32> {hg.param = "ln.weight"},
                   %b: tensor<8xf32> {hg.param = "ln.bias"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.layer_norm %x weight %w bias %b {epsilon = 1.0e-5 : f64} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = hg.reduce_sum %0 [] {keepdims = false} : tensor<?x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// A bias without weight: its gradient is grad_bias (result 2).
// CHECK-LABEL: func.func @forward_grad
// CHECK: %{{[^,]+}}, %{{[^,]+}}, %[[DB:[^ ]+]] = hg.layer_norm_grad %{{.+}} grad %{{.+}} {epsilon = 1.000000e-05 : f64} : (tensor<2x8xf32>, tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK: return %{{.+}}, %[[DB]]
func.func @forward(%x: tensor<2x8xf32> {hg.name = "x"},
                   %b: tensor<8xf32> {hg.param = "ln.bias"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.layer_norm %x bias %b {epsilon = 1.0e-5 : f64} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %1 = hg.mul %0, %0 : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
  %2 = hg.reduce_sum %1 [] {keepdims = false} : tensor<2x8xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Normalised over two dims, no weight or bias: only grad_input flows on,
// to the parameter that scaled the input.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[DX:[^,]+]], %{{[^,]+}}, %{{[^ ]+}} = hg.layer_norm_grad %{{.+}} grad %{{.+}} {axis = 1 : i64, epsilon = 1.000000e-03 : f64} : (tensor<2x3x4xbf16>, tensor<2x3x4xbf16>) -> (tensor<2x3x4xbf16>, tensor<3x4xbf16>, tensor<3x4xbf16>)
// CHECK: hg.mul %[[DX]], %{{.+}}
// CHECK: return
func.func @forward(%x: tensor<2x3x4xbf16> {hg.name = "x"},
                   %s: tensor<4xbf16> {hg.param = "s"}) -> (tensor<bf16> {hg.name = "loss"}) {
  %0 = hg.mul %x, %s : tensor<2x3x4xbf16>, tensor<4xbf16> -> tensor<2x3x4xbf16>
  %1 = hg.layer_norm %0 {axis = 1 : i64, epsilon = 1.0e-3 : f64} : (tensor<2x3x4xbf16>) -> tensor<2x3x4xbf16>
  %2 = hg.mul %1, %x : tensor<2x3x4xbf16>, tensor<2x3x4xbf16> -> tensor<2x3x4xbf16>
  %3 = hg.reduce_sum %2 [] {keepdims = false} : tensor<2x3x4xbf16> -> tensor<bf16>
  return %3 : tensor<bf16>
}
