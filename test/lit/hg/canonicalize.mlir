// Folders and canonicalisation patterns of the hg ops.
// RUN: hybridc-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @reshape_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<?x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_same_type(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = hg.reshape %x ["n", 4] : tensor<?x4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Two dynamic dims may trade sizes ([2, 6] -> [3, 4]): not an identity.
// CHECK-LABEL: func.func @reshape_two_dynamic_dims_kept
// CHECK: hg.reshape
func.func @reshape_two_dynamic_dims_kept(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %0 = hg.reshape %x ["a", "b"] : tensor<?x?xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.+]] = hg.reshape %[[X]] [4, 6] : tensor<2x3x4xf32> -> tensor<4x6xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = hg.reshape %x [24] : tensor<2x3x4xf32> -> tensor<24xf32>
  %1 = hg.reshape %0 [4, 6] : tensor<24xf32> -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_round_trip
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = hg.reshape %x [6] : tensor<2x3xf32> -> tensor<6xf32>
  %1 = hg.reshape %0 [2, 3] : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_constant
// CHECK-NEXT: %[[C:.+]] = hg.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @reshape_constant() -> tensor<2x3xi64> {
  %0 = hg.constant dense<[1, 2, 3, 4, 5, 6]> : tensor<6xi64>
  %1 = hg.reshape %0 [2, 3] : tensor<6xi64> -> tensor<2x3xi64>
  return %1 : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME: (%[[X:.+]]: tensor<2x?xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_identity(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = hg.transpose %x [0, 1] : tensor<2x?xf32> -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_of_transpose
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.+]] = hg.transpose %[[X]] [2, 1, 0] : tensor<2x3x4xf32> -> tensor<4x3x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_of_transpose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = hg.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = hg.transpose %0 [1, 0, 2] : tensor<3x4x2xf32> -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_inverse_pair
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse_pair(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = hg.transpose %x [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
  %1 = hg.transpose %0 [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_splat
// CHECK-NEXT: %[[C:.+]] = hg.constant dense<1.000000e+00> : tensor<3x2xf32>
// CHECK-NEXT: return %[[C]]
func.func @transpose_splat() -> tensor<3x2xf32> {
  %0 = hg.constant dense<1.0> : tensor<2x3xf32>
  %1 = hg.transpose %0 [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @broadcast_to_same_type(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = hg.broadcast_to %x [2, 3] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A dynamic dim may be 1 at run time and expand.
// CHECK-LABEL: func.func @broadcast_to_dynamic_kept
// CHECK: hg.broadcast_to
func.func @broadcast_to_dynamic_kept(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %0 = hg.broadcast_to %x ["batch", 3] : tensor<?x3xf32> -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_to_splat
// CHECK-NEXT: %[[C:.+]] = hg.constant dense<0> : tensor<4x3xi64>
// CHECK-NEXT: return %[[C]]
func.func @broadcast_to_splat() -> tensor<4x3xi64> {
  %0 = hg.constant dense<0> : tensor<3xi64>
  %1 = hg.broadcast_to %0 [4, 3] : tensor<3xi64> -> tensor<4x3xi64>
  return %1 : tensor<4x3xi64>
}

// -----

// CHECK-LABEL: func.func @slice_identity
// CHECK-SAME: (%[[X:.+]]: tensor<4x?xf32>)
// CHECK-NEXT: return %[[X]]
func.func @slice_identity(%x: tensor<4x?xf32>) -> tensor<4x?xf32> {
  %0 = hg.slice %x {axes = array<i64: 0, 1>, starts = array<i64: -100, 0>, ends = array<i64: 4, 9223372036854775807>, steps = array<i64: 1, 1>} : tensor<4x?xf32> -> tensor<4x?xf32>
  return %0 : tensor<4x?xf32>
}

// -----

// A reversal keeps the type but is no identity; neither is a slice of a
// dynamic dim that may end early.
// CHECK-LABEL: func.func @slice_kept
// CHECK: hg.slice
// CHECK: hg.slice
func.func @slice_kept(%x: tensor<4x?xf32>) -> (tensor<4x?xf32>, tensor<4x?xf32>) {
  %0 = hg.slice %x {axes = array<i64: 0>, starts = array<i64: -1>, ends = array<i64: -9223372036854775808>, steps = array<i64: -1>} : tensor<4x?xf32> -> tensor<4x?xf32>
  %1 = hg.slice %x {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 16>, steps = array<i64: 1>} : tensor<4x?xf32> -> tensor<4x?xf32>
  return %0, %1 : tensor<4x?xf32>, tensor<4x?xf32>
}

// -----

// CHECK-LABEL: func.func @concat_single
// CHECK-SAME: (%[[X:.+]]: tensor<2x?xf32>)
// CHECK-NEXT: return %[[X]]
func.func @concat_single(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = hg.concat %x {axis = 1 : i64} : (tensor<2x?xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @cast_same_type
// CHECK-SAME: (%[[X:.+]]: tensor<3xi64>)
// CHECK-NEXT: return %[[X]]
func.func @cast_same_type(%x: tensor<3xi64>) -> tensor<3xi64> {
  %0 = hg.cast %x : tensor<3xi64> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// Identical constants are merged; unused ones removed.
// CHECK-LABEL: func.func @constants
// CHECK-NEXT: %[[C:.+]] = hg.constant dense<2.000000e+00> : tensor<4xf32>
// CHECK-NEXT: %[[S:.+]] = hg.add %[[C]], %[[C]]
// CHECK-NEXT: return %[[S]]
func.func @constants() -> tensor<4xf32> {
  %0 = hg.constant dense<2.0> : tensor<4xf32>
  %1 = hg.constant dense<2.0> : tensor<4xf32>
  %2 = hg.constant dense<3.0> : tensor<4xf32>
  %3 = hg.add %0, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// The running sum of a broadcast splat is an iota along the summed dim
// (start c, or 0 when exclusive; step c), broadcast back.
// CHECK-LABEL: func.func @cumsum_of_ones
// CHECK: %[[IOTA:.+]] = hg.iota ["seq"] {start = 1.000000e+00 : f64, step = 1.000000e+00 : f64} : tensor<?xf32>
// CHECK: %[[LINE:.+]] = hg.reshape %[[IOTA]] [1, "seq"] : tensor<?xf32> -> tensor<1x?xf32>
// CHECK: %[[B:.+]] = hg.broadcast_to %[[LINE]] ["batch", "seq"] : tensor<1x?xf32> -> tensor<?x?xf32>
// CHECK-NOT: hg.cumsum
// CHECK: return %[[B]]
func.func @cumsum_of_ones(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"]}) -> tensor<?x?xf32> {
  %one = hg.constant dense<1.0> : tensor<f32>
  %0 = hg.broadcast_to %one ["batch", "seq"] : tensor<f32> -> tensor<?x?xf32>
  %1 = hg.cumsum %0 {axis = 1 : i64} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @cumsum_exclusive_i64
// CHECK: hg.iota [4] {start = 0.000000e+00 : f64, step = 3.000000e+00 : f64} : tensor<4xi64>
// CHECK: hg.reshape {{.+}} [4, 1] : tensor<4xi64> -> tensor<4x1xi64>
// CHECK: hg.broadcast_to {{.+}} [4, "n"] : tensor<4x1xi64> -> tensor<4x?xi64>
func.func @cumsum_exclusive_i64(%x: tensor<?xi64> {hg.dims = ["n"]}) -> tensor<4x?xi64> {
  %three = hg.constant dense<3> : tensor<1x1xi64>
  %0 = hg.broadcast_to %three [4, "n"] : tensor<1x1xi64> -> tensor<4x?xi64>
  %1 = hg.cumsum %0 {axis = 0 : i64, exclusive = true} : tensor<4x?xi64> -> tensor<4x?xi64>
  return %1 : tensor<4x?xi64>
}

// -----

// A negative axis counts from the end (axis -1 of a rank-2 tensor is 1).
// CHECK-LABEL: func.func @cumsum_negative_axis
// CHECK: hg.iota ["seq"] {start = 2.000000e+00 : f64, step = 2.000000e+00 : f64} : tensor<?xf32>
// CHECK-NOT: hg.cumsum
func.func @cumsum_negative_axis(%ids: tensor<?x?xi64> {hg.dims = ["batch", "seq"]}) -> tensor<?x?xf32> {
  %two = hg.constant dense<2.0> : tensor<f32>
  %0 = hg.broadcast_to %two ["batch", "seq"] : tensor<f32> -> tensor<?x?xf32>
  %1 = hg.cumsum %0 {axis = -1 : i64} : tensor<?x?xf32> -> tensor<?x?xf32>
  return %1 : tensor<?x?xf32>
}

// -----

// Reverse sums, fractional steps and non-splat inputs stay cumsums.
// CHECK-LABEL: func.func @cumsum_kept
// CHECK-COUNT-3: hg.cumsum
func.func @cumsum_kept(%x: tensor<?xf32> {hg.dims = ["n"]}) -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %one = hg.constant dense<1.0> : tensor<f32>
  %half = hg.constant dense<0.5> : tensor<f32>
  %0 = hg.broadcast_to %one ["n"] : tensor<f32> -> tensor<?xf32>
  %1 = hg.cumsum %0 {axis = 0 : i64, reverse = true} : tensor<?xf32> -> tensor<?xf32>
  %2 = hg.broadcast_to %half ["n"] : tensor<f32> -> tensor<?xf32>
  %3 = hg.cumsum %2 {axis = 0 : i64} : tensor<?xf32> -> tensor<?xf32>
  %4 = hg.cumsum %x {axis = 0 : i64} : tensor<?xf32> -> tensor<?xf32>
  return %1, %3, %4 : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}
