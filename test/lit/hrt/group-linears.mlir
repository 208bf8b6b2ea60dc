// hrt-group-linears: linears sharing an input become one hrt.linear_group,
// and a linear cut into slices along its last axis writes the slices.
// RUN: hybridc-opt %s --split-input-file --hrt-group-linears | FileCheck %s

// q, k and v of one input (OPT): one group where q ran; k's and v's
// buffers move up to it. The views between them are not commands.
// CHECK-LABEL: hrt.executable @shared_input
// CHECK: %[[X:.+]] = hrt.input "x"
// CHECK: %[[Q:.+]] = hrt.alloc : <f32, [batch, 8]>
// CHECK-NEXT: %[[K:.+]] = hrt.alloc : <f32, [batch, 4]>
// CHECK-NEXT: %[[V:.+]] = hrt.alloc : <f32, [batch, 4]>
// CHECK-NEXT: hrt.linear_group %[[X]] : <f32, [batch, 16]> weights(%{{.+}}, %{{.+}}, %{{.+}} : !hrt.buffer<f32, [8, 16]>, !hrt.buffer<f32, [4, 16]>, !hrt.buffer<f32, [4, 16]>) biases(%{{.+}}, %{{.+}}, %{{.+}} : !hrt.buffer<f32, [8]>, !hrt.buffer<f32, [4]>, !hrt.buffer<f32, [4]>) features [0, 0, 0] to [8, 4, 4] into(%[[Q]], %[[K]], %[[V]] : {{.+}}) {transpose_weight = true}
// CHECK-NEXT: hrt.view %[[Q]]
// CHECK-NEXT: hrt.view %[[K]]
// CHECK-NOT: hrt.linear
// CHECK: hrt.binary add
hrt.executable @shared_input symbols ["batch"] params read {
  %wq = hrt.param "q.weight" : !hrt.buffer<f32, [8, 16]>
  %bq = hrt.param "q.bias" : !hrt.buffer<f32, [8]>
  %wk = hrt.param "k.weight" : !hrt.buffer<f32, [4, 16]>
  %bk = hrt.param "k.bias" : !hrt.buffer<f32, [4]>
  %wv = hrt.param "v.weight" : !hrt.buffer<f32, [4, 16]>
  %bv = hrt.param "v.bias" : !hrt.buffer<f32, [4]>
  %x = hrt.input "x" : !hrt.buffer<f32, [batch, 16]>
  %y = hrt.output "y" : !hrt.buffer<f32, [batch, 4]>
  %q = hrt.alloc : !hrt.buffer<f32, [batch, 8]>
  hrt.linear %x : !hrt.buffer<f32, [batch, 16]>, %wq : !hrt.buffer<f32, [8, 16]> bias %bq : !hrt.buffer<f32, [8]> into %q : !hrt.buffer<f32, [batch, 8]> {transpose_weight = true}
  %qv = hrt.view %q : !hrt.buffer<f32, [batch, 8]> to !hrt.buffer<f32, [batch, 2, 4]>
  %k = hrt.alloc : !hrt.buffer<f32, [batch, 4]>
  hrt.linear %x : !hrt.buffer<f32, [batch, 16]>, %wk : !hrt.buffer<f32, [4, 16]> bias %bk : !hrt.buffer<f32, [4]> into %k : !hrt.buffer<f32, [batch, 4]> {transpose_weight = true}
  %kv = hrt.view %k : !hrt.buffer<f32, [batch, 4]> to !hrt.buffer<f32, [batch, 1, 4]>
  %v = hrt.alloc : !hrt.buffer<f32, [batch, 4]>
  hrt.linear %x : !hrt.buffer<f32, [batch, 16]>, %wv : !hrt.buffer<f32, [4, 16]> bias %bv : !hrt.buffer<f32, [4]> into %v : !hrt.buffer<f32, [batch, 4]> {transpose_weight = true}
  hrt.binary add %k : !hrt.buffer<f32, [batch, 4]>, %v : !hrt.buffer<f32, [batch, 4]> into %y : !hrt.buffer<f32, [batch, 4]>
}

// -----

