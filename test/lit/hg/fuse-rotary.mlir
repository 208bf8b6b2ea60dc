// hg-fuse-rotary: x * cos + rotate_half(x) * sin -> hg.rotary.
// RUN: hybridc-opt --hg-fuse-rotary --split-input-file %s | FileCheck %s
// The same cases in bf16 (constants as bf16 rounds them) fuse alike:
// RUN: sed -e 's/f32/bf16/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-rotary --split-input-file %t.bf16.mlir | FileCheck %t.bf16.mlir

// Llama as exported: cos/sin [1, T, 16] unsqueezed to [1, 1, T, 16]; the
// rotary reads the [1, T, 16] tables.
// CHECK-LABEL: func.func @llama
// CHECK-SAME: (%[[X:.+]]: tensor<?x4x?x16xf32> {{.*}}, %[[COS:.+]]: tensor<1x?x16xf32> {{.*}}, %[[SIN:.+]]: tensor<1x?x16xf32>
// CHECK: %[[Y:.+]] = hg.rotary %[[X]], %[[COS]], %[[SIN]] :
// CHECK-NEXT: return %[[Y]]
func.func @llama(%x: tensor<?x4x?x16xf32> {hg.dims = ["batch", 4, "seq", 16]},
                 %cos3: tensor<1x?x16xf32> {hg.dims = [1, "seq", 16]},
                 %sin3: tensor<1x?x16xf32> {hg.dims = [1, "seq", 16]}) -> tensor<?x4x?x16xf32> {
  %cos = hg.reshape %cos3 [1, 1, "seq", 16] : tensor<1x?x16xf32> -> tensor<1x1x?x16xf32>
  %sin = hg.reshape %sin3 [1, 1, "seq", 16] : tensor<1x?x16xf32> -> tensor<1x1x?x16xf32>
  %0 = hg.mul %x, %cos : tensor<?x4x?x16xf32>, tensor<1x1x?x16xf32> -> tensor<?x4x?x16xf32>
  %x1 = hg.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<?x4x?x16xf32> -> tensor<?x4x?x8xf32>
  %x2 = hg.slice %x {axes = array<i64: 3>, ends = array<i64: 9223372036854775807>, starts = array<i64: 8>, steps = array<i64: 1>} : tensor<?x4x?x16xf32> -> tensor<?x4x?x8xf32>
  %n = hg.neg %x2 : tensor<?x4x?x8xf32> -> tensor<?x4x?x8xf32>
  %r = hg.concat %n, %x1 {axis = 3 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x?x8xf32>) -> tensor<?x4x?x16xf32>
  %1 = hg.mul %r, %sin : tensor<?x4x?x16xf32>, tensor<1x1x?x16xf32> -> tensor<?x4x?x16xf32>
  %2 = hg.add %0, %1 : tensor<?x4x?x16xf32>, tensor<?x4x?x16xf32> -> tensor<?x4x?x16xf32>
  return %2 : tensor<?x4x?x16xf32>
}

// -----

