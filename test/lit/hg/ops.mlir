// Round trip of every hg op; each result type is the one the op infers.
// RUN: hybridc-opt %s | hybridc-opt | FileCheck %s

// CHECK-LABEL: func.func @constant
func.func @constant() -> (tensor<2xf32>, tensor<i64>, tensor<3xi1>) {
  // CHECK: hg.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = hg.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: hg.constant dense<7> : tensor<i64>
  %1 = hg.constant dense<7> : tensor<i64>
  // CHECK: hg.constant dense<[true, false, true]> : tensor<3xi1>
  %2 = hg.constant dense<[true, false, true]> : tensor<3xi1>
  return %0, %1, %2 : tensor<2xf32>, tensor<i64>, tensor<3xi1>
}

// CHECK-LABEL: func.func @arithmetic
// CHECK-SAME: (%[[A:.+]]: tensor<2x?x4xf32>, %[[B:.+]]: tensor<?x1xf32>, %[[I:.+]]: tensor<3xi64>)
func.func @arithmetic(%a: tensor<2x?x4xf32>, %b: tensor<?x1xf32>, %i: tensor<3xi64>) {
  // CHECK: hg.add %[[A]], %[[B]] : tensor<2x?x4xf32>, tensor<?x1xf32> -> tensor<2x?x4xf32>
  %0 = hg.add %a, %b : tensor<2x?x4xf32>, tensor<?x1xf32> -> tensor<2x?x4xf32>
  // CHECK: hg.sub %[[B]], %[[A]] : tensor<?x1xf32>, tensor<2x?x4xf32> -> tensor<2x?x4xf32>
  %1 = hg.sub %b, %a : tensor<?x1xf32>, tensor<2x?x4xf32> -> tensor<2x?x4xf32>
  // CHECK: hg.mul %[[B]], %[[B]] : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  %2 = hg.mul %b, %b : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
  // CHECK: hg.div %[[I]], %[[I]] : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  %3 = hg.div %i, %i : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  // CHECK: hg.pow %[[A]], %[[A]] : tensor<2x?x4xf32>, tensor<2x?x4xf32> -> tensor<2x?x4xf32>
  %4 = hg.pow %a, %a : tensor<2x?x4xf32>, tensor<2x?x4xf32> -> tensor<2x?x4xf32>
  // CHECK: hg.max %[[A]], %[[B]]
  %5 = hg.max %a, %b : tensor<2x?x4xf32>, tensor<?x1xf32> -> tensor<2x?x4xf32>
  // CHECK: hg.min %[[A]], %[[B]]
  %6 = hg.min %a, %b : tensor<2x?x4xf32>, tensor<?x1xf32> -> tensor<2x?x4xf32>
  // CHECK: hg.mod %[[I]], %[[I]] : tensor<3xi64>
  %7 = hg.mod %i, %i : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
  // CHECK: hg.mod %[[A]], %[[A]] {fmod = true} : tensor<2x?x4xf32>
  %8 = hg.mod %a, %a {fmod = true} : tensor<2x?x4xf32>, tensor<2x?x4xf32> -> tensor<2x?x4xf32>
  return
}