// GPT-2's c_attn ([K, N]) cut into q, k and v: the members write the
// slices' buffers (listed by their ranges), the slices and the full
// result's buffer go. No steps is a step of 1, axis -1 the last.
// CHECK-LABEL: hrt.executable @sliced
// CHECK: %[[W:.+]] = hrt.param "c_attn.weight"
// CHECK: %[[B:.+]] = hrt.param "c_attn.bias"
// CHECK: %[[X:.+]] = hrt.input "x"
// CHECK: %[[Q:.+]] = hrt.alloc : <f32, [batch, 8]>
// CHECK-NEXT: %[[K:.+]] = hrt.alloc : <f32, [batch, 8]>
// CHECK-NEXT: %[[V:.+]] = hrt.alloc : <f32, [batch, 8]>
// CHECK-NEXT: hrt.linear_group %[[X]] : <f32, [batch, 16]> weights(%[[W]], %[[W]], %[[W]] : {{.+}}) biases(%[[B]], %[[B]], %[[B]] : {{.+}}) features [0, 8, 16] to [8, 16, 24] into(%[[Q]], %[[K]], %[[V]] : {{.+}}) {transpose_weight = false}
// CHECK-NOT: hrt.slice
// CHECK-NOT: hrt.alloc : <f32, [batch, 24]>
// CHECK: hrt.binary add %[[Q]]
hrt.executable @sliced symbols ["batch"] params read {
  %w = hrt.param "c_attn.weight" : !hrt.buffer<f32, [16, 24]>
  %b = hrt.param "c_attn.bias" : !hrt.buffer<f32, [24]>
  %x = hrt.input "x" : !hrt.buffer<f32, [batch, 16]>
  %y = hrt.output "y" : !hrt.buffer<f32, [batch, 8]>
  %qkv = hrt.alloc : !hrt.buffer<f32, [batch, 24]>
  hrt.linear %x : !hrt.buffer<f32, [batch, 16]>, %w : !hrt.buffer<f32, [16, 24]> bias %b : !hrt.buffer<f32, [24]> into %qkv : !hrt.buffer<f32, [batch, 24]> {transpose_weight = false}
  %q = hrt.alloc : !hrt.buffer<f32, [batch, 8]>
  hrt.slice %qkv : !hrt.buffer<f32, [batch, 24]> into %q : !hrt.buffer<f32, [batch, 8]> {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 1>}
  %v = hrt.alloc : !hrt.buffer<f32, [batch, 8]>
  hrt.slice %qkv : !hrt.buffer<f32, [batch, 24]> into %v : !hrt.buffer<f32, [batch, 8]> {axes = array<i64: -1>, ends = array<i64: 24>, starts = array<i64: 16>, steps = array<i64>}
  %k = hrt.alloc : !hrt.buffer<f32, [batch, 8]>
  hrt.slice %qkv : !hrt.buffer<f32, [batch, 24]> into %k : !hrt.buffer<f32, [batch, 8]> {axes = array<i64: 1>, ends = array<i64: 16>, starts = array<i64: 8>, steps = array<i64: 1>}
  hrt.binary add %q : !hrt.buffer<f32, [batch, 8]>, %k : !hrt.buffer<f32, [batch, 8]> into %y : !hrt.buffer<f32, [batch, 8]>
  hrt.binary add %y : !hrt.buffer<f32, [batch, 8]>, %v : !hrt.buffer<f32, [batch, 8]> into %y : !hrt.buffer<f32, [batch, 8]>
}

// -----

// A write to the input between two linears: each reads its own value.
// CHECK-LABEL: hrt.executable @input_written
// CHECK-NOT: hrt.linear_group
// CHECK-COUNT-2: hrt.linear %
hrt.executable @input_written symbols [] params read {
  %wa = hrt.param "a" : !hrt.buffer<f32, [4, 4]>
  %wb = hrt.param "b" : !hrt.buffer<f32, [4, 4]>
  %x = hrt.alloc : !hrt.buffer<f32, [2, 4]>
  hrt.fill 1.0 into %x : !hrt.buffer<f32, [2, 4]>
  %a = hrt.output "a" : !hrt.buffer<f32, [2, 4]>
  %b = hrt.output "b" : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %wa : !hrt.buffer<f32, [4, 4]> into %a : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.unary neg %x : !hrt.buffer<f32, [2, 4]> into %x : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %wb : !hrt.buffer<f32, [4, 4]> into %b : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
}

// -----

// Different epilogues: an activation, a bias on one only, a residual, a
// weight layout. Only the two plain ones (a, e) group.
// CHECK-LABEL: hrt.executable @epilogues
// CHECK: hrt.linear_group %{{.+}} weights(%[[A:.+]], %[[E:.+]] : {{.+}}) features [0, 0] to [4, 4]
// CHECK-COUNT-4: hrt.linear %
hrt.executable @epilogues symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 4]>
  %we = hrt.param "e" : !hrt.buffer<f32, [4, 4]>
  %bias = hrt.param "bias" : !hrt.buffer<f32, [4]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %a = hrt.output "a" : !hrt.buffer<f32, [2, 4]>
  %b = hrt.output "b" : !hrt.buffer<f32, [2, 4]>
  %c = hrt.output "c" : !hrt.buffer<f32, [2, 4]>
  %d = hrt.output "d" : !hrt.buffer<f32, [2, 4]>
  %e = hrt.output "e" : !hrt.buffer<f32, [2, 4]>
  %f = hrt.output "f" : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %a : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> activation silu into %b : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> bias %bias : !hrt.buffer<f32, [4]> into %c : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> residual %x : !hrt.buffer<f32, [2, 4]> into %d : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %we : !hrt.buffer<f32, [4, 4]> into %e : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %f : !hrt.buffer<f32, [2, 4]> {transpose_weight = false}
}

// -----

