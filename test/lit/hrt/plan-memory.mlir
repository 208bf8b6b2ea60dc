// hrt-plan-memory: offsets for allocations and ports, 256-byte aligned
// slots, reuse of dead slots, inputs live from the start, outputs to the end.
// RUN: hybridc-opt %s --split-input-file --hrt-plan-memory | FileCheck %s

// A chain x -> a -> b -> c -> y: each value dies when the next is written,
// so two slots serve all five (the output is written last, into a slot
// whose value is dead by then). Constant sizes round up to 256 bytes.
// CHECK-LABEL: hrt.executable @chain
// CHECK-SAME: alignment = 256 : i64, workspace = 512 : i64
// CHECK: hrt.input "x" {offset = 0 : i64}
// CHECK: hrt.output "y" {offset = 0 : i64}
// CHECK: hrt.alloc {offset = 256 : i64}
// CHECK: hrt.alloc {offset = 0 : i64}
// CHECK: hrt.alloc {offset = 256 : i64}
hrt.executable @chain symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [10]>
  %y = hrt.output "y" : !hrt.buffer<f32, [10]>
  %a = hrt.alloc : !hrt.buffer<f32, [10]>
  hrt.unary neg %x : !hrt.buffer<f32, [10]> into %a : !hrt.buffer<f32, [10]>
  %b = hrt.alloc : !hrt.buffer<f32, [10]>
  hrt.unary neg %a : !hrt.buffer<f32, [10]> into %b : !hrt.buffer<f32, [10]>
  %c = hrt.alloc : !hrt.buffer<f32, [10]>
  hrt.unary neg %b : !hrt.buffer<f32, [10]> into %c : !hrt.buffer<f32, [10]>
  hrt.unary neg %c : !hrt.buffer<f32, [10]> into %y : !hrt.buffer<f32, [10]>
}

// -----

// Symbolic sizes: 256*n bytes keep the cursor aligned and come first; 4*n
// bytes are not a multiple of 256, so that slot reserves 255 spare bytes
// and comes last (the runtime rounds its offset up).
// CHECK-LABEL: hrt.executable @symbolic
// CHECK-SAME: workspace = "260*n + 255"
// CHECK: hrt.input "x" {offset = "256*n"} : <f32, [n]>
// CHECK: hrt.output "y" {offset = 0 : i64} : <f32, [n, 64]>
hrt.executable @symbolic symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n]>
  %y = hrt.output "y" : !hrt.buffer<f32, [n, 64]>
  %v = hrt.view %x : !hrt.buffer<f32, [n]> to !hrt.buffer<f32, [n, 1]>
  hrt.broadcast_to %v : !hrt.buffer<f32, [n, 1]> into %y : !hrt.buffer<f32, [n, 64]>
}

// -----

// A buffer read through a view stays live until the view's last reader (a
// is read by command 1, so b cannot take its slot); a smaller buffer reuses
// a dead slot it provably fits in (c, 128*n bytes, in a's 256*n).
// CHECK-LABEL: hrt.executable @views
// CHECK-SAME: workspace = "512*n"
// CHECK: hrt.alloc {offset = "256*n"} : <f32, [n, 64]>
// CHECK: hrt.alloc {offset = 0 : i64} : <f32, [n, 64]>
// CHECK: hrt.alloc {offset = "256*n"} : <f32, [n, 32]>
hrt.executable @views symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 64]>
  %y = hrt.output "y" : !hrt.buffer<f32, [n, 32]>
  %a = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  hrt.unary neg %x : !hrt.buffer<f32, [n, 64]> into %a : !hrt.buffer<f32, [n, 64]>
  %av = hrt.view %a : !hrt.buffer<f32, [n, 64]> to !hrt.buffer<f32, ["64*n"]>
  %b = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %bv = hrt.view %b : !hrt.buffer<f32, [n, 64]> to !hrt.buffer<f32, ["64*n"]>
  hrt.unary neg %av : !hrt.buffer<f32, ["64*n"]> into %bv : !hrt.buffer<f32, ["64*n"]>
  %c = hrt.alloc : !hrt.buffer<f32, [n, 32]>
  hrt.slice %b : !hrt.buffer<f32, [n, 64]> into %c : !hrt.buffer<f32, [n, 32]> {axes = array<i64: 1>, starts = array<i64: 0>, ends = array<i64: 32>, steps = array<i64: 1>}
  hrt.copy %c : !hrt.buffer<f32, [n, 32]> into %y : !hrt.buffer<f32, [n, 32]>
}
