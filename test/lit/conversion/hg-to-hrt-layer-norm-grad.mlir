// convert-hg-to-hrt of hg.layer_norm_grad: one hrt.layer_norm_grad writing
// the three gradients (epsilon and axis carried over; a gradient the
// function returns is written into its output port, an unused one into a
// buffer of its own).
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// CHECK-LABEL: hrt.executable @backward
// CHECK-DAG: %[[X:.+]] = hrt.input "x" : <bf16, [batch, seq, 8]>
// CHECK-DAG: %[[W:.+]] = hrt.input "w" : <bf16, [8]>
// CHECK-DAG: %[[G:.+]] = hrt.input "g" : <bf16, [batch, seq, 8]>
// CHECK-DAG: %[[DX:.+]] = hrt.output "dx" : <bf16, [batch, seq, 8]>
// CHECK-DAG: %[[DW:.+]] = hrt.output "dw" : <bf16, [8]>
// CHECK-DAG: %[[DB:.+]] = hrt.alloc : <bf16, [8]>
// CHECK: hrt.layer_norm_grad %[[X]] : <bf16, [batch, seq, 8]> weight %[[W]] : !hrt.buffer<bf16, [8]> grad %[[G]] : <bf16, [batch, seq, 8]> into %[[DX]] : <bf16, [batch, seq, 8]>, %[[DW]] : <bf16, [8]>, %[[DB]] : <bf16, [8]> {axis = -1 : i64, epsilon = 1.000000e-05 : f64}
module {
  func.func @backward(%x: tensor<?x?x8xbf16> {hg.name = "x", hg.dims = ["batch", "seq", 8]},
                      %w: tensor<8xbf16> {hg.name = "w"},
                      %g: tensor<?x?x8xbf16> {hg.name = "g", hg.dims = ["batch", "seq", 8]})
      -> (tensor<?x?x8xbf16> {hg.name = "dx"}, tensor<8xbf16> {hg.name = "dw"}) {
    %dx, %dw, %db = hg.layer_norm_grad %x weight %w grad %g {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xbf16>, tensor<8xbf16>, tensor<?x?x8xbf16>) -> (tensor<?x?x8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
    return %dx, %dw : tensor<?x?x8xbf16>, tensor<8xbf16>
  }
}

// -----

// Over two dims, without weight: the parameter gradients are [seq, 8].
// CHECK-LABEL: hrt.executable @two_dims
// CHECK: hrt.layer_norm_grad %{{.+}} : <f32, [2, 3, 8]> grad %{{.+}} : <f32, [2, 3, 8]> into %{{.+}} : <f32, [2, 3, 8]>, %{{.+}} : <f32, [3, 8]>, %{{.+}} : <f32, [3, 8]> {axis = 1 : i64, epsilon = 1.000000e-03 : f64}
module {
  func.func @two_dims(%x: tensor<2x3x8xf32> {hg.name = "x"})
      -> (tensor<3x8xf32> {hg.name = "db"}) {
    %dx, %dw, %db = hg.layer_norm_grad %x grad %x {axis = 1 : i64, epsilon = 1.0e-3 : f64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> (tensor<2x3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>)
    return %db : tensor<3x8xf32>
  }
}
