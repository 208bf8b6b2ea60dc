// hg-fuse-norm-prologues: in @decode, a layer_norm / rms_norm over the last
// dim whose every use is a linear's input becomes those linears' prologue.
// RUN: hybridc-opt --hg-fuse-norm-prologues --split-input-file %s | FileCheck %s
// The same in bf16 fuses alike:
// RUN: sed -e 's/f32/bf16/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-norm-prologues --split-input-file %t.bf16.mlir | FileCheck %t.bf16.mlir

// An OPT attention block's input: one layer_norm feeding q, k and v; each
// projection normalises its own rows, and the norm goes.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:[^:]+]]: {{.+}}, %[[G:[^:]+]]: {{.+}}, %[[B:[^:]+]]: {{.+}}, %[[WQ:[^:]+]]: {{.+}}, %[[WK:[^:]+]]: {{.+}}, %[[WV:[^:]+]]: {{.+}}, %[[BQ:[^:]+]]: {{.+}})
// CHECK-NOT: hg.layer_norm
// CHECK: hg.linear %[[X]], %[[WQ]] bias %[[BQ]] norm_weight %[[G]] norm_bias %[[B]] {norm = "layer_norm"}
// CHECK: hg.linear %[[X]], %[[WK]] norm_weight %[[G]] norm_bias %[[B]] {norm = "layer_norm"}
// CHECK: hg.linear %[[X]], %[[WV]] residual %[[X]] norm_weight %[[G]] norm_bias %[[B]] {activation = "relu", norm = "layer_norm"}
func.func @qkv(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>,
               %wq: tensor<64x64xf32>, %wk: tensor<64x64xf32>,
               %wv: tensor<64x64xf32>, %bq: tensor<64xf32>)
    -> (tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>)
    attributes {hg.generation = "decode"} {
  %n = hg.layer_norm %x weight %g bias %b {epsilon = 1.0e-5 : f64} : (tensor<2x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  %q = hg.linear %n, %wq bias %bq : (tensor<2x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  %k = hg.linear %n, %wk : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
  %v = hg.linear %n, %wv residual %x {activation = "relu"} : (tensor<2x64xf32>, tensor<64x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  return %q, %k, %v : tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>
}

// -----

// rms_norm (Llama), with and without a weight; a rank-3 input normalised
// over its last dim; [K, N] weights.
// CHECK-LABEL: func.func @rms
// CHECK-SAME: (%[[X:[^:]+]]: {{.+}}, %[[G:[^:]+]]: {{.+}}, %[[W:[^:]+]]: {{.+}})
// CHECK-NOT: hg.rms_norm
// CHECK: hg.linear %[[X]], %[[W]] norm_weight %[[G]] {norm = "rms_norm", norm_epsilon = {{[0-9.]+E-7}} : f64, transpose_weight = false}
// CHECK: hg.linear %[[X]], %[[W]] {norm = "rms_norm", norm_epsilon = {{[0-9.]+E-7}} : f64, transpose_weight = false}
func.func @rms(%x: tensor<1x1x32xf32>, %g: tensor<32xf32>, %w: tensor<32x16xf32>)
    -> (tensor<1x1x16xf32>, tensor<1x1x16xf32>)
    attributes {hg.generation = "decode"} {
  %n = hg.rms_norm %x weight %g {epsilon = 1.0e-6 : f64} : (tensor<1x1x32xf32>, tensor<32xf32>) -> tensor<1x1x32xf32>
  %y = hg.linear %n, %w {transpose_weight = false} : (tensor<1x1x32xf32>, tensor<32x16xf32>) -> tensor<1x1x16xf32>
  %m = hg.rms_norm %x {epsilon = 1.0e-6 : f64} : (tensor<1x1x32xf32>) -> tensor<1x1x32xf32>
  %z = hg.linear %m, %w {transpose_weight = false} : (tensor<1x1x32xf32>, tensor<32x16xf32>) -> tensor<1x1x16xf32>
  return %y, %z : tensor<1x1x16xf32>, tensor<1x1x16xf32>
}

// -----

// Left alone: a norm with a use that is not a linear's input (GPT-J's
// parallel residual reads it too), a norm used as a linear's residual, a
// norm over more than the last dim, a norm whose weight has another
// element type than its input, and everything outside @decode.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: hg.layer_norm
// CHECK-NOT: norm_weight
// CHECK: return
func.func @kept(%x: tensor<2x4x8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>)
    attributes {hg.generation = "decode"} {
  %n = hg.layer_norm %x {epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %y = hg.linear %n, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %s = hg.add %n, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x8xf32>
  %r = hg.layer_norm %x {epsilon = 1.0e-5 : f64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %z = hg.linear %x, %w residual %r : (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %a = hg.layer_norm %x {epsilon = 1.0e-5 : f64, axis = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %u = hg.linear %a, %w : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  return %s, %z, %u, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @prefill
// CHECK: hg.layer_norm
// CHECK: hg.linear
// CHECK-NOT: norm_weight
func.func @prefill(%x: tensor<2x64xf32>, %g: tensor<64xf32>, %w: tensor<64x64xf32>)
    -> tensor<2x64xf32> attributes {hg.generation = "prefill"} {
  %n = hg.layer_norm %x weight %g {epsilon = 1.0e-5 : f64} : (tensor<2x64xf32>, tensor<64xf32>) -> tensor<2x64xf32>
  %y = hg.linear %n, %w : (tensor<2x64xf32>, tensor<64x64xf32>) -> tensor<2x64xf32>
  return %y : tensor<2x64xf32>
}

// -----

// CHECK-LABEL: func.func @mixed
// CHECK: hg.rms_norm
// CHECK-NOT: norm_weight
func.func @mixed(%x: tensor<2x64xbf16>, %g: tensor<64xf16>, %w: tensor<64x64xbf16>)
    -> tensor<2x64xbf16> attributes {hg.generation = "decode"} {
  %n = hg.rms_norm %x weight %g {epsilon = 1.0e-6 : f64} : (tensor<2x64xbf16>, tensor<64xf16>) -> tensor<2x64xbf16>
  %y = hg.linear %n, %w : (tensor<2x64xbf16>, tensor<64x64xbf16>) -> tensor<2x64xbf16>
  return %y : tensor<2x64xbf16>
}