// A later member's result read between the linears (it would see the new
// value), and linears too far apart: no group.
// CHECK-LABEL: hrt.executable @result_read_between
// CHECK-NOT: hrt.linear_group
hrt.executable @result_read_between symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 4]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %a = hrt.output "a" : !hrt.buffer<f32, [2, 4]>
  %b = hrt.output "b" : !hrt.buffer<f32, [2, 4]>
  %c = hrt.output "c" : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %a : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.unary neg %b : !hrt.buffer<f32, [2, 4]> into %c : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %b : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
}
// CHECK-LABEL: hrt.executable @far_apart
// CHECK-NOT: hrt.linear_group
hrt.executable @far_apart symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 4]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %a = hrt.output "a" : !hrt.buffer<f32, [2, 4]>
  %b = hrt.output "b" : !hrt.buffer<f32, [2, 4]>
  %t = hrt.alloc : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %a : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
  hrt.unary neg %a : !hrt.buffer<f32, [2, 4]> into %t : !hrt.buffer<f32, [2, 4]>
  hrt.unary neg %t : !hrt.buffer<f32, [2, 4]> into %t : !hrt.buffer<f32, [2, 4]>
  hrt.unary neg %t : !hrt.buffer<f32, [2, 4]> into %t : !hrt.buffer<f32, [2, 4]>
  hrt.unary neg %t : !hrt.buffer<f32, [2, 4]> into %t : !hrt.buffer<f32, [2, 4]>
  hrt.unary neg %t : !hrt.buffer<f32, [2, 4]> into %t : !hrt.buffer<f32, [2, 4]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 4]> into %b : !hrt.buffer<f32, [2, 4]> {transpose_weight = true}
}

// -----

// Slices that are not the whole story: one along another axis, one with
// a step, overlapping ranges, the full result read by another command.
// CHECK-LABEL: hrt.executable @slice_other_axis
// CHECK-NOT: hrt.linear_group
hrt.executable @slice_other_axis symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %full = hrt.alloc : !hrt.buffer<f32, [2, 8]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 8]> into %full : !hrt.buffer<f32, [2, 8]> {transpose_weight = false}
  %a = hrt.output "a" : !hrt.buffer<f32, [1, 8]>
  hrt.slice %full : !hrt.buffer<f32, [2, 8]> into %a : !hrt.buffer<f32, [1, 8]> {axes = array<i64: 0>, ends = array<i64: 1>, starts = array<i64: 0>, steps = array<i64: 1>}
}
// CHECK-LABEL: hrt.executable @slice_step
// CHECK-NOT: hrt.linear_group
hrt.executable @slice_step symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %full = hrt.alloc : !hrt.buffer<f32, [2, 8]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 8]> into %full : !hrt.buffer<f32, [2, 8]> {transpose_weight = false}
  %a = hrt.alloc : !hrt.buffer<f32, [2, 4]>
  hrt.slice %full : !hrt.buffer<f32, [2, 8]> into %a : !hrt.buffer<f32, [2, 4]> {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 0>, steps = array<i64: 2>}
}
// CHECK-LABEL: hrt.executable @slices_overlap
// CHECK-NOT: hrt.linear_group
hrt.executable @slices_overlap symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %full = hrt.alloc : !hrt.buffer<f32, [2, 8]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 8]> into %full : !hrt.buffer<f32, [2, 8]> {transpose_weight = false}
  %a = hrt.alloc : !hrt.buffer<f32, [2, 5]>
  hrt.slice %full : !hrt.buffer<f32, [2, 8]> into %a : !hrt.buffer<f32, [2, 5]> {axes = array<i64: 1>, ends = array<i64: 5>, starts = array<i64: 0>, steps = array<i64: 1>}
  %b = hrt.alloc : !hrt.buffer<f32, [2, 4]>
  hrt.slice %full : !hrt.buffer<f32, [2, 8]> into %b : !hrt.buffer<f32, [2, 4]> {axes = array<i64: 1>, ends = array<i64: 8>, starts = array<i64: 4>, steps = array<i64: 1>}
}
// CHECK-LABEL: hrt.executable @full_result_used
// CHECK-NOT: hrt.linear_group
// CHECK: hrt.slice
hrt.executable @full_result_used symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [4, 8]>
  %x = hrt.input "x" : !hrt.buffer<f32, [2, 4]>
  %full = hrt.alloc : !hrt.buffer<f32, [2, 8]>
  hrt.linear %x : !hrt.buffer<f32, [2, 4]>, %w : !hrt.buffer<f32, [4, 8]> into %full : !hrt.buffer<f32, [2, 8]> {transpose_weight = false}
  %a = hrt.alloc : !hrt.buffer<f32, [2, 4]>
  hrt.slice %full : !hrt.buffer<f32, [2, 8]> into %a : !hrt.buffer<f32, [2, 4]> {axes = array<i64: 1>, ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 1>}
  %y = hrt.output "y" : !hrt.buffer<f32, [2, 8]>
  hrt.unary neg %full : !hrt.buffer<f32, [2, 8]> into %y : !hrt.buffer<f32, [2, 8]>
}