// CHECK-LABEL: func.func @predicates
func.func @predicates(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %p: tensor<4x1xi1>, %q: tensor<3xi1>) {
  // CHECK: hg.equal %{{.+}}, %{{.+}} : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  %0 = hg.equal %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  // CHECK: hg.equal %{{.+}}, %{{.+}} : tensor<4x1xi1>, tensor<3xi1> -> tensor<4x3xi1>
  %1 = hg.equal %p, %q : tensor<4x1xi1>, tensor<3xi1> -> tensor<4x3xi1>
  // CHECK: hg.less {{.+}} -> tensor<4x3xi1>
  %2 = hg.less %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  // CHECK: hg.less_equal {{.+}} -> tensor<4x3xi1>
  %3 = hg.less_equal %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  // CHECK: hg.greater {{.+}} -> tensor<4x3xi1>
  %4 = hg.greater %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  // CHECK: hg.greater_equal {{.+}} -> tensor<4x3xi1>
  %5 = hg.greater_equal %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xi1>
  // CHECK: hg.and {{.+}} : tensor<4x1xi1>, tensor<3xi1> -> tensor<4x3xi1>
  %6 = hg.and %p, %q : tensor<4x1xi1>, tensor<3xi1> -> tensor<4x3xi1>
  // CHECK: hg.or {{.+}} -> tensor<4x3xi1>
  %7 = hg.or %p, %q : tensor<4x1xi1>, tensor<3xi1> -> tensor<4x3xi1>
  // CHECK: hg.xor {{.+}} -> tensor<4x3xi1>
  %8 = hg.xor %p, %q : tensor<4x1xi1>, tensor<3xi1> -> tensor<4x3xi1>
  return
}

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x?xf32>, %i: tensor<5xi64>, %p: tensor<5xi1>) {
  // CHECK: hg.neg %{{.+}} : tensor<2x?xf32> -> tensor<2x?xf32>
  %0 = hg.neg %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.abs %{{.+}} : tensor<5xi64> -> tensor<5xi64>
  %1 = hg.abs %i : tensor<5xi64> -> tensor<5xi64>
  // CHECK: hg.sign
  %2 = hg.sign %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.exp
  %3 = hg.exp %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.log
  %4 = hg.log %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.sqrt
  %5 = hg.sqrt %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.rsqrt
  %6 = hg.rsqrt %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.reciprocal
  %7 = hg.reciprocal %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.tanh
  %8 = hg.tanh %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.sigmoid
  %9 = hg.sigmoid %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.relu %{{.+}} : tensor<5xi64> -> tensor<5xi64>
  %10 = hg.relu %i : tensor<5xi64> -> tensor<5xi64>
  // CHECK: hg.silu
  %11 = hg.silu %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.gelu %{{.+}} : tensor<2x?xf32>
  %12 = hg.gelu %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.gelu %{{.+}} {approximate = "tanh"} : tensor<2x?xf32>
  %13 = hg.gelu %x {approximate = "tanh"} : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.activation_grad %{{.+}}, %{{.+}} {activation = "gelu_tanh"} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  %ag = hg.activation_grad %x, %13 {activation = "gelu_tanh"} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.sin
  %14 = hg.sin %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.cos
  %15 = hg.cos %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.erf
  %16 = hg.erf %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.floor
  %17 = hg.floor %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.ceil
  %18 = hg.ceil %x : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.not %{{.+}} : tensor<5xi1> -> tensor<5xi1>
  %19 = hg.not %p : tensor<5xi1> -> tensor<5xi1>
  // CHECK: hg.is_nan %{{.+}} : tensor<2x?xf32> -> tensor<2x?xi1>
  %20 = hg.is_nan %x : tensor<2x?xf32> -> tensor<2x?xi1>
  // CHECK: hg.is_inf %{{.+}} : tensor<2x?xf32> -> tensor<2x?xi1>
  %21 = hg.is_inf %x : tensor<2x?xf32> -> tensor<2x?xi1>
  // CHECK: hg.clip %{{.+}} {max = 6.000000e+00 : f64, min = 0.000000e+00 : f64} : tensor<2x?xf32> -> tensor<2x?xf32>
  %22 = hg.clip %x {min = 0.0 : f64, max = 6.0 : f64} : tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.clip %{{.+}} {min = 0.000000e+00 : f64} : tensor<5xi64>
  %23 = hg.clip %i {min = 0.0 : f64} : tensor<5xi64> -> tensor<5xi64>
  return
}

