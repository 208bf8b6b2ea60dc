// hg-sink-slices: a slice of rows moves above the row-wise ops that make
// them (prefill's last position before the LM head and the final norm).
// RUN: hybridc-opt --hg-sink-slices --split-input-file %s | FileCheck %s

// The last position of lm_head(layer_norm(h)), h the last layer's output
// with its residual: only that position is normalised and projected, and
// the slice reaches the layer's input and its residual.
// CHECK-LABEL: func.func @last_position
// CHECK-SAME: (%[[H:[^:]+]]: {{.+}}, %[[R:[^:]+]]: {{.+}}, %[[W:[^:]+]]: {{.+}}, %[[G:[^:]+]]: {{.+}}, %[[E:[^:]+]]: {{.+}})
// CHECK-DAG: %[[HS:.+]] = hg.slice %[[H]] {axes = array<i64: 1>, {{.+}}starts = array<i64: -1>{{.+}} : tensor<?x?x64xf32> -> tensor<?x1x64xf32>
// CHECK-DAG: %[[RS:.+]] = hg.slice %[[R]] {axes = array<i64: 1>, {{.+}} : tensor<?x?x32xf32> -> tensor<?x1x32xf32>
// CHECK: %[[X:.+]] = hg.linear %[[HS]], %[[W]] residual %[[RS]] {activation = "relu"} : {{.+}} -> tensor<?x1x32xf32>
// CHECK: %[[N:.+]] = hg.layer_norm %[[X]] weight %[[G]] {{.+}} -> tensor<?x1x32xf32>
// CHECK: %[[L:.+]] = hg.linear %[[N]], %[[E]] : {{.+}} -> tensor<?x1x100xf32>
// CHECK: return %[[L]]
func.func @last_position(%h: tensor<?x?x64xf32> {hg.dims = ["b", "t", 64]},
                         %r: tensor<?x?x32xf32> {hg.dims = ["b", "t", 32]},
                         %w: tensor<32x64xf32>, %g: tensor<32xf32>,
                         %e: tensor<100x32xf32>) -> tensor<?x1x100xf32> {
  %0 = hg.linear %h, %w residual %r {activation = "relu"} : (tensor<?x?x64xf32>, tensor<32x64xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %1 = hg.layer_norm %0 weight %g {epsilon = 1.0e-5 : f64} : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %2 = hg.linear %1, %e : (tensor<?x?x32xf32>, tensor<100x32xf32>) -> tensor<?x?x100xf32>
  %3 = hg.slice %2 {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>, steps = array<i64: 1>} : tensor<?x?x100xf32> -> tensor<?x1x100xf32>
  return %3 : tensor<?x1x100xf32>
}

// -----

// An RMS norm over the last axis lets a batch slice through.
// CHECK-LABEL: func.func @rms_rows
// CHECK: %[[S:.+]] = hg.slice %{{.+}} {axes = array<i64: 0>
// CHECK: hg.rms_norm %[[S]]
func.func @rms_rows(%x: tensor<4x8x16xf32>) -> tensor<2x8x16xf32> {
  %0 = hg.rms_norm %x {epsilon = 1.0e-6 : f64} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %1 = hg.slice %0 {axes = array<i64: 0>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4x8x16xf32> -> tensor<2x8x16xf32>
  return %1 : tensor<2x8x16xf32>
}

// -----

// What stays: a slice of linear's output features (the weight's rows), of
// normalised axes, and of a result used elsewhere too.
// CHECK-LABEL: func.func @kept
// CHECK: %[[L:.+]] = hg.linear
// CHECK-NEXT: hg.slice %[[L]]
// CHECK: %[[N:.+]] = hg.layer_norm %{{.+}} {axis = 1 : i64
// CHECK-NEXT: hg.slice %[[N]] {axes = array<i64: 2>
// CHECK: %[[M:.+]] = hg.layer_norm
// CHECK-NEXT: hg.slice %[[M]] {axes = array<i64: 0>
func.func @kept(%x: tensor<4x8x16xf32>, %w: tensor<32x16xf32>)
    -> (tensor<4x8x8xf32>, tensor<4x8x4xf32>, tensor<2x8x16xf32>, tensor<4x8x16xf32>) {
  %0 = hg.linear %x, %w : (tensor<4x8x16xf32>, tensor<32x16xf32>) -> tensor<4x8x32xf32>
  %1 = hg.slice %0 {axes = array<i64: 2>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4x8x32xf32> -> tensor<4x8x8xf32>
  %2 = hg.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %3 = hg.slice %2 {axes = array<i64: 2>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4x8x16xf32> -> tensor<4x8x4xf32>
  %4 = hg.layer_norm %x {epsilon = 1.0e-5 : f64} : (tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %5 = hg.slice %4 {axes = array<i64: 0>, ends = array<i64: 2>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4x8x16xf32> -> tensor<2x8x16xf32>
  return %1, %3, %5, %4 : tensor<4x8x8xf32>, tensor<4x8x4xf32>, tensor<2x8x16xf32>, tensor<4x8x16xf32>
}

// -----

// Through the logits' cast to f32 (a bf16 model), then the LM head.
// CHECK-LABEL: func.func @cast_logits
// CHECK: %[[S:.+]] = hg.slice %{{.+}} : tensor<?x?x32xbf16> -> tensor<?x1x32xbf16>
// CHECK: %[[L:.+]] = hg.linear %[[S]]
// CHECK: hg.cast %[[L]] : tensor<?x1x100xbf16> -> tensor<?x1x100xf32>
func.func @cast_logits(%h: tensor<?x?x32xbf16> {hg.dims = ["b", "t", 32]},
                       %e: tensor<100x32xbf16>) -> tensor<?x1x100xf32> {
  %0 = hg.linear %h, %e : (tensor<?x?x32xbf16>, tensor<100x32xbf16>) -> tensor<?x?x100xbf16>
  %1 = hg.cast %0 : tensor<?x?x100xbf16> -> tensor<?x?x100xf32>
  %2 = hg.slice %1 {axes = array<i64: 1>, ends = array<i64: 9223372036854775807>, starts = array<i64: -1>, steps = array<i64: 1>} : tensor<?x?x100xf32> -> tensor<?x1x100xf32>
  return %2 : tensor<?x1x100xf32>
}
