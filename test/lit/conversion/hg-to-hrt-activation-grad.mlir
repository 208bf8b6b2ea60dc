// convert-hg-to-hrt of hg.activation_grad: one hrt.activation_grad of the
// input and grad_out, its activation carried over as the enum hrt.linear's
// epilogue uses.
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// CHECK-LABEL: hrt.executable @backward
// CHECK-DAG: %[[X:.+]] = hrt.input "x" : <bf16, [batch, seq, 8]>
// CHECK-DAG: %[[G:.+]] = hrt.input "g" : <bf16, [batch, seq, 8]>
// CHECK-DAG: %[[DX:.+]] = hrt.output "dx" : <bf16, [batch, seq, 8]>
// CHECK: hrt.activation_grad gelu_tanh %[[X]] : <bf16, [batch, seq, 8]> grad %[[G]] : <bf16, [batch, seq, 8]> into %[[DX]] : <bf16, [batch, seq, 8]>
module {
  func.func @backward(%x: tensor<?x?x8xbf16> {hg.name = "x", hg.dims = ["batch", "seq", 8]},
                      %g: tensor<?x?x8xbf16> {hg.name = "g", hg.dims = ["batch", "seq", 8]})
      -> (tensor<?x?x8xbf16> {hg.name = "dx"}) {
    %dx = hg.activation_grad %x, %g {activation = "gelu_tanh"} : tensor<?x?x8xbf16>, tensor<?x?x8xbf16> -> tensor<?x?x8xbf16>
    return %dx : tensor<?x?x8xbf16>
  }
}

// -----

// Each activation's enum; a gradient used further goes to a buffer of its
// own.
// CHECK-LABEL: hrt.executable @each
// CHECK: %[[R:.+]] = hrt.alloc : <f32, [4, 3]>
// CHECK: hrt.activation_grad relu %{{.+}} : <f32, [4, 3]> grad %{{.+}} : <f32, [4, 3]> into %[[R]] : <f32, [4, 3]>
// CHECK: hrt.activation_grad silu %{{.+}} : <f32, [4, 3]> grad %[[R]] : <f32, [4, 3]> into
// CHECK: hrt.activation_grad gelu %{{.+}} : <f32, [4, 3]> grad %{{.+}} : <f32, [4, 3]> into
module {
  func.func @each(%x: tensor<4x3xf32> {hg.name = "x"}, %g: tensor<4x3xf32> {hg.name = "g"})
      -> (tensor<4x3xf32> {hg.name = "a"}, tensor<4x3xf32> {hg.name = "b"}) {
    %0 = hg.activation_grad %x, %g {activation = "relu"} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %1 = hg.activation_grad %x, %0 {activation = "silu"} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    %2 = hg.activation_grad %x, %g {activation = "gelu"} : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
    return %1, %2 : tensor<4x3xf32>, tensor<4x3xf32>
  }
}
