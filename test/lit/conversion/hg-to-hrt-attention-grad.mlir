// convert-hg-to-hrt of hg.attention_grad: one hrt.attention_grad writing
// the three gradients (its masks, ALiBi slopes and attributes carried
// over; a gradient the function returns is written into its output port).
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// CHECK-LABEL: hrt.executable @backward
// CHECK-DAG: %[[Q:.+]] = hrt.input "q" : <bf16, [batch, 4, seq, 8]>
// CHECK-DAG: %[[K:.+]] = hrt.input "k" : <bf16, [batch, 2, seq, 8]>
// CHECK-DAG: %[[V:.+]] = hrt.input "v" : <bf16, [batch, 2, seq, 8]>
// CHECK-DAG: %[[G:.+]] = hrt.input "g" : <bf16, [batch, 4, seq, 8]>
// CHECK-DAG: %[[M:.+]] = hrt.input "m" : <i64, [batch, seq]>
// CHECK-DAG: %[[DQ:.+]] = hrt.output "dq" : <bf16, [batch, 4, seq, 8]>
// CHECK-DAG: %[[DK:.+]] = hrt.output "dk" : <bf16, [batch, 2, seq, 8]>
// CHECK-DAG: %[[DV:.+]] = hrt.alloc : <bf16, [batch, 2, seq, 8]>
// CHECK: hrt.attention_grad %[[Q]] : <bf16, [batch, 4, seq, 8]>, %[[K]] : <bf16, [batch, 2, seq, 8]>, %[[V]] : <bf16, [batch, 2, seq, 8]>, %[[G]] : <bf16, [batch, 4, seq, 8]> key_mask %[[M]] : !hrt.buffer<i64, [batch, seq]> into %[[DQ]] : <bf16, [batch, 4, seq, 8]>, %[[DK]] : <bf16, [batch, 2, seq, 8]>, %[[DV]] : <bf16, [batch, 2, seq, 8]> {causal = true, scale = 5.000000e-01 : f64, sliding_window = 4 : i64}
// CHECK: hrt.cast %[[DV]]
module {
  func.func @backward(%q: tensor<?x4x?x8xbf16> {hg.name = "q", hg.dims = ["batch", 4, "seq", 8]},
                      %k: tensor<?x2x?x8xbf16> {hg.name = "k", hg.dims = ["batch", 2, "seq", 8]},
                      %v: tensor<?x2x?x8xbf16> {hg.name = "v", hg.dims = ["batch", 2, "seq", 8]},
                      %g: tensor<?x4x?x8xbf16> {hg.name = "g", hg.dims = ["batch", 4, "seq", 8]},
                      %m: tensor<?x?xi64> {hg.name = "m", hg.dims = ["batch", "seq"]})
      -> (tensor<?x4x?x8xbf16> {hg.name = "dq"}, tensor<?x2x?x8xbf16> {hg.name = "dk"},
          tensor<?x2x?x8xf32> {hg.name = "dv"}) {
    %dq, %dk, %dv = hg.attention_grad %q, %k, %v, %g key_mask %m {causal = true, scale = 0.5 : f64, sliding_window = 4 : i64} : (tensor<?x4x?x8xbf16>, tensor<?x2x?x8xbf16>, tensor<?x2x?x8xbf16>, tensor<?x4x?x8xbf16>, tensor<?x?xi64>) -> (tensor<?x4x?x8xbf16>, tensor<?x2x?x8xbf16>, tensor<?x2x?x8xbf16>)
    %dvf = hg.cast %dv : tensor<?x2x?x8xbf16> -> tensor<?x2x?x8xf32>
    return %dq, %dk, %dvf : tensor<?x4x?x8xbf16>, tensor<?x2x?x8xbf16>, tensor<?x2x?x8xf32>
  }
}

// -----

// ALiBi slopes, after the mask and before the key mask.
// CHECK-LABEL: hrt.executable @alibi
// CHECK: hrt.attention_grad {{.+}} alibi %{{.+}} : !hrt.buffer<f32, [2]> key_mask %{{.+}} into
module {
  func.func @alibi(%q: tensor<1x2x3x4xf32> {hg.name = "q"},
                   %s: tensor<2xf32> {hg.name = "s"},
                   %m: tensor<1x3xi64> {hg.name = "m"})
      -> (tensor<1x2x3x4xf32> {hg.name = "dq"}) {
    %dq, %dk, %dv = hg.attention_grad %q, %q, %q, %q alibi %s key_mask %m {causal = true, scale = 1.0 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<2xf32>, tensor<1x3xi64>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
    return %dq : tensor<1x2x3x4xf32>
  }
}

// -----

// An additive mask, defaults written out.
// CHECK-LABEL: hrt.executable @masked
// CHECK: hrt.attention_grad {{.+}} mask %{{.+}} : !hrt.buffer<f32, [1, 1, 3, 3]> into {{.+}} {causal = false, scale = 1.000000e+00 : f64, sliding_window = 0 : i64}
module {
  func.func @masked(%q: tensor<1x2x3x4xf32> {hg.name = "q"},
                    %m: tensor<1x1x3x3xf32> {hg.name = "m"})
      -> (tensor<1x2x3x4xf32> {hg.name = "dq"}) {
    %dq, %dk, %dv = hg.attention_grad %q, %q, %q, %q mask %m {scale = 1.0 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x3xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
    return %dq : tensor<1x2x3x4xf32>
  }
}
