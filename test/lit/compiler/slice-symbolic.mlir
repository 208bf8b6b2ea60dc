// Symbolic slice bounds lower when provably in range: start 1 of 2*seq
// (seq >= 1) and end -1; the slice has 2*seq - 2 columns.
// RUN: hybridc compile %s --emit=bundle | FileCheck %s
// The input (8*batch*seq bytes), the concatenation (16*batch*seq) and the
// output (8*batch*seq - 8*batch) each reserve 255 spare bytes for the
// runtime's 256-byte alignment of their offsets.
// CHECK: forward: 2 commands, workspace 20*batch*seq - 8*batch + 765 bytes
// CHECK-NEXT: {{^}}  concat {{.*}}slice-symbolic.mlir:13:10
// CHECK-NEXT: {{^}}  slice {{.*}}slice-symbolic.mlir:14:10
module attributes {hg.model = "slice-test"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]})
      -> (tensor<?x?xf32> {hg.name = "y"}) {
    %c = hg.concat %x, %x {axis = 1 : i64} : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %s = hg.slice %c {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: -1>, steps = array<i64: 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}
