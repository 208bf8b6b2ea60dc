// hrt-zero-prefetch: parameter all_gathers (ZeRO-3, world size 4) move
// ahead of their use onto stream 1, in order, as long as the gathers in
// flight (issued, not yet used) hold at most bucket-size elements. Each of
// a, b, c, d gathers 4096 elements; a linear uses each, a relu separates
// them.
// RUN: hybridc-opt %s --hrt-zero-prefetch="bucket-size=8192" | FileCheck %s --check-prefix=TWO
// RUN: hybridc-opt %s --hrt-zero-prefetch="bucket-size=4096" | FileCheck %s --check-prefix=ONE
// RUN: hybridc-opt %s --hrt-zero-prefetch="bucket-size=4095" | FileCheck %s --check-prefix=NONE

// Two in flight: b goes right after a, at the start (no event to wait for:
// only gathers come before it); c is issued once a is used, d once b is.
// Stream 1 waits for an event stream 0 records where the gather is issued
// (its buffer may reuse memory that stream 0 used before that point), and
// stream 0 waits for the gather's event right before the use. Event ids
// are reused once waited for.
// TWO-LABEL: hrt.executable @forward
// TWO: %[[A:.+]] = hrt.param "a"
// TWO: %[[B:.+]] = hrt.param "b"
// TWO: %[[C:.+]] = hrt.param "c"
// TWO: %[[D:.+]] = hrt.param "d"
// TWO: hrt.collective all_gather %[[A]] : <f32, [1024]> into %[[AW:.+]] : <f32, [64, 64]> over %{{.+}}{{$}}
// TWO-NEXT: hrt.collective all_gather %[[B]] : <f32, [1024]> into %[[BW:.+]] : <f32, [64, 64]> over %{{.+}} {stream = 1 : i32}
// TWO-NEXT: hrt.record_event 0 {stream = 1 : i32}
// TWO-NEXT: hrt.linear %{{.+}}, %[[AW]]
// TWO-NEXT: hrt.record_event 1{{$}}
// TWO-NEXT: hrt.wait_event 1 {stream = 1 : i32}
// TWO-NEXT: hrt.collective all_gather %[[C]] : <f32, [1024]> into %[[CW:.+]] : <f32, [64, 64]> over %{{.+}} {stream = 1 : i32}
// TWO-NEXT: hrt.record_event 1 {stream = 1 : i32}
// TWO-NEXT: hrt.unary relu
// TWO-NEXT: hrt.wait_event 0{{$}}
// TWO-NEXT: hrt.linear %{{.+}}, %[[BW]]
// TWO-NEXT: hrt.record_event 0{{$}}
// TWO-NEXT: hrt.wait_event 0 {stream = 1 : i32}
// TWO-NEXT: hrt.collective all_gather %[[D]] : <f32, [1024]> into %[[DW:.+]] : <f32, [64, 64]> over %{{.+}} {stream = 1 : i32}
// TWO-NEXT: hrt.record_event 0 {stream = 1 : i32}
// TWO-NEXT: hrt.unary relu
// TWO-NEXT: hrt.wait_event 1{{$}}
// TWO-NEXT: hrt.linear %{{.+}}, %[[CW]]
// TWO-NEXT: hrt.unary relu
// TWO-NEXT: hrt.wait_event 0{{$}}
// TWO-NEXT: hrt.linear %{{.+}}, %[[DW]]

// One in flight: each gather starts once the previous parameter is used,
// a relu ahead of its own use.
// ONE-LABEL: hrt.executable @forward
// ONE: hrt.collective all_gather %{{.+}} over %{{.+}}{{$}}
// ONE-NEXT: hrt.linear
// ONE-NEXT: hrt.record_event 0{{$}}
// ONE-NEXT: hrt.wait_event 0 {stream = 1 : i32}
// ONE-NEXT: hrt.collective all_gather %{{.+}} {stream = 1 : i32}
// ONE-NEXT: hrt.record_event 0 {stream = 1 : i32}
// ONE-NEXT: hrt.unary relu
// ONE-NEXT: hrt.wait_event 0{{$}}
// ONE-NEXT: hrt.linear
// ONE-COUNT-2: hrt.collective all_gather %{{.+}} {stream = 1 : i32}

// A gather larger than the bucket stays where it is.
// NONE-LABEL: hrt.executable @forward
// NONE-NOT: stream = 1
// NONE-NOT: _event
hrt.executable @forward symbols ["n"] params read {
  %comm = hrt.communicator "data_parallel"
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 64]>
  %a = hrt.param "a" {shard = #hrt.shard<4 x [64, 64]>} : !hrt.buffer<f32, [1024]>
  %b = hrt.param "b" {shard = #hrt.shard<4 x [64, 64]>} : !hrt.buffer<f32, [1024]>
  %c = hrt.param "c" {shard = #hrt.shard<4 x [64, 64]>} : !hrt.buffer<f32, [1024]>
  %d = hrt.param "d" {shard = #hrt.shard<4 x [64, 64]>} : !hrt.buffer<f32, [1024]>
  %y = hrt.output "y" : !hrt.buffer<f32, [n, 64]>
  %aw = hrt.alloc : !hrt.buffer<f32, [64, 64]>
  %h1 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %r1 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %bw = hrt.alloc : !hrt.buffer<f32, [64, 64]>
  %h2 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %r2 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %cw = hrt.alloc : !hrt.buffer<f32, [64, 64]>
  %h3 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %r3 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  %dw = hrt.alloc : !hrt.buffer<f32, [64, 64]>
  hrt.collective all_gather %a : !hrt.buffer<f32, [1024]> into %aw : !hrt.buffer<f32, [64, 64]> over %comm
  hrt.linear %x : !hrt.buffer<f32, [n, 64]>, %aw : !hrt.buffer<f32, [64, 64]> into %h1 : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
  hrt.unary relu %h1 : !hrt.buffer<f32, [n, 64]> into %r1 : !hrt.buffer<f32, [n, 64]>
  hrt.collective all_gather %b : !hrt.buffer<f32, [1024]> into %bw : !hrt.buffer<f32, [64, 64]> over %comm
  hrt.linear %r1 : !hrt.buffer<f32, [n, 64]>, %bw : !hrt.buffer<f32, [64, 64]> into %h2 : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
  hrt.unary relu %h2 : !hrt.buffer<f32, [n, 64]> into %r2 : !hrt.buffer<f32, [n, 64]>
  hrt.collective all_gather %c : !hrt.buffer<f32, [1024]> into %cw : !hrt.buffer<f32, [64, 64]> over %comm
  hrt.linear %r2 : !hrt.buffer<f32, [n, 64]>, %cw : !hrt.buffer<f32, [64, 64]> into %h3 : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
  hrt.unary relu %h3 : !hrt.buffer<f32, [n, 64]> into %r3 : !hrt.buffer<f32, [n, 64]>
  hrt.collective all_gather %d : !hrt.buffer<f32, [1024]> into %dw : !hrt.buffer<f32, [64, 64]> over %comm
  hrt.linear %r3 : !hrt.buffer<f32, [n, 64]>, %dw : !hrt.buffer<f32, [64, 64]> into %y : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
}
