// Symbolic slice bounds lower when provably in range: start 1 of 2*seq
// (seq >= 1) and end -1; the slice has 2*seq - 2 columns.
// RUN: hybridc compile %s --emit=bundle | FileCheck %s
// CHECK: forward: 2 commands, workspace 8*batch*seq bytes
// CHECK-NEXT: {{^}}  concat loc
// CHECK-NEXT: {{^}}  slice loc
module attributes {hg.model = "slice-test"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]})
      -> (tensor<?x?xf32> {hg.name = "y"}) {
    %c = hg.concat %x, %x {axis = 1 : i64} : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %s = hg.slice %c {axes = array<i64: 1>, starts = array<i64: 1>, ends = array<i64: -1>, steps = array<i64: 1>} : tensor<?x?xf32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}
