// hrt-fold-kv-appends: a decode step's key and value cache writes become
// the attention's append operands, when nothing in between touches the
// caches or rewrites what the writes read.
// RUN: hybridc-opt %s --split-input-file --hrt-fold-kv-appends | FileCheck %s

// The decode pattern: both writes at the same offset, then the attention.
// CHECK-LABEL: hrt.executable @decode
// CHECK: %[[Q:.+]] = hrt.input "q"
// CHECK: %[[K:.+]] = hrt.input "k"
// CHECK: %[[V:.+]] = hrt.input "v"
// CHECK: %[[POS:.+]] = hrt.state "past"
// CHECK: %[[LEN:.+]] = hrt.input "len"
// CHECK: %[[KC:.+]] = hrt.state "kv.0.key"
// CHECK: %[[VC:.+]] = hrt.state "kv.0.value"
// CHECK-NOT: hrt.cache_write
// CHECK: hrt.attention %[[Q]] : {{.+}}, %[[KC]] : {{.+}}, %[[VC]] : {{.+}} key_length %[[LEN]] : {{.+}} append_key %[[K]] : {{.+}} append_value %[[V]] : {{.+}} append_at %[[POS]] : {{.+}} into
// CHECK-NOT: hrt.cache_write
hrt.executable @decode symbols ["b", "cap"] params read {
  %q = hrt.input "q" : !hrt.buffer<bf16, [b, 4, 1, 16]>
  %k = hrt.input "k" : !hrt.buffer<bf16, [b, 2, 1, 16]>
  %v = hrt.input "v" : !hrt.buffer<bf16, [b, 2, 1, 16]>
  %pos = hrt.state "past" read : !hrt.buffer<i64, [1]>
  %len = hrt.input "len" : !hrt.buffer<i64, [1]>
  %kc = hrt.state "kv.0.key" read_write : !hrt.buffer<bf16, [b, 2, cap, 16]>
  %vc = hrt.state "kv.0.value" read_write : !hrt.buffer<bf16, [b, 2, cap, 16]>
  %out = hrt.output "out" : !hrt.buffer<bf16, [b, 4, 1, 16]>
  hrt.cache_write %k : !hrt.buffer<bf16, [b, 2, 1, 16]> at %pos : !hrt.buffer<i64, [1]> into %kc : !hrt.buffer<bf16, [b, 2, cap, 16]> {axis = 2 : i64}
  hrt.cache_write %v : !hrt.buffer<bf16, [b, 2, 1, 16]> at %pos : !hrt.buffer<i64, [1]> into %vc : !hrt.buffer<bf16, [b, 2, cap, 16]> {axis = 2 : i64}
  hrt.attention %q : !hrt.buffer<bf16, [b, 4, 1, 16]>, %kc : !hrt.buffer<bf16, [b, 2, cap, 16]>, %vc : !hrt.buffer<bf16, [b, 2, cap, 16]> key_length %len : !hrt.buffer<i64, [1]> into %out : !hrt.buffer<bf16, [b, 4, 1, 16]> {causal = true, scale = 2.500000e-01 : f64, sliding_window = 0 : i64}
}

// -----

// The cache is read between its write and the attention: nothing folds
// (the value write alone cannot, the pair comes together).
// CHECK-LABEL: hrt.executable @read_between
// CHECK: hrt.cache_write
// CHECK: hrt.cache_write
// CHECK: hrt.copy
// CHECK: hrt.attention
// CHECK-NOT: append_key
hrt.executable @read_between symbols ["cap"] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %k = hrt.input "k" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %v = hrt.input "v" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %pos = hrt.input "pos" : !hrt.buffer<i64, [1]>
  %kc = hrt.state "kc" read_write : !hrt.buffer<f32, [1, 2, cap, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, cap, 8]>
  %snap = hrt.output "snap" : !hrt.buffer<f32, [1, 2, cap, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.cache_write %k : !hrt.buffer<f32, [1, 2, 1, 8]> at %pos : !hrt.buffer<i64, [1]> into %kc : !hrt.buffer<f32, [1, 2, cap, 8]> {axis = 2 : i64}
  hrt.cache_write %v : !hrt.buffer<f32, [1, 2, 1, 8]> at %pos : !hrt.buffer<i64, [1]> into %vc : !hrt.buffer<f32, [1, 2, cap, 8]> {axis = 2 : i64}
  hrt.copy %kc : !hrt.buffer<f32, [1, 2, cap, 8]> into %snap : !hrt.buffer<f32, [1, 2, cap, 8]>
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, cap, 8]>, %vc : !hrt.buffer<f32, [1, 2, cap, 8]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

