// Symbolic dims take whole-dim reversal (step -1) and strided slices whose
// length divides exactly: 2*seq columns reversed, then every other one from
// INT64_MIN ("from the start") to INT64_MAX ("to the end") is seq columns.
// The runtime's slice kernel agrees: it checks the result shape it computes.
// REQUIRES: hybridc, hybrid-run
// RUN: hybridc compile %s -o %t.hyb -q
// RUN: hybrid-run info %t.hyb | FileCheck %s
// CHECK: input x: f32 [batch,seq]
// CHECK: output y: f32 [batch,seq]
// RUN: %python %S/Inputs/write_f32.py %t.none.safetensors
// RUN: %python %S/Inputs/write_f32.py %t.in.safetensors x=2x3:0,1,2,3,4,5
// RUN: %python %S/Inputs/write_f32.py %t.ref.safetensors y=2x3:2,0,1,5,3,4
// RUN: hybrid-run forward %t.hyb --weights %t.none.safetensors --inputs %t.in.safetensors --out %t.out.safetensors
// RUN: hybrid-run compare %t.out.safetensors %t.ref.safetensors
module attributes {hg.model = "slice-test"} {
  func.func @forward(%x: tensor<?x?xf32> {hg.name = "x", hg.dims = ["batch", "seq"]})
      -> (tensor<?x?xf32> {hg.name = "y"}) {
    %c = hg.concat %x, %x {axis = 1 : i64} : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
    %r = hg.slice %c {axes = array<i64: 1>, starts = array<i64: 9223372036854775807>, ends = array<i64: -9223372036854775808>, steps = array<i64: -1>} : tensor<?x?xf32> -> tensor<?x?xf32>
    %s = hg.slice %r {axes = array<i64: 1>, starts = array<i64: -9223372036854775808>, ends = array<i64: 9223372036854775807>, steps = array<i64: 2>} : tensor<?x?xf32> -> tensor<?x?xf32>
    return %s : tensor<?x?xf32>
  }
}