// CHECK-LABEL: func.func @select_cast
func.func @select_cast(%c: tensor<1x?xi1>, %a: tensor<3x1xf32>, %b: tensor<f32>, %i: tensor<3x?xi64>) {
  // CHECK: hg.select %{{.+}}, %{{.+}}, %{{.+}} : tensor<1x?xi1>, tensor<3x1xf32>, tensor<f32> -> tensor<3x?xf32>
  %0 = hg.select %c, %a, %b : tensor<1x?xi1>, tensor<3x1xf32>, tensor<f32> -> tensor<3x?xf32>
  // CHECK: hg.cast %{{.+}} : tensor<3x?xi64> -> tensor<3x?xf32>
  %1 = hg.cast %i : tensor<3x?xi64> -> tensor<3x?xf32>
  // CHECK: hg.cast %{{.+}} : tensor<1x?xi1> -> tensor<1x?xi64>
  %2 = hg.cast %c : tensor<1x?xi1> -> tensor<1x?xi64>
  return
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%x: tensor<2x?x64xf32>, %y: tensor<2x3x64xf32>, %v: tensor<1x64xf32>) {
  // CHECK: hg.reshape %{{.+}} ["batch*seq", 64] : tensor<2x?x64xf32> -> tensor<?x64xf32>
  %0 = hg.reshape %x ["batch*seq", 64] : tensor<2x?x64xf32> -> tensor<?x64xf32>
  // CHECK: hg.reshape %{{.+}} [6, "64"] : tensor<2x3x64xf32> -> tensor<6x64xf32>
  %1 = hg.reshape %y [6, "64"] : tensor<2x3x64xf32> -> tensor<6x64xf32>
  // CHECK: hg.broadcast_to %{{.+}} ["batch", 5, 64] : tensor<1x64xf32> -> tensor<?x5x64xf32>
  %2 = hg.broadcast_to %v ["batch", 5, 64] : tensor<1x64xf32> -> tensor<?x5x64xf32>
  // CHECK: hg.transpose %{{.+}} [2, 0, 1] : tensor<2x?x64xf32> -> tensor<64x2x?xf32>
  %3 = hg.transpose %x [2, 0, 1] : tensor<2x?x64xf32> -> tensor<64x2x?xf32>
  // CHECK: hg.slice %{{.+}} {axes = array<i64: 2, 0>, ends = array<i64: 9223372036854775807, -1>, starts = array<i64: -10, 0>, steps = array<i64: 3, 1>} : tensor<2x3x64xf32> -> tensor<1x3x4xf32>
  %4 = hg.slice %y {axes = array<i64: 2, 0>, starts = array<i64: -10, 0>, ends = array<i64: 9223372036854775807, -1>, steps = array<i64: 3, 1>} : tensor<2x3x64xf32> -> tensor<1x3x4xf32>
  // Reversal with a negative step; the dynamic dim stays dynamic.
  // CHECK: hg.slice {{.+}} : tensor<2x?x64xf32> -> tensor<2x?x64xf32>
  %5 = hg.slice %x {axes = array<i64: 1, 2>, starts = array<i64: -1, -1>, ends = array<i64: -9223372036854775808, -9223372036854775808>, steps = array<i64: -1, -1>} : tensor<2x?x64xf32> -> tensor<2x?x64xf32>
  // CHECK: hg.concat %{{.+}}, %{{.+}} {axis = 1 : i64} : (tensor<2x3x64xf32>, tensor<2x3x64xf32>) -> tensor<2x6x64xf32>
  %6 = hg.concat %y, %y {axis = 1 : i64} : (tensor<2x3x64xf32>, tensor<2x3x64xf32>) -> tensor<2x6x64xf32>
  // CHECK: hg.concat %{{.+}}, %{{.+}} {axis = -2 : i64} : (tensor<2x?x64xf32>, tensor<2x3x64xf32>) -> tensor<2x?x64xf32>
  %7 = hg.concat %x, %y {axis = -2 : i64} : (tensor<2x?x64xf32>, tensor<2x3x64xf32>) -> tensor<2x?x64xf32>
  return
}

