// hg-fuse-linear: matmul by a parameter matrix (and a bias) -> hg.linear.
// RUN: hybridc-opt --hg-fuse-linear --split-input-file %s | FileCheck %s
// The same cases in bf16 (constants as bf16 rounds them) fuse alike:
// RUN: sed -e 's/f32/bf16/g' %s > %t.bf16.mlir
// RUN: hybridc-opt --hg-fuse-linear --split-input-file %t.bf16.mlir | FileCheck %t.bf16.mlir

// A [K, N] parameter (GPT-2 Conv1D, folded ONNX weights).
// CHECK-LABEL: func.func @kn_weight
// CHECK-SAME: (%[[X:.+]]: tensor<?x64xf32> {{.*}}, %[[W:.+]]: tensor<64x192xf32>
// CHECK: %[[Y:.+]] = hg.linear %[[X]], %[[W]] {transpose_weight = false}
// CHECK-NOT: hg.matmul
// CHECK: return %[[Y]]
func.func @kn_weight(%x: tensor<?x64xf32> {hg.dims = ["n", 64]},
                     %w: tensor<64x192xf32> {hg.param = "c_attn.weight"}) -> tensor<?x192xf32> {
  %0 = hg.matmul %x, %w : tensor<?x64xf32>, tensor<64x192xf32> -> tensor<?x192xf32>
  return %0 : tensor<?x192xf32>
}

// -----

// The transpose of an [N, K] parameter (nn.Linear), and its bias on either
// side of the add.
// CHECK-LABEL: func.func @nk_weight_with_bias
// CHECK-SAME: (%[[X:.+]]: tensor<?x?x64xf32> {{.*}}, %[[W:.+]]: tensor<32x64xf32> {{.*}}, %[[B:.+]]: tensor<32xf32>
// CHECK: %[[Y:.+]] = hg.linear %[[X]], %[[W]] bias %[[B]] :
// CHECK-NOT: transpose_weight
// CHECK-NOT: hg.add
// CHECK: return %[[Y]]
func.func @nk_weight_with_bias(%x: tensor<?x?x64xf32> {hg.dims = ["b", "t", 64]},
                               %w: tensor<32x64xf32> {hg.param = "q_proj.weight"},
                               %b: tensor<32xf32> {hg.param = "q_proj.bias"}) -> tensor<?x?x32xf32> {
  %wt = hg.transpose %w [1, 0] : tensor<32x64xf32> -> tensor<64x32xf32>
  %0 = hg.matmul %x, %wt : tensor<?x?x64xf32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
  %1 = hg.add %b, %0 : tensor<32xf32>, tensor<?x?x32xf32> -> tensor<?x?x32xf32>
  return %1 : tensor<?x?x32xf32>
}

// -----

// A bias added to an hg.linear that has none yet (ONNX Gemm without C).
// CHECK-LABEL: func.func @bias_after_linear
// CHECK: %[[Y:.+]] = hg.linear %{{.+}}, %{{.+}} bias %{{.+}} {transpose_weight = false}
// CHECK-NEXT: return %[[Y]]
func.func @bias_after_linear(%x: tensor<4x64xf32>, %w: tensor<64x8xf32> {hg.param = "w"},
                             %b: tensor<8xf32> {hg.param = "b"}) -> tensor<4x8xf32> {
  %0 = hg.linear %x, %w {transpose_weight = false} : (tensor<4x64xf32>, tensor<64x8xf32>) -> tensor<4x8xf32>
  %1 = hg.add %0, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Not a parameter: activations times activations stay a matmul; a bias that
// is not [N] stays an add.
// CHECK-LABEL: func.func @not_linear
// CHECK: hg.matmul
// CHECK: hg.linear
// CHECK: hg.add
func.func @not_linear(%x: tensor<4x64xf32>, %y: tensor<64x8xf32>,
                      %w: tensor<64x8xf32> {hg.param = "w"},
                      %b: tensor<4x8xf32> {hg.param = "b"}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = hg.matmul %x, %y : tensor<4x64xf32>, tensor<64x8xf32> -> tensor<4x8xf32>
  %1 = hg.matmul %x, %w : tensor<4x64xf32>, tensor<64x8xf32> -> tensor<4x8xf32>
  %2 = hg.add %1, %b : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %0, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}
