// An hrt module serialises into the bundle as written: two executables
// sharing one state buffer with their own access, a parameter, ports, the
// memory plan hrt-plan-memory makes, and the symbol limits.
// REQUIRES: hybridc, hybrid-run
// RUN: hybridc compile %s -o %t.hyb -q
// RUN: hybrid-run info %t.hyb | FileCheck %s
// RUN: hybridc compile %s --compile-to=bundle | FileCheck %s --check-prefix=SUMMARY

// CHECK: model: state-demo
// CHECK: param scale: f32 [1]
// CHECK: states: 1
// CHECK-NEXT: state total: f32
// CHECK: executable accumulate:
// CHECK-NEXT: symbols: n <= 64
// CHECK-NEXT: input x: f32 [n]
// CHECK-NEXT: params: read
// CHECK-NEXT: state total: f32 [n], read_write
// CHECK-NEXT: buffers: 4, commands: 2, streams: 1, events: 0
// The input x (4*n bytes) and the product t (4*n) each reserve 255 bytes
// for the 256-byte alignment of their offsets.
// CHECK-NEXT: workspace: 8*n + 510 bytes (alignment 256)
// CHECK: executable read:
// CHECK-NEXT: symbols: n
// CHECK-NEXT: input probe: f32 [n]
// CHECK-NEXT: output total: f32 [n]
// CHECK-NEXT: params: read
// CHECK-NEXT: state total: f32 [n], read

// SUMMARY: state-demo: 1 parameters (4.0 B), accumulate: 2 commands, workspace 8*n + 510 bytes, read: 1 commands, workspace 8*n + 510 bytes
// SUMMARY-NEXT: mul {{.*}}hrt-to-bundle.mlir:39:5
// SUMMARY-NEXT: add {{.*}}hrt-to-bundle.mlir:40:5
// SUMMARY-NEXT: copy {{.*}}hrt-to-bundle.mlir:46:5
module attributes {hg.model = "state-demo"} {
  hrt.executable @accumulate symbols ["n"] params read attributes {symbol_max = array<i64: 64>} {
    %x = hrt.input "x" : !hrt.buffer<f32, [n]>
    %acc = hrt.state "total" read_write : !hrt.buffer<f32, [n]>
    %w = hrt.param "scale" : !hrt.buffer<f32, [1]>
    %t = hrt.alloc : !hrt.buffer<f32, [n]>
    hrt.binary mul %x : !hrt.buffer<f32, [n]>, %w : !hrt.buffer<f32, [1]> into %t : !hrt.buffer<f32, [n]>
    hrt.binary add %acc : !hrt.buffer<f32, [n]>, %t : !hrt.buffer<f32, [n]> into %acc : !hrt.buffer<f32, [n]>
  }
  hrt.executable @read symbols ["n"] params read {
    %probe = hrt.input "probe" : !hrt.buffer<f32, [n]>
    %acc = hrt.state "total" read : !hrt.buffer<f32, [n]>
    %y = hrt.output "total" : !hrt.buffer<f32, [n]>
    hrt.copy %acc : !hrt.buffer<f32, [n]> into %y : !hrt.buffer<f32, [n]>
  }
}