// CHECK-LABEL: func.func @indexing
func.func @indexing(%d: tensor<5x6x7xf32>, %i: tensor<2x?xi64>, %nd: tensor<5x4x2xi64>) {
  // CHECK: hg.gather %{{.+}}, %{{.+}} {axis = 1 : i64} : tensor<5x6x7xf32>, tensor<2x?xi64> -> tensor<5x2x?x7xf32>
  %0 = hg.gather %d, %i {axis = 1 : i64} : tensor<5x6x7xf32>, tensor<2x?xi64> -> tensor<5x2x?x7xf32>
  // CHECK: hg.gather_nd %{{.+}}, %{{.+}} {batch_dims = 1 : i64} : tensor<5x6x7xf32>, tensor<5x4x2xi64> -> tensor<5x4xf32>
  %1 = hg.gather_nd %d, %nd {batch_dims = 1 : i64} : tensor<5x6x7xf32>, tensor<5x4x2xi64> -> tensor<5x4xf32>
  // CHECK: hg.gather_nd %{{.+}}, %{{.+}} : tensor<5x6x7xf32>, tensor<5x4x2xi64> -> tensor<5x4x7xf32>
  %2 = hg.gather_nd %d, %nd : tensor<5x6x7xf32>, tensor<5x4x2xi64> -> tensor<5x4x7xf32>
  // CHECK: hg.iota ["seq"] {start = 0.000000e+00 : f64, step = 1.000000e+00 : f64} : tensor<?xi64>
  %3 = hg.iota ["seq"] {start = 0.0 : f64, step = 1.0 : f64} : tensor<?xi64>
  // CHECK: hg.iota [4] {start = 5.000000e-01 : f64, step = 2.500000e-01 : f64} : tensor<4xf32>
  %4 = hg.iota [4] {start = 0.5 : f64, step = 0.25 : f64} : tensor<4xf32>
  // CHECK: hg.cumsum %{{.+}} {axis = -1 : i64, exclusive = true} : tensor<2x?xi64> -> tensor<2x?xi64>
  %5 = hg.cumsum %i {axis = -1 : i64, exclusive = true} : tensor<2x?xi64> -> tensor<2x?xi64>
  // CHECK: hg.trilu %{{.+}} {k = 1 : i64, upper = true} : tensor<5x6x7xf32> -> tensor<5x6x7xf32>
  %6 = hg.trilu %d {upper = true, k = 1 : i64} : tensor<5x6x7xf32> -> tensor<5x6x7xf32>
  return
}

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x?x8xf32>, %i: tensor<3x4xi64>) {
  // CHECK: hg.reduce_sum %{{.+}} [-1] : tensor<2x?x8xf32> -> tensor<2x?x1xf32>
  %0 = hg.reduce_sum %x [-1] : tensor<2x?x8xf32> -> tensor<2x?x1xf32>
  // CHECK: hg.reduce_mean %{{.+}} [0, 2] {keepdims = false} : tensor<2x?x8xf32> -> tensor<?xf32>
  %1 = hg.reduce_mean %x [0, 2] {keepdims = false} : tensor<2x?x8xf32> -> tensor<?xf32>
  // CHECK: hg.reduce_max %{{.+}} [] {keepdims = false} : tensor<2x?x8xf32> -> tensor<f32>
  %2 = hg.reduce_max %x [] {keepdims = false} : tensor<2x?x8xf32> -> tensor<f32>
  // CHECK: hg.reduce_min %{{.+}} [] : tensor<3x4xi64> -> tensor<1x1xi64>
  %3 = hg.reduce_min %i [] : tensor<3x4xi64> -> tensor<1x1xi64>
  // CHECK: hg.reduce_prod %{{.+}} [1] : tensor<3x4xi64> -> tensor<3x1xi64>
  %4 = hg.reduce_prod %i [1] : tensor<3x4xi64> -> tensor<3x1xi64>
  // CHECK: hg.softmax %{{.+}} {axis = -1 : i64} : tensor<2x?x8xf32> -> tensor<2x?x8xf32>
  %5 = hg.softmax %x {axis = -1 : i64} : tensor<2x?x8xf32> -> tensor<2x?x8xf32>
  // CHECK: hg.log_softmax %{{.+}} {axis = 2 : i64} : tensor<2x?x8xf32> -> tensor<2x?x8xf32>
  %6 = hg.log_softmax %x {axis = 2 : i64} : tensor<2x?x8xf32> -> tensor<2x?x8xf32>
  return
}

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:.+]]: tensor<2x?x8xf32>, %[[W:.+]]: tensor<8xf32>, %[[B:.+]]: tensor<8xf32>, %[[W2:.+]]: tensor<?x8xf32>)
func.func @norms(%x: tensor<2x?x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %w2: tensor<?x8xf32>) {
  // CHECK: hg.layer_norm %[[X]] weight %[[W]] bias %[[B]] {epsilon = 1.000000e-05 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  %0 = hg.layer_norm %x weight %w bias %b {epsilon = 1.0e-5 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  // CHECK: hg.layer_norm %[[X]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  %1 = hg.layer_norm %x {epsilon = 1.0e-5 : f64, axis = 1 : i64} : (tensor<2x?x8xf32>) -> tensor<2x?x8xf32>
  // CHECK: hg.layer_norm %[[X]] bias %[[B]] {epsilon = 1.000000e-05 : f64}
  %2 = hg.layer_norm %x bias %b {epsilon = 1.0e-5 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  // CHECK: hg.rms_norm %[[X]] weight %[[W]] {epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  %3 = hg.rms_norm %x weight %w {epsilon = 1.0e-6 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>) -> tensor<2x?x8xf32>
  // CHECK: hg.rms_norm %[[X]] weight %[[W2]] {axis = -2 : i64, epsilon = 9.9999999999999995E-7 : f64} : (tensor<2x?x8xf32>, tensor<?x8xf32>) -> tensor<2x?x8xf32>
  %4 = hg.rms_norm %x weight %w2 {epsilon = 1.0e-6 : f64, axis = -2 : i64} : (tensor<2x?x8xf32>, tensor<?x8xf32>) -> tensor<2x?x8xf32>
  // CHECK: hg.layer_norm_grad %[[X]] weight %[[W]] grad %[[X]] {epsilon = 1.000000e-05 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %5:3 = hg.layer_norm_grad %x weight %w grad %x {epsilon = 1.0e-5 : f64} : (tensor<2x?x8xf32>, tensor<8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: hg.layer_norm_grad %[[X]] grad %[[X]] {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
  %6:3 = hg.layer_norm_grad %x grad %x {epsilon = 1.0e-5 : f64, axis = 1 : i64} : (tensor<2x?x8xf32>, tensor<2x?x8xf32>) -> (tensor<2x?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>)
  return
}

// CHECK-LABEL: func.func @matmul
func.func @matmul(%a: tensor<2x1x?x4xf32>, %b: tensor<3x4x5xf32>, %v: tensor<4xf32>, %m: tensor<4x5xf32>) {
  // CHECK: hg.matmul %{{.+}}, %{{.+}} : tensor<2x1x?x4xf32>, tensor<3x4x5xf32> -> tensor<2x3x?x5xf32>
  %0 = hg.matmul %a, %b : tensor<2x1x?x4xf32>, tensor<3x4x5xf32> -> tensor<2x3x?x5xf32>
  // CHECK: hg.matmul %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<3x4x5xf32> -> tensor<3x5xf32>
  %1 = hg.matmul %v, %b : tensor<4xf32>, tensor<3x4x5xf32> -> tensor<3x5xf32>
  // CHECK: hg.matmul %{{.+}}, %{{.+}} : tensor<2x1x?x4xf32>, tensor<4xf32> -> tensor<2x1x?xf32>
  %2 = hg.matmul %a, %v : tensor<2x1x?x4xf32>, tensor<4xf32> -> tensor<2x1x?xf32>
  // CHECK: hg.matmul %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  %3 = hg.matmul %v, %v : tensor<4xf32>, tensor<4xf32> -> tensor<f32>
  // CHECK: hg.matmul %{{.+}}, %{{.+}} : tensor<4xf32>, tensor<4x5xf32> -> tensor<5xf32>
  %4 = hg.matmul %v, %m : tensor<4xf32>, tensor<4x5xf32> -> tensor<5xf32>
  return
}

// CHECK-LABEL: func.func @blocks
func.func @blocks(%x: tensor<2x?x64xf32>, %w: tensor<192x64xf32>, %wt: tensor<64x192xf32>, %bias: tensor<192xf32>,
                  %table: tensor<1000x64xf32>, %ids: tensor<2x?xi64>) {
  // CHECK: hg.linear %{{.+}}, %{{.+}} bias %{{.+}} : (tensor<2x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> tensor<2x?x192xf32>
  %0 = hg.linear %x, %w bias %bias : (tensor<2x?x64xf32>, tensor<192x64xf32>, tensor<192xf32>) -> tensor<2x?x192xf32>
  // CHECK: hg.linear %{{.+}}, %{{.+}} {transpose_weight = false} : (tensor<2x?x64xf32>, tensor<64x192xf32>) -> tensor<2x?x192xf32>
  %1 = hg.linear %x, %wt {transpose_weight = false} : (tensor<2x?x64xf32>, tensor<64x192xf32>) -> tensor<2x?x192xf32>
  // CHECK: hg.embedding %{{.+}}, %{{.+}} : tensor<1000x64xf32>, tensor<2x?xi64> -> tensor<2x?x64xf32>
  %2 = hg.embedding %table, %ids : tensor<1000x64xf32>, tensor<2x?xi64> -> tensor<2x?x64xf32>
  return
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x64xf32>,
                     %cos: tensor<1x?x32xf32>, %sin: tensor<1x?x32xf32>,
                     %mask: tensor<?x1x1x?xf32>, %slopes: tensor<8xf32>,
                     %keys: tensor<?x?xi64>) {
  // CHECK: hg.rotary %{{.+}}, %{{.+}}, %{{.+}} : (tensor<?x8x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<?x8x?x64xf32>
  %0 = hg.rotary %q, %cos, %sin : (tensor<?x8x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<?x8x?x64xf32>
  // CHECK: hg.rotary %{{.+}}, %{{.+}}, %{{.+}} {interleaved = true}
  %1 = hg.rotary %k, %cos, %sin {interleaved = true} : (tensor<?x2x?x64xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>) -> tensor<?x2x?x64xf32>
  // CHECK: hg.attention %{{.+}}, %{{.+}}, %{{.+}} {causal = true, scale = 1.250000e-01 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  %2 = hg.attention %0, %1, %v {scale = 0.125 : f64, causal = true} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>) -> tensor<?x8x?x64xf32>
  // CHECK: hg.attention %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} alibi %{{.+}} {scale = 1.250000e-01 : f64, sliding_window = 4096 : i64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x1x1x?xf32>, tensor<8xf32>) -> tensor<?x8x?x64xf32>
  %3 = hg.attention %q, %k, %v mask %mask alibi %slopes {scale = 0.125 : f64, sliding_window = 4096 : i64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x1x1x?xf32>, tensor<8xf32>) -> tensor<?x8x?x64xf32>
  // CHECK: hg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %{{.+}} key_mask %{{.+}} {causal = true, scale = 1.250000e-01 : f64, sliding_window = 16 : i64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x1x1x?xf32>, tensor<?x?xi64>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  %4:3 = hg.attention_grad %q, %k, %v, %3 mask %mask key_mask %keys {scale = 0.125 : f64, causal = true, sliding_window = 16 : i64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x8x?x64xf32>, tensor<?x1x1x?xf32>, tensor<?x?xi64>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  // CHECK: hg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} alibi %{{.+}} key_mask %{{.+}} {causal = true, scale = 1.250000e-01 : f64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x8x?x64xf32>, tensor<8xf32>, tensor<?x?xi64>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  %5:3 = hg.attention_grad %q, %k, %v, %3 alibi %slopes key_mask %keys {scale = 0.125 : f64, causal = true} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x8x?x64xf32>, tensor<8xf32>, tensor<?x?xi64>) -> (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x64xf32>)
  return
}

// A declared result may be more static than the inferred one.
// CHECK-LABEL: func.func @refined_result
func.func @refined_result(%x: tensor<?x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // CHECK: hg.add %{{.+}}, %{{.+}} : tensor<?x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  %0 = hg.add %x, %y : tensor<?x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32>
  // CHECK: hg.reshape %{{.+}} ["n", 2] : tensor<3x4xf32> -> tensor<6x2xf32>
  %1 = hg.reshape %0 ["n", 2] : tensor<3x4xf32> -> tensor<6x2xf32>
  %2 = hg.reshape %1 [3, 4] : tensor<6x2xf32> -> tensor<3x4xf32>
  return %2 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @adamw_update
// CHECK-SAME: (%[[P:.+]]: tensor<3x5xf32>, %[[G:.+]]: tensor<3x5xbf16>, %[[H:.+]]: tensor<3x5xf16>, %[[S:.+]]: tensor<1xf32>)
func.func @adamw_update(%p: tensor<3x5xf32>, %g: tensor<3x5xbf16>, %h: tensor<3x5xf16>, %s: tensor<1xf32>) {
  // CHECK: hg.adamw_update %[[P]], %[[P]] moments %[[P]], %[[P]] betas %[[S]], %[[S]] eps %[[S]] step_size %[[S]] bias_correction2_sqrt %[[S]] decay_factor %[[S]] : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>)
  %0:3 = hg.adamw_update %p, %p moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>)
  // A half-precision gradient, and the working parameter as a fourth result.
  // CHECK: hg.adamw_update %[[P]], %[[G]] moments {{.+}} decay_factor %[[S]] working bf16 : (tensor<3x5xf32>, tensor<3x5xbf16>, {{.+}}) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xbf16>)
  %1:4 = hg.adamw_update %p, %g moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working bf16 : (tensor<3x5xf32>, tensor<3x5xbf16>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xbf16>)
  // CHECK: hg.adamw_update %[[P]], %[[H]] moments {{.+}} decay_factor %[[S]] : (tensor<3x5xf32>, tensor<3x5xf16>, {{.+}}) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>)
  %2:3 = hg.adamw_update %p, %h moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s : (tensor<3x5xf32>, tensor<3x5xf16>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>)
  // CHECK: hg.adamw_update %[[P]], %[[P]] moments {{.+}} decay_factor %[[S]] working f16 : ({{.+}}) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf16>)
  %3:4 = hg.adamw_update %p, %p moments %p, %p betas %s, %s eps %s step_size %s bias_correction2_sqrt %s decay_factor %s working f16 : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf16>)
  return
}

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x?x8xbf16>, %[[L:[^:]+]]: tensor<2x?xi64>, %[[G:[^:]+]]: tensor<2x?xf32>)
func.func @cross_entropy(%x: tensor<2x?x8xbf16>, %l: tensor<2x?xi64>, %g: tensor<2x?xf32>) {
  // CHECK: hg.label_log_probs %[[X]], %[[L]] : tensor<2x?x8xbf16>, tensor<2x?xi64> -> tensor<2x?xf32>
  %0 = hg.label_log_probs %x, %l : tensor<2x?x8xbf16>, tensor<2x?xi64> -> tensor<2x?xf32>
  // CHECK: hg.label_log_probs_grad %[[X]], %[[L]], %[[G]] : tensor<2x?x8xbf16>, tensor<2x?xi64>, tensor<2x?xf32> -> tensor<2x?x8xbf16>
  %1 = hg.label_log_probs_grad %x, %l, %g : tensor<2x?x8xbf16>, tensor<2x?xi64>, tensor<2x?xf32> -> tensor<2x?x8xbf16>
  // CHECK: hg.embedding_grad %[[L]], %[[X]] {rows = 5 : i64} : tensor<2x?xi64>, tensor<2x?x8xbf16> -> tensor<5x8xbf16>
  %2 = hg.embedding_grad %l, %x {rows = 5 : i64} : tensor<2x?xi64>, tensor<2x?x8xbf16> -> tensor<5x8xbf16>
  return
}

