// hg-autodiff of the activations: each backward is one hg.activation_grad
// of the activation's input and the incoming gradient (gelu's tanh
// approximation as "gelu_tanh", its erf form as "gelu"), not the
// derivative spelled out in elementwise ops.
// RUN: hybridc-opt --hg-autodiff --split-input-file %s | FileCheck %s

// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xbf16>
// CHECK: %[[Y:.+]] = hg.gelu %[[X]] {approximate = "tanh"}
// CHECK: %[[DX:.+]] = hg.activation_grad %[[X]], %{{.+}} {activation = "gelu_tanh"} : tensor<?x8xbf16>, tensor<?x8xbf16> -> tensor<?x8xbf16>
// CHECK-NOT: hg.tanh
// CHECK-NOT: hg.mul
// CHECK: return %{{.+}}, %[[DX]]
func.func @forward(%x: tensor<?x8xbf16> {hg.dims = ["batch", 8], hg.param = "x"}) -> (tensor<bf16> {hg.name = "loss"}) {
  %0 = hg.gelu %x {approximate = "tanh"} : tensor<?x8xbf16> -> tensor<?x8xbf16>
  %1 = hg.reduce_sum %0 [] {keepdims = false} : tensor<?x8xbf16> -> tensor<bf16>
  return %1 : tensor<bf16>
}

// -----

// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x8xf32>
// CHECK: hg.activation_grad %[[X]], %{{.+}} {activation = "gelu"} : tensor<2x8xf32>, tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK-NOT: hg.erf
// CHECK-NOT: hg.exp
func.func @forward(%x: tensor<2x8xf32> {hg.param = "x"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.gelu %x : tensor<2x8xf32> -> tensor<2x8xf32>
  %1 = hg.reduce_sum %0 [] {keepdims = false} : tensor<2x8xf32> -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// silu's gradient flows on into the product that fed it; relu's takes the
// relu's input, not its result.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x3xf16>
// CHECK: %[[H:.+]] = hg.mul %[[X]], %[[X]]
// CHECK: %[[S:.+]] = hg.silu %[[H]]
// CHECK: %[[R:.+]] = hg.relu %[[S]]
// CHECK: %[[DS:.+]] = hg.activation_grad %[[S]], %{{.+}} {activation = "relu"} : tensor<4x3xf16>, tensor<4x3xf16> -> tensor<4x3xf16>
// CHECK: %[[DH:.+]] = hg.activation_grad %[[H]], %[[DS]] {activation = "silu"} : tensor<4x3xf16>, tensor<4x3xf16> -> tensor<4x3xf16>
// CHECK-NOT: hg.sigmoid
// CHECK-NOT: hg.select
// CHECK: hg.mul %[[DH]], %[[X]]
func.func @forward(%x: tensor<4x3xf16> {hg.param = "x"}) -> (tensor<f16> {hg.name = "loss"}) {
  %0 = hg.mul %x, %x : tensor<4x3xf16>, tensor<4x3xf16> -> tensor<4x3xf16>
  %1 = hg.silu %0 : tensor<4x3xf16> -> tensor<4x3xf16>
  %2 = hg.relu %1 : tensor<4x3xf16> -> tensor<4x3xf16>
  %3 = hg.reduce_sum %2 [] {keepdims = false} : tensor<4x3xf16> -> tensor<f16>
  return %3 : tensor<f16>
}