// Per-batch tables [B, 1, T, 16] (position ids per sequence) are reshaped
// to [B, T, 16]; operands in the other order.
// CHECK-LABEL: func.func @per_batch_tables
// CHECK-SAME: (%[[X:.+]]: tensor<?x2x?x16xf32> {{.*}}, %[[COS:.+]]: tensor<?x1x?x16xf32> {{.*}}, %[[SIN:.+]]: tensor<?x1x?x16xf32>
// CHECK-DAG: %[[C:.+]] = hg.reshape %[[COS]] ["b", "t", 16]
// CHECK-DAG: %[[S:.+]] = hg.reshape %[[SIN]] ["b", "t", 16]
// CHECK: hg.rotary %[[X]], %[[C]], %[[S]]
func.func @per_batch_tables(%x: tensor<?x2x?x16xf32> {hg.dims = ["b", 2, "t", 16]},
                            %cos: tensor<?x1x?x16xf32> {hg.dims = ["b", 1, "t", 16]},
                            %sin: tensor<?x1x?x16xf32> {hg.dims = ["b", 1, "t", 16]}) -> tensor<?x2x?x16xf32> {
  %x1 = hg.slice %x {axes = array<i64: -1>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<?x2x?x16xf32> -> tensor<?x2x?x8xf32>
  %x2 = hg.slice %x {axes = array<i64: -1>, ends = array<i64: 16>, starts = array<i64: -8>, steps = array<i64: 1>} : tensor<?x2x?x16xf32> -> tensor<?x2x?x8xf32>
  %n = hg.neg %x2 : tensor<?x2x?x8xf32> -> tensor<?x2x?x8xf32>
  %r = hg.concat %n, %x1 {axis = -1 : i64} : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x16xf32>
  %1 = hg.mul %sin, %r : tensor<?x1x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x2x?x16xf32>
  %0 = hg.mul %cos, %x : tensor<?x1x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x2x?x16xf32>
  %2 = hg.add %1, %0 : tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32> -> tensor<?x2x?x16xf32>
  return %2 : tensor<?x2x?x16xf32>
}

// -----

// Partial rotary (GPT-NeoX rotary_pct): only the first 8 of 16 features
// rotate, the rest pass through; one hg.rotary with rotary_dim 8.
// CHECK-LABEL: func.func @partial
// CHECK-SAME: (%[[X:.+]]: tensor<2x4x8x16xf32>, %[[COS:.+]]: tensor<1x8x8xf32>, %[[SIN:.+]]: tensor<1x8x8xf32>)
// CHECK: %[[Y:.+]] = hg.rotary %[[X]], %[[COS]], %[[SIN]] : (tensor<2x4x8x16xf32>, tensor<1x8x8xf32>, tensor<1x8x8xf32>) -> tensor<2x4x8x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @partial(%x: tensor<2x4x8x16xf32>, %cos: tensor<1x8x8xf32>, %sin: tensor<1x8x8xf32>) -> tensor<2x4x8x16xf32> {
  %xr = hg.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
  %xp = hg.slice %x {axes = array<i64: 3>, ends = array<i64: 16>, starts = array<i64: 8>, steps = array<i64: 1>} : tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
  %x1 = hg.slice %xr {axes = array<i64: 3>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %x2 = hg.slice %xr {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>} : tensor<2x4x8x8xf32> -> tensor<2x4x8x4xf32>
  %n = hg.neg %x2 : tensor<2x4x8x4xf32> -> tensor<2x4x8x4xf32>
  %r = hg.concat %n, %x1 {axis = 3 : i64} : (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) -> tensor<2x4x8x8xf32>
  %0 = hg.mul %xr, %cos : tensor<2x4x8x8xf32>, tensor<1x8x8xf32> -> tensor<2x4x8x8xf32>
  %1 = hg.mul %r, %sin : tensor<2x4x8x8xf32>, tensor<1x8x8xf32> -> tensor<2x4x8x8xf32>
  %2 = hg.add %0, %1 : tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %3 = hg.concat %2, %xp {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  return %3 : tensor<2x4x8x16xf32>
}

// -----

// concat(x1, -x2) rotates the other way; cos over the heads dim is not a
// rotary table. Neither fuses.
// CHECK-LABEL: func.func @not_rotary
// CHECK-NOT: hg.rotary
func.func @not_rotary(%x: tensor<2x4x8x16xf32>, %cos: tensor<1x8x16xf32>, %sin: tensor<1x8x16xf32>,
                      %cosh: tensor<4x8x16xf32>) -> (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) {
  %x1 = hg.slice %x {axes = array<i64: 3>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
  %x2 = hg.slice %x {axes = array<i64: 3>, ends = array<i64: 16>, starts = array<i64: 8>, steps = array<i64: 1>} : tensor<2x4x8x16xf32> -> tensor<2x4x8x8xf32>
  %n = hg.neg %x2 : tensor<2x4x8x8xf32> -> tensor<2x4x8x8xf32>
  %r = hg.concat %x1, %n {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  %0 = hg.mul %x, %cos : tensor<2x4x8x16xf32>, tensor<1x8x16xf32> -> tensor<2x4x8x16xf32>
  %1 = hg.mul %r, %sin : tensor<2x4x8x16xf32>, tensor<1x8x16xf32> -> tensor<2x4x8x16xf32>
  %2 = hg.add %0, %1 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  %r2 = hg.concat %n, %x1 {axis = 3 : i64} : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x16xf32>
  %3 = hg.mul %x, %cosh : tensor<2x4x8x16xf32>, tensor<4x8x16xf32> -> tensor<2x4x8x16xf32>
  %4 = hg.mul %r2, %sin : tensor<2x4x8x16xf32>, tensor<1x8x16xf32> -> tensor<2x4x8x16xf32>
  %5 = hg.add %3, %4 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32> -> tensor<2x4x8x16xf32>
  return %2, %5 : tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>
}