// The clip bounds' defaults (0.2) are not printed.
// CHECK-LABEL: func.func @clipped_surrogate
// CHECK-SAME: (%[[P:[^:]+]]: tensor<2x?xf32>, %[[Q:[^:]+]]: tensor<?x5xf32>)
func.func @clipped_surrogate(%p: tensor<2x?xf32>, %q: tensor<?x5xf32>) {
  // CHECK: hg.clipped_surrogate %[[P]], %[[Q]], %[[P]], %[[P]] : tensor<2x?xf32>, tensor<?x5xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x5xf32>
  %0 = hg.clipped_surrogate %p, %q, %p, %p : tensor<2x?xf32>, tensor<?x5xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x5xf32>
  // CHECK: hg.clipped_surrogate_grad %[[P]], %[[P]], %[[P]], %[[P]], %[[P]] {clip_high = 2.800000e-01 : f64} : {{.+}} -> tensor<2x?xf32>
  %1 = hg.clipped_surrogate_grad %p, %p, %p, %p, %p {clip_low = 0.2 : f64, clip_high = 0.28 : f64} : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  return
}

// The RLHF ops: PPO's experience (rewards, GAE with its [B, L - start]
// results, whitening), the critic's clipped value loss, GRPO's group
// advantages, k3 KL and masked means; defaults are not printed.
// CHECK-LABEL: func.func @rlhf
// CHECK-SAME: (%[[LP:[^:]+]]: tensor<2x?xf32>, %[[S:[^:]+]]: tensor<2xf32>, %[[K:[^:]+]]: tensor<1xf32>, %[[G:[^:]+]]: tensor<f32>)
func.func @rlhf(%lp: tensor<2x?xf32>, %s: tensor<2xf32>, %kl: tensor<1xf32>, %g: tensor<f32>) {
  // CHECK: %[[RW:[^,]+]], %[[OV:.+]] = hg.ppo_rewards %[[LP]], %[[LP]], %[[S]], %[[LP]], %[[LP]], %[[K]] {start = 7 : i64} : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<1xf32> -> tensor<2x?xf32>, tensor<2x?xf32>
  %r:2 = hg.ppo_rewards %lp, %lp, %s, %lp, %lp, %kl {start = 7 : i64, clip_reward_value = 5.0 : f64} : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<1xf32> -> tensor<2x?xf32>, tensor<2x?xf32>
  // CHECK: hg.gae %[[RW]], %[[OV]] {lam = 9.000000e-01 : f64, start = 7 : i64} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>, tensor<2x?xf32>
  %a:2 = hg.gae %r#0, %r#1 {start = 7 : i64, lam = 0.9 : f64} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>, tensor<2x?xf32>
  // CHECK: hg.masked_whiten %{{.+}}, %[[LP]] {shift_mean = false} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  %w = hg.masked_whiten %a#0, %lp {shift_mean = false} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.clipped_value_loss %[[LP]], %[[LP]], %[[LP]], %[[LP]] : {{.+}} -> tensor<2x?xf32>
  %v = hg.clipped_value_loss %lp, %lp, %lp, %lp {clip = 0.2 : f64} : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.clipped_value_loss_grad %[[LP]], %[[LP]], %[[LP]], %[[LP]], %[[LP]] {clip = 5.000000e-01 : f64} : {{.+}} -> tensor<2x?xf32>
  %dv = hg.clipped_value_loss_grad %lp, %lp, %lp, %lp, %lp {clip = 0.5 : f64} : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.group_advantages %[[S]] {group_size = 2 : i64} : tensor<2xf32> -> tensor<2xf32>
  %ga = hg.group_advantages %s {group_size = 2 : i64} : tensor<2xf32> -> tensor<2xf32>
  // CHECK: hg.kl_k3 %[[LP]], %[[LP]] : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  %k = hg.kl_k3 %lp, %lp : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.kl_k3_grad %[[LP]], %[[LP]], %[[LP]] : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  %dk = hg.kl_k3_grad %lp, %lp, %lp : tensor<2x?xf32>, tensor<2x?xf32>, tensor<2x?xf32> -> tensor<2x?xf32>
  // CHECK: hg.masked_mean %[[LP]], %[[LP]] {per_sequence = true} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<f32>
  %m = hg.masked_mean %lp, %lp {per_sequence = true} : tensor<2x?xf32>, tensor<2x?xf32> -> tensor<f32>
  // CHECK: hg.masked_mean_grad %[[LP]], %[[G]] : tensor<2x?xf32>, tensor<f32> -> tensor<2x?xf32>
  %dm = hg.masked_mean_grad %lp, %g : tensor<2x?xf32>, tensor<f32> -> tensor<2x?xf32>
  return
}

