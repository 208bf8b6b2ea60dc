// hg-unit-transposes: a transpose that moves only dims of size 1 is a
// reshape (a view after lowering); one that moves a larger dim stays.
// RUN: hybridc-opt --hg-unit-transposes --split-input-file %s | FileCheck %s

// Decode's [batch, 1, heads, dim] -> [batch, heads, 1, dim] moves nothing.
// CHECK-LABEL: func.func @decode_heads
// CHECK: %[[Y:.+]] = hg.reshape %{{.+}} ["b", 12, 1, 64] : tensor<?x1x12x64xf32> -> tensor<?x12x1x64xf32>
// CHECK-NOT: hg.transpose
// CHECK: return %[[Y]]
func.func @decode_heads(%x: tensor<?x1x12x64xf32> {hg.dims = ["b", 1, 12, 64]}) -> tensor<?x12x1x64xf32> {
  %0 = hg.transpose %x [0, 2, 1, 3] : tensor<?x1x12x64xf32> -> tensor<?x12x1x64xf32>
  return %0 : tensor<?x12x1x64xf32>
}

// -----

// A symbolic dim of unknown size may be larger than 1: moving it past
// another dim is a real transpose; so is swapping two static dims.
// CHECK-LABEL: func.func @real_transposes
// CHECK: hg.transpose %{{.+}} [0, 2, 1, 3]
// CHECK: hg.transpose %{{.+}} [1, 0]
// CHECK-NOT: hg.reshape
func.func @real_transposes(%x: tensor<?x?x12x64xf32> {hg.dims = ["b", "t", 12, 64]},
                           %y: tensor<4x8xf32>) -> (tensor<?x12x?x64xf32>, tensor<8x4xf32>) {
  %0 = hg.transpose %x [0, 2, 1, 3] : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
  %1 = hg.transpose %y [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  return %0, %1 : tensor<?x12x?x64xf32>, tensor<8x4xf32>
}

// -----

// Several unit dims moving around dims that keep their order.
// CHECK-LABEL: func.func @several_units
// CHECK: hg.reshape %{{.+}} [1, 4, 1, 8, 1] : tensor<1x4x8x1x1xf32> -> tensor<1x4x1x8x1xf32>
func.func @several_units(%x: tensor<1x4x8x1x1xf32>) -> tensor<1x4x1x8x1xf32> {
  %0 = hg.transpose %x [3, 1, 4, 2, 0] : tensor<1x4x8x1x1xf32> -> tensor<1x4x1x8x1xf32>
  return %0 : tensor<1x4x1x8x1xf32>
}