// The update is rewritten after its write: the attention must not read the
// new bytes, so nothing folds.
// CHECK-LABEL: hrt.executable @update_rewritten
// CHECK: hrt.cache_write
// CHECK: hrt.cache_write
// CHECK: hrt.fill
// CHECK: hrt.attention
// CHECK-NOT: append_key
hrt.executable @update_rewritten symbols ["cap"] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %pos = hrt.input "pos" : !hrt.buffer<i64, [1]>
  %k = hrt.alloc : !hrt.buffer<f32, [1, 2, 1, 8]>
  %v = hrt.alloc : !hrt.buffer<f32, [1, 2, 1, 8]>
  %kc = hrt.state "kc" read_write : !hrt.buffer<f32, [1, 2, cap, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, cap, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.fill 1.0 into %k : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.fill 1.0 into %v : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.cache_write %k : !hrt.buffer<f32, [1, 2, 1, 8]> at %pos : !hrt.buffer<i64, [1]> into %kc : !hrt.buffer<f32, [1, 2, cap, 8]> {axis = 2 : i64}
  hrt.cache_write %v : !hrt.buffer<f32, [1, 2, 1, 8]> at %pos : !hrt.buffer<i64, [1]> into %vc : !hrt.buffer<f32, [1, 2, cap, 8]> {axis = 2 : i64}
  hrt.fill 2.0 into %k : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, cap, 8]>, %vc : !hrt.buffer<f32, [1, 2, cap, 8]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}

// -----

// Writes at different offsets, or along another axis, stay writes.
// CHECK-LABEL: hrt.executable @other_offsets
// CHECK-COUNT-2: hrt.cache_write
// CHECK: hrt.attention
// CHECK-NOT: append_key
// CHECK-LABEL: hrt.executable @other_axis
// CHECK-COUNT-2: hrt.cache_write
// CHECK: hrt.attention
// CHECK-NOT: append_key
hrt.executable @other_offsets symbols ["cap"] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %k = hrt.input "k" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %v = hrt.input "v" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %p1 = hrt.input "p1" : !hrt.buffer<i64, [1]>
  %p2 = hrt.input "p2" : !hrt.buffer<i64, [1]>
  %kc = hrt.state "kc" read_write : !hrt.buffer<f32, [1, 2, cap, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, cap, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.cache_write %k : !hrt.buffer<f32, [1, 2, 1, 8]> at %p1 : !hrt.buffer<i64, [1]> into %kc : !hrt.buffer<f32, [1, 2, cap, 8]> {axis = 2 : i64}
  hrt.cache_write %v : !hrt.buffer<f32, [1, 2, 1, 8]> at %p2 : !hrt.buffer<i64, [1]> into %vc : !hrt.buffer<f32, [1, 2, cap, 8]> {axis = 2 : i64}
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, cap, 8]>, %vc : !hrt.buffer<f32, [1, 2, cap, 8]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}
hrt.executable @other_axis symbols [] params read {
  %q = hrt.input "q" : !hrt.buffer<f32, [1, 2, 1, 8]>
  %k = hrt.input "k" : !hrt.buffer<f32, [1, 2, 4, 1]>
  %v = hrt.input "v" : !hrt.buffer<f32, [1, 2, 4, 1]>
  %pos = hrt.input "pos" : !hrt.buffer<i64, [1]>
  %kc = hrt.state "kc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %vc = hrt.state "vc" read_write : !hrt.buffer<f32, [1, 2, 4, 8]>
  %out = hrt.output "out" : !hrt.buffer<f32, [1, 2, 1, 8]>
  hrt.cache_write %k : !hrt.buffer<f32, [1, 2, 4, 1]> at %pos : !hrt.buffer<i64, [1]> into %kc : !hrt.buffer<f32, [1, 2, 4, 8]> {axis = 3 : i64}
  hrt.cache_write %v : !hrt.buffer<f32, [1, 2, 4, 1]> at %pos : !hrt.buffer<i64, [1]> into %vc : !hrt.buffer<f32, [1, 2, 4, 8]> {axis = 3 : i64}
  hrt.attention %q : !hrt.buffer<f32, [1, 2, 1, 8]>, %kc : !hrt.buffer<f32, [1, 2, 4, 8]>, %vc : !hrt.buffer<f32, [1, 2, 4, 8]> into %out : !hrt.buffer<f32, [1, 2, 1, 8]> {causal = true, scale = 1.0 : f64, sliding_window = 0 : i64}
}