// The reward model's ranking loss: values and i64 ids and mask [2B, T] ->
// loss [], end scores [2B], accuracy []; its backward takes the loss's and
// the end scores' gradients.
// CHECK-LABEL: func.func @ranking
// CHECK-SAME: (%[[V:[^:]+]]: tensor<4x?xf32>, %[[IDS:[^:]+]]: tensor<4x?xi64>, %[[G:[^:]+]]: tensor<f32>, %[[GS:[^:]+]]: tensor<4xf32>)
func.func @ranking(%v: tensor<4x?xf32>, %ids: tensor<4x?xi64>, %g: tensor<f32>, %gs: tensor<4xf32>) {
  // CHECK: hg.pairwise_ranking_loss %[[V]], %[[IDS]], %[[IDS]] : tensor<4x?xf32>, tensor<4x?xi64>, tensor<4x?xi64> -> tensor<f32>, tensor<4xf32>, tensor<f32>
  %l:3 = hg.pairwise_ranking_loss %v, %ids, %ids : tensor<4x?xf32>, tensor<4x?xi64>, tensor<4x?xi64> -> tensor<f32>, tensor<4xf32>, tensor<f32>
  // CHECK: hg.pairwise_ranking_loss_grad %[[V]], %[[IDS]], %[[IDS]], %[[G]], %[[GS]] : tensor<4x?xf32>, tensor<4x?xi64>, tensor<4x?xi64>, tensor<f32>, tensor<4xf32> -> tensor<4x?xf32>
  %d = hg.pairwise_ranking_loss_grad %v, %ids, %ids, %g, %gs : tensor<4x?xf32>, tensor<4x?xi64>, tensor<4x?xi64>, tensor<f32>, tensor<4xf32> -> tensor<4x?xf32>
  return
}

// GAE's results drop the first `start` positions.
// CHECK-LABEL: func.func @gae_static
func.func @gae_static(%r: tensor<2x15xf32>) -> tensor<2x8xf32> {
  // CHECK: hg.gae {{.+}} -> tensor<2x8xf32>, tensor<2x8xf32>
  %a:2 = hg.gae %r, %r {start = 7 : i64} : tensor<2x15xf32>, tensor<2x15xf32> -> tensor<2x8xf32>, tensor<2x8xf32>
  return %a#0 : tensor<2x8xf32>
}
