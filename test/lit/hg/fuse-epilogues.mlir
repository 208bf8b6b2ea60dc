// hg-fuse-epilogues: activations and residual adds after a linear become its
// epilogue.
// RUN: hybridc-opt --hg-fuse-epilogues --split-input-file %s | FileCheck %s
// The same in bf16 fuses alike:
// RUN: sed -e 's/f32/bf16/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-epilogues --split-input-file %t.bf16.mlir | FileCheck %t.bf16.mlir

// A GPT-2 MLP: gelu (tanh) of c_fc, then c_proj plus the residual stream.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:[^:]+]]: {{.+}}, %[[W1:[^:]+]]: {{.+}}, %[[B1:[^:]+]]: {{.+}}, %[[W2:[^:]+]]: {{.+}}, %[[B2:[^:]+]]: {{.+}})
// CHECK: %[[H:.+]] = hg.linear %[[X]], %[[W1]] bias %[[B1]] {activation = "gelu_tanh", transpose_weight = false}
// CHECK: %[[Y:.+]] = hg.linear %[[H]], %[[W2]] bias %[[B2]] residual %[[X]] {transpose_weight = false}
// CHECK-NOT: hg.gelu
// CHECK-NOT: hg.add
// CHECK: return %[[Y]]
func.func @mlp(%x: tensor<?x64xf32>, %w1: tensor<64x256xf32>, %b1: tensor<256xf32>,
               %w2: tensor<256x64xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  %0 = hg.linear %x, %w1 bias %b1 {transpose_weight = false} : (tensor<?x64xf32>, tensor<64x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %1 = hg.gelu %0 {approximate = "tanh"} : tensor<?x256xf32> -> tensor<?x256xf32>
  %2 = hg.linear %1, %w2 bias %b2 {transpose_weight = false} : (tensor<?x256xf32>, tensor<256x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %3 = hg.add %x, %2 : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %3 : tensor<?x64xf32>
}

// -----

// Every activation, each then added to a residual: activation first, then
// the residual (add's operands in either order).
// CHECK-LABEL: func.func @activations
// CHECK: hg.linear %{{.+}}, %{{.+}} residual %{{.+}} {activation = "relu"}
// CHECK: hg.linear %{{.+}}, %{{.+}} residual %{{.+}} {activation = "gelu"}
// CHECK: hg.linear %{{.+}}, %{{.+}} {activation = "silu"}
// CHECK-NOT: hg.relu
// CHECK-NOT: hg.gelu
// CHECK-NOT: hg.silu
// CHECK-NOT: hg.add
func.func @activations(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %r: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = hg.relu %0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = hg.add %1, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %4 = hg.gelu %3 : tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = hg.add %r, %4 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %6 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %7 = hg.silu %6 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %2, %5, %7 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A linear whose result is used elsewhere too stays as it is: fusing would
// compute it twice or lose the plain value.
// CHECK-LABEL: func.func @shared_result
// CHECK: %[[Y:.+]] = hg.linear
// CHECK-NOT: activation
// CHECK-NOT: residual
// CHECK: hg.relu %[[Y]]
// CHECK: hg.add %[[Y]]
func.func @shared_result(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %r: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = hg.relu %0 : tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = hg.add %0, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// An add that broadcasts (a bias-like [N] vector, a [1, N] row) is not a
// residual; an activation after a residual add would have to come after
// it, so it stays apart.
// CHECK-LABEL: func.func @not_epilogues
// CHECK: hg.linear %{{.+}}, %{{.+}} :
// CHECK-NEXT: hg.add
// CHECK: hg.linear %{{.+}}, %{{.+}} :
// CHECK-NEXT: hg.add
// CHECK: %[[R:.+]] = hg.linear %{{.+}}, %{{.+}} residual
// CHECK-NEXT: hg.relu %[[R]]
func.func @not_epilogues(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8xf32>,
                         %row: tensor<1x8xf32>, %r: tensor<4x8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = hg.add %0, %v : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %2 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = hg.add %row, %2 : tensor<1x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = hg.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %5 = hg.add %4, %r : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %6 = hg.relu %5 : tensor<4x8xf32> -> tensor<4x8xf32>
  return %1, %3, %6 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
