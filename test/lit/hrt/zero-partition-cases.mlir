// hrt-zero-partition, one behaviour per case at world size 4: padding of a
// tensor whose size is no multiple of 4, a `grad.<param>` output feeding the
// optimizer, and when a parameter gathered at stage 3 is gathered again (and
// its buffer released).
// RUN: hybridc-opt %s --split-input-file --hrt-zero-partition="stage=3 world-size=4" | FileCheck %s
// RUN: hybridc-opt %s --split-input-file --hrt-zero-partition="stage=1 world-size=4" | FileCheck %s --check-prefix=S1
// RUN: hybridc-opt %s --split-input-file --hrt-zero-partition="stage=3 world-size=4 max-reuse-distance=4095" | FileCheck %s --check-prefix=REUSE
// RUN: hybridc-opt %s --split-input-file --hrt-zero-partition="stage=3 world-size=4 max-reuse-distance=0" --hrt-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: hybridc-opt %s --split-input-file --hrt-zero-partition="stage=0 world-size=4" | FileCheck %s --check-prefix=S0
// One rank: nothing changes.
// RUN: hybridc-opt %s --split-input-file --hrt-zero-partition="stage=3 world-size=1" | FileCheck %s --check-prefix=ONE
// ONE-NOT: hrt.world_size
// ONE-NOT: shard
// ONE-NOT: hrt.communicator
// ONE-NOT: hrt.collective

// b has 3 elements: padded to 4, a shard of 1. Its gather takes the first 3
// of the 4 gathered elements; its gradient is padded with a zero before the
// reduce-scatter. At stage 1 neither is sharded and nothing is
// communicated (the accumulation is local).
// CHECK-LABEL: hrt.executable @padded
// CHECK: %[[COMM:.+]] = hrt.communicator "data_parallel"
// CHECK: %[[B:.+]] = hrt.param "b" {shard = #hrt.shard<4 x [3]>} : <f32, [1]>
// CHECK: %[[ACC:.+]] = hrt.state "opt.grad.b" read_write {shard = #hrt.shard<4 x [3]>} : <f32, [1]>
// CHECK: %[[WHOLE:.+]] = hrt.alloc : <f32, [3]>
// CHECK-NEXT: %[[ALL:.+]] = hrt.alloc : <f32, [4]>
// CHECK-NEXT: hrt.collective all_gather %[[B]] : <f32, [1]> into %[[ALL]] : <f32, [4]> over %[[COMM]]
// CHECK-NEXT: hrt.slice %[[ALL]] : <f32, [4]> into %[[WHOLE]] : <f32, [3]> {axes = array<i64: 0>, ends = array<i64: 3>, starts = array<i64: 0>, steps = array<i64: 1>}
// CHECK-NEXT: hrt.binary add %{{.+}} : <f32, [n, 3]>, %[[WHOLE]] : <f32, [3]>
// CHECK: hrt.reduce sum %{{.+}} into %[[GRAD:.+]] : <f32, [3]>
// CHECK-NEXT: %[[PADDED:.+]] = hrt.alloc : <f32, [4]>
// CHECK-NEXT: %[[ZERO:.+]] = hrt.constant dense<0.000000e+00> : tensor<1xf32> : <f32, [1]>
// CHECK-NEXT: hrt.concat %[[GRAD]], %[[ZERO]] : !hrt.buffer<f32, [3]>, !hrt.buffer<f32, [1]> into %[[PADDED]] : <f32, [4]> {axis = 0 : i64}
// CHECK-NEXT: %[[RS:.+]] = hrt.alloc : <f32, [1]>
// CHECK-NEXT: hrt.collective reduce_scatter %[[PADDED]] : <f32, [4]> into %[[RS]] : <f32, [1]> over %[[COMM]]
// CHECK-NEXT: hrt.binary mul %[[RS]]
// CHECK-NEXT: hrt.binary add %[[ACC]] : <f32, [1]>, %[[RS]] : <f32, [1]> into %[[ACC]]
// S1-LABEL: hrt.executable @padded
// S1-NOT: hrt.collective
// S1: hrt.binary add %[[ACC:.+]] : <f32, [3]>, %{{.+}} : <f32, [3]> into %[[ACC]]
// S1-NEXT: }
hrt.executable @padded symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 3]>
  %b = hrt.param "b" : !hrt.buffer<f32, [3]>
  %acc = hrt.state "opt.grad.b" read_write : !hrt.buffer<f32, [3]>
  %y = hrt.alloc : !hrt.buffer<f32, [n, 3]>
  hrt.binary add %x : !hrt.buffer<f32, [n, 3]>, %b : !hrt.buffer<f32, [3]> into %y : !hrt.buffer<f32, [n, 3]>
  %g = hrt.alloc : !hrt.buffer<f32, [3]>
  hrt.reduce sum %y : !hrt.buffer<f32, [n, 3]> into %g : !hrt.buffer<f32, [3]> {axes = array<i64: 0>, keepdims = false}
  hrt.binary add %acc : !hrt.buffer<f32, [3]>, %g : !hrt.buffer<f32, [3]> into %acc : !hrt.buffer<f32, [3]>
}

// -----

// @train_step: the `grad.w` output holds this rank's gradient, and stays
// so; the optimizer reads its mean shard, reduce-scattered right before the
// first use. At stage 1 the rank takes its piece of w (which every rank
// holds whole), updates it and gathers w; at stage 3 w is a shard too and
// is only gathered for the forward.
// CHECK-LABEL: hrt.executable @train_step
// CHECK: %[[W:.+]] = hrt.param "w" {shard = #hrt.shard<4 x [8]>} : <f32, [2]>
// CHECK: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [8]>} : <f32, [2]>
// CHECK: %[[GRAD:.+]] = hrt.output "grad.w" : <f32, [8]>
// CHECK: hrt.collective all_gather %[[W]] : <f32, [2]> into %[[WW:.+]] : <f32, [8]>
// CHECK-NEXT: hrt.binary mul %{{.+}} : <f32, [n, 8]>, %[[WW]] : <f32, [8]>
// CHECK-NEXT: hrt.reduce sum %{{.+}} into %[[GRAD]] : <f32, [8]>
// CHECK: hrt.collective reduce_scatter %[[GRAD]] : <f32, [8]> into %[[RS:.+]] : <f32, [2]>
// CHECK-NEXT: hrt.binary mul %[[RS]]
// CHECK-NEXT: hrt.binary mul %{{.+}} : <f32, [1]>, %[[RS]] : <f32, [2]>
// CHECK: hrt.binary sub %[[W]] : <f32, [2]>, %[[M]] : <f32, [2]> into %[[W2:.+]] : <f32, [2]>
// CHECK-NEXT: hrt.copy %[[W2]] : <f32, [2]> into %[[W]] : <f32, [2]>
// S1-LABEL: hrt.executable @train_step
// S1: %[[W:.+]] = hrt.param "w" : <f32, [8]>
// S1: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [8]>} : <f32, [2]>
// S1: %[[GRAD:.+]] = hrt.output "grad.w" : <f32, [8]>
// S1: hrt.reduce sum %{{.+}} into %[[GRAD]] : <f32, [8]>
// S1: hrt.collective reduce_scatter %[[GRAD]] : <f32, [8]> into %[[RS:.+]] : <f32, [2]>
// S1: hrt.binary add %[[M]] : <f32, [2]>, %{{.+}} : <f32, [2]> into %[[M]] : <f32, [2]>
// S1: hrt.collective shard %[[W]] : <f32, [8]> into %[[PIECE:.+]] : <f32, [2]>
// S1-NEXT: hrt.binary sub %[[PIECE]] : <f32, [2]>, %[[M]] : <f32, [2]> into %[[W2:.+]] : <f32, [2]>
// S1-NEXT: hrt.collective all_gather %[[W2]] : <f32, [2]> into %[[W]] : <f32, [8]>
hrt.executable @train_step symbols ["n"] params read_write {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 8]>
  %c = hrt.input "beta1" {default_value = 0.9 : f64} : !hrt.buffer<f32, [1]>
  %w = hrt.param "w" : !hrt.buffer<f32, [8]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [8]>
  %grad = hrt.output "grad.w" : !hrt.buffer<f32, [8]>
  %y = hrt.alloc : !hrt.buffer<f32, [n, 8]>
  hrt.binary mul %x : !hrt.buffer<f32, [n, 8]>, %w : !hrt.buffer<f32, [8]> into %y : !hrt.buffer<f32, [n, 8]>
  hrt.reduce sum %y : !hrt.buffer<f32, [n, 8]> into %grad : !hrt.buffer<f32, [8]> {axes = array<i64: 0>, keepdims = false}
  %t = hrt.alloc : !hrt.buffer<f32, [8]>
  hrt.binary mul %c : !hrt.buffer<f32, [1]>, %grad : !hrt.buffer<f32, [8]> into %t : !hrt.buffer<f32, [8]>
  hrt.binary add %m : !hrt.buffer<f32, [8]>, %t : !hrt.buffer<f32, [8]> into %m : !hrt.buffer<f32, [8]>
  %w2 = hrt.alloc : !hrt.buffer<f32, [8]>
  hrt.binary sub %w : !hrt.buffer<f32, [8]>, %m : !hrt.buffer<f32, [8]> into %w2 : !hrt.buffer<f32, [8]>
  hrt.copy %w2 : !hrt.buffer<f32, [8]> into %w : !hrt.buffer<f32, [8]>
}

// -----

// a is used, then b (4096 elements), then a again through views. Within
// the default max-reuse-distance (1e9 elements) the buffer gathered for
// the first use serves the second; with 4095, b's 4096 elements in between
// are too many and a is gathered again (the first buffer is then free
// after its first use).
// CHECK-LABEL: hrt.executable @reuse
// CHECK: %[[A:.+]] = hrt.param "a" {shard = #hrt.shard<4 x [64, 64]>} : <f32, [1024]>
// CHECK: %[[B:.+]] = hrt.param "b" {shard = #hrt.shard<4 x [64, 64]>} : <f32, [1024]>
// CHECK: hrt.collective all_gather %[[A]] : <f32, [1024]> into %[[AW:.+]] : <f32, [64, 64]>
// CHECK-NEXT: hrt.linear %{{.+}}, %[[AW]]
// CHECK: hrt.collective all_gather %[[B]]
// CHECK-NEXT: hrt.linear
// CHECK-NOT: hrt.collective
// CHECK: hrt.linear %{{.+}} : <f32, [n, 64]>, %[[AW]] : <f32, [64, 64]>
// REUSE-LABEL: hrt.executable @reuse
// REUSE: hrt.collective all_gather %[[A:.+]] : <f32, [1024]> into %[[AW:.+]] : <f32, [64, 64]>
// REUSE-NEXT: hrt.linear %{{.+}}, %[[AW]]
// REUSE: hrt.collective all_gather
// REUSE-NEXT: hrt.linear
// REUSE: %[[AW2:.+]] = hrt.alloc : <f32, [64, 64]>
// REUSE-NEXT: hrt.collective all_gather %[[A]] : <f32, [1024]> into %[[AW2]] : <f32, [64, 64]>
// REUSE-NEXT: hrt.linear %{{.+}} : <f32, [n, 64]>, %[[AW2]] : <f32, [64, 64]>
// Gathered for each use, every gathered buffer is released after its use:
// memory planning gives the three of them one slot.
// PLAN-LABEL: hrt.executable @reuse
// PLAN: %[[A:.+]] = hrt.param "a"
// PLAN: %[[B:.+]] = hrt.param "b"
// PLAN: hrt.alloc {offset = "[[SLOT:.+]]"} : <f32, [64, 64]>
// PLAN-NEXT: hrt.collective all_gather %[[A]]
// PLAN: hrt.alloc {offset = "[[SLOT]]"} : <f32, [64, 64]>
// PLAN-NEXT: hrt.collective all_gather %[[B]]
// PLAN: hrt.alloc {offset = "[[SLOT]]"} : <f32, [64, 64]>
// PLAN-NEXT: hrt.collective all_gather %[[A]]
hrt.executable @reuse symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 64]>
  %a = hrt.param "a" : !hrt.buffer<f32, [64, 64]>
  %b = hrt.param "b" : !hrt.buffer<f32, [64, 64]>
  %y = hrt.output "y" : !hrt.buffer<f32, [n, 64]>
  %h1 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  hrt.linear %x : !hrt.buffer<f32, [n, 64]>, %a : !hrt.buffer<f32, [64, 64]> into %h1 : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
  %h2 = hrt.alloc : !hrt.buffer<f32, [n, 64]>
  hrt.linear %h1 : !hrt.buffer<f32, [n, 64]>, %b : !hrt.buffer<f32, [64, 64]> into %h2 : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
  %av = hrt.view %a : !hrt.buffer<f32, [64, 64]> to !hrt.buffer<f32, [4096]>
  %at = hrt.view %av : !hrt.buffer<f32, [4096]> to !hrt.buffer<f32, [64, 64]>
  hrt.linear %h2 : !hrt.buffer<f32, [n, 64]>, %at : !hrt.buffer<f32, [64, 64]> into %y : !hrt.buffer<f32, [n, 64]> {transpose_weight = true}
}

// -----

// A gradient copied into its accumulator (not added) is a rank's gradient
// too: at stage 2 it is reduce-scattered into the shard it is copied to.
// CHECK-LABEL: hrt.executable @first_micro_batch
// CHECK: %[[ACC:.+]] = hrt.state "opt.grad.v" read_write {shard = #hrt.shard<4 x [8]>} : <f32, [2]>
// CHECK: hrt.reduce sum %{{.+}} into %[[GRAD:.+]] : <f32, [8]>
// CHECK: hrt.collective reduce_scatter %[[GRAD]] : <f32, [8]> into %[[RS:.+]] : <f32, [2]>
// CHECK-NEXT: hrt.binary mul %[[RS]]
// CHECK-NEXT: hrt.copy %[[RS]] : <f32, [2]> into %[[ACC]] : <f32, [2]>
// S1-LABEL: hrt.executable @first_micro_batch
// S1-NOT: hrt.collective
hrt.executable @first_micro_batch symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 8]>
  %v = hrt.param "v" : !hrt.buffer<f32, [8]>
  %acc = hrt.state "opt.grad.v" read_write : !hrt.buffer<f32, [8]>
  %g = hrt.alloc : !hrt.buffer<f32, [8]>
  hrt.reduce sum %x : !hrt.buffer<f32, [n, 8]> into %g : !hrt.buffer<f32, [8]> {axes = array<i64: 0>, keepdims = false}
  hrt.copy %g : !hrt.buffer<f32, [8]> into %acc : !hrt.buffer<f32, [8]>
}

// -----

// Optimizer state that starts from the weights (bf16 weights' f32 masters,
// @init_optimizer): at stage 1 each rank cuts its piece of the parameter
// (no communication) and keeps its cast. The piece of a size that is no
// multiple of 4 is padded with zeros by the runtime.
// S1-LABEL: hrt.executable @init_optimizer
// S1: %[[V:.+]] = hrt.param "v" : <bf16, [6]>
// S1: %[[MASTER:.+]] = hrt.state "opt.master.v" read_write {shard = #hrt.shard<4 x [6]>} : <f32, [2]>
// S1: hrt.collective shard %[[V]] : <bf16, [6]> into %[[PIECE:.+]] : <bf16, [2]>
// S1-NEXT: hrt.cast %[[PIECE]] : <bf16, [2]> into %[[MASTER]] : <f32, [2]>
hrt.executable @init_optimizer symbols [] params read {
  %v = hrt.param "v" : !hrt.buffer<bf16, [6]>
  %master = hrt.state "opt.master.v" read_write : !hrt.buffer<f32, [6]>
  hrt.cast %v : !hrt.buffer<bf16, [6]> into %master : !hrt.buffer<f32, [6]>
}

// -----

// SGD's weight decay adds the (replicated) weights to a rank's gradient:
// the gradient is reduce-scattered, the weights cut to the rank's piece,
// and the momentum is a shard. (A rank's own data, an input, has no piece:
// zero-invalid.mlir.)
// S1-LABEL: hrt.executable @sgd_train_step
// S1: %[[U:.+]] = hrt.param "u" : <f32, [8]>
// S1: %[[BUF:.+]] = hrt.state "opt.momentum_buffer.u" read_write {shard = #hrt.shard<4 x [8]>} : <f32, [2]>
// S1: hrt.binary mul %{{.+}} : <f32, [1]>, %[[U]] : <f32, [8]> into %[[DECAY:.+]] : <f32, [8]>
// S1: hrt.collective reduce_scatter %[[GRAD:.+]] : <f32, [8]> into %[[RS:.+]] : <f32, [2]>
// S1: hrt.collective shard %[[DECAY]] : <f32, [8]> into %[[PIECE:.+]] : <f32, [2]>
// S1-NEXT: hrt.binary add %[[RS]] : <f32, [2]>, %[[PIECE]] : <f32, [2]> into %[[BUF]] : <f32, [2]>
hrt.executable @sgd_train_step symbols ["n"] params read_write {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 8]>
  %wd = hrt.input "weight_decay" {default_value = 0.0 : f64} : !hrt.buffer<f32, [1]>
  %u = hrt.param "u" : !hrt.buffer<f32, [8]>
  %buf = hrt.state "opt.momentum_buffer.u" read_write : !hrt.buffer<f32, [8]>
  %grad = hrt.output "grad.u" : !hrt.buffer<f32, [8]>
  hrt.reduce sum %x : !hrt.buffer<f32, [n, 8]> into %grad : !hrt.buffer<f32, [8]> {axes = array<i64: 0>, keepdims = false}
  %decay = hrt.alloc : !hrt.buffer<f32, [8]>
  hrt.binary mul %wd : !hrt.buffer<f32, [1]>, %u : !hrt.buffer<f32, [8]> into %decay : !hrt.buffer<f32, [8]>
  hrt.binary add %grad : !hrt.buffer<f32, [8]>, %decay : !hrt.buffer<f32, [8]> into %buf : !hrt.buffer<f32, [8]>
}

// -----

// A replicated tensor that no elementwise command makes (a transpose of the
// weights) filling sharded state: computed whole, the rank keeps its piece.
// S1-LABEL: hrt.executable @whole_into_state
// S1: %[[STATE:.+]] = hrt.state "opt.transposed.w" read_write {shard = #hrt.shard<4 x [4, 2]>} : <f32, [2]>
// S1: %[[WHOLE:.+]] = hrt.alloc : <f32, [4, 2]>
// S1-NEXT: hrt.transpose %{{.+}} : <f32, [2, 4]> into %[[WHOLE]] : <f32, [4, 2]>
// S1-NEXT: hrt.collective shard %[[WHOLE]] : <f32, [4, 2]> into %[[STATE]] : <f32, [2]>
hrt.executable @whole_into_state symbols [] params read {
  %w = hrt.param "w" : !hrt.buffer<f32, [2, 4]>
  %t = hrt.state "opt.transposed.w" read_write : !hrt.buffer<f32, [4, 2]>
  hrt.transpose %w : !hrt.buffer<f32, [2, 4]> into %t : !hrt.buffer<f32, [4, 2]> {perm = array<i64: 1, 0>}
}

// -----

// AdamW's fused update is elementwise with three results: it runs on the
// rank's piece of every tensor operand (the scalars whole) and writes the
// shards of the moments in place. Stage 1: the rank's piece of w is cut
// locally, the mean gradient reduce-scattered (padded: 6 elements), the
// new piece gathered into w. Stage 3: everything is a shard already; no
// collective. Stage 0: the gradient is all-reduced and the update runs on
// whole tensors.
// CHECK-LABEL: hrt.executable @adamw_update
// CHECK-DAG: %[[W:.+]] = hrt.param "w" {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK-DAG: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK-DAG: %[[V:.+]] = hrt.state "opt.exp_avg_sq.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK-DAG: %[[ACC:.+]] = hrt.state "opt.grad.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK-DAG: %[[B1:.+]] = hrt.input "beta1" : <f32, [1]>
// CHECK-NOT: hrt.collective
// CHECK: hrt.adamw_update %[[W]] : <f32, [2]>, %[[ACC]] : <f32, [2]> moments %[[M]] : <f32, [2]>, %[[V]] : <f32, [2]> betas %[[B1]] : <f32, [1]>, {{.+}} into %[[W2:[^ ]+]] : <f32, [2]>, %[[M]] : <f32, [2]>, %[[V]] : <f32, [2]>
// CHECK-NEXT: hrt.copy %[[W2]] : <f32, [2]> into %[[W]] : <f32, [2]>
// S1-LABEL: hrt.executable @adamw_update
// S1-DAG: %[[COMM:.+]] = hrt.communicator "data_parallel"
// S1-DAG: %[[W:.+]] = hrt.param "w" : <f32, [2, 3]>
// S1-DAG: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// S1-DAG: %[[V:.+]] = hrt.state "opt.exp_avg_sq.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// S1-DAG: %[[ACC:.+]] = hrt.state "opt.grad.w" read_write : <f32, [2, 3]>
// S1: %[[W2:.+]] = hrt.alloc : <f32, [2]>
// S1: hrt.collective shard %[[W]] : <f32, [2, 3]> into %[[PIECE:.+]] : <f32, [2]> over %[[COMM]]
// S1: hrt.collective reduce_scatter %{{.+}} : <f32, [8]> into %[[G:.+]] : <f32, [2]> over %[[COMM]]
// S1-NEXT: hrt.binary mul %[[G]]
// S1-NEXT: hrt.adamw_update %[[PIECE]] : <f32, [2]>, %[[G]] : <f32, [2]> moments %[[M]] : <f32, [2]>, %[[V]] : <f32, [2]> {{.+}} into %[[W2]] : <f32, [2]>, %[[M]] : <f32, [2]>, %[[V]] : <f32, [2]>
// S1-NEXT: %[[ALL:.+]] = hrt.alloc : <f32, [8]>
// S1-NEXT: hrt.collective all_gather %[[W2]] : <f32, [2]> into %[[ALL]] : <f32, [8]> over %[[COMM]]
// S1-NEXT: %[[FLAT:.+]] = hrt.view %[[W]] : <f32, [2, 3]> to <f32, [6]>
// S1-NEXT: hrt.slice %[[ALL]] : <f32, [8]> into %[[FLAT]] : <f32, [6]>
// S0-LABEL: hrt.executable @adamw_update
// S0: hrt.collective all_reduce %[[ACC:.+]] : <f32, [2, 3]> into %[[MEAN:.+]] : <f32, [2, 3]>
// S0-NEXT: hrt.binary mul %[[MEAN]]
// S0-NEXT: hrt.adamw_update %{{.+}} : <f32, [2, 3]>, %[[MEAN]] : <f32, [2, 3]> moments
hrt.executable @adamw_update symbols [] params read_write {
  %w = hrt.param "w" : !hrt.buffer<f32, [2, 3]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [2, 3]>
  %v = hrt.state "opt.exp_avg_sq.w" read_write : !hrt.buffer<f32, [2, 3]>
  %acc = hrt.state "opt.grad.w" read_write : !hrt.buffer<f32, [2, 3]>
  %b1 = hrt.input "beta1" : !hrt.buffer<f32, [1]>
  %b2 = hrt.input "beta2" : !hrt.buffer<f32, [1]>
  %eps = hrt.input "eps" : !hrt.buffer<f32, [1]>
  %size = hrt.input "step_size" : !hrt.buffer<f32, [1]>
  %root = hrt.input "root" : !hrt.buffer<f32, [1]>
  %decay = hrt.input "decay" : !hrt.buffer<f32, [1]>
  %w2 = hrt.alloc : !hrt.buffer<f32, [2, 3]>
  hrt.adamw_update %w : !hrt.buffer<f32, [2, 3]>, %acc : !hrt.buffer<f32, [2, 3]> moments %m : !hrt.buffer<f32, [2, 3]>, %v : !hrt.buffer<f32, [2, 3]> betas %b1 : !hrt.buffer<f32, [1]>, %b2 : !hrt.buffer<f32, [1]> eps %eps : !hrt.buffer<f32, [1]> step_size %size : !hrt.buffer<f32, [1]> bias_correction2_sqrt %root : !hrt.buffer<f32, [1]> decay_factor %decay : !hrt.buffer<f32, [1]> into %w2 : !hrt.buffer<f32, [2, 3]>, %m : !hrt.buffer<f32, [2, 3]>, %v : !hrt.buffer<f32, [2, 3]>
  hrt.copy %w2 : !hrt.buffer<f32, [2, 3]> into %w : !hrt.buffer<f32, [2, 3]>
}

// -----

// Mixed precision: the update reads the bf16 gradient (its mean shard,
// reduce-scattered) and writes the bf16 working weight as its fourth out,
// placed as a cast's result was: a shard of the master's layout, copied
// into w's shard (stage 3) or gathered into w (stage 1); whole at stage 0.
// CHECK-LABEL: hrt.executable @adamw_update_working
// CHECK-DAG: %[[COMM:.+]] = hrt.communicator "data_parallel"
// CHECK-DAG: %[[W:.+]] = hrt.param "w" {shard = #hrt.shard<4 x [2, 3]>} : <bf16, [2]>
// CHECK-DAG: %[[MASTER:.+]] = hrt.state "opt.master.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK-DAG: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK-DAG: %[[V:.+]] = hrt.state "opt.exp_avg_sq.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// CHECK: %[[W2:.+]] = hrt.alloc : <bf16, [2]>
// CHECK: hrt.collective reduce_scatter %{{.+}} : <bf16, [8]> into %[[G:.+]] : <bf16, [2]> over %[[COMM]]
// CHECK-NEXT: hrt.binary mul %[[G]]
// CHECK-NEXT: hrt.adamw_update %[[MASTER]] : <f32, [2]>, %[[G]] : <bf16, [2]> moments %[[M]] : <f32, [2]>, %[[V]] : <f32, [2]> {{.+}} into %[[MASTER]] : <f32, [2]>, %[[M]] : <f32, [2]>, %[[V]] : <f32, [2]> working %[[W2]] : !hrt.buffer<bf16, [2]>
// CHECK-NEXT: hrt.copy %[[W2]] : <bf16, [2]> into %[[W]] : <bf16, [2]>
// S1-LABEL: hrt.executable @adamw_update_working
// S1-DAG: %[[COMM:.+]] = hrt.communicator "data_parallel"
// S1-DAG: %[[W:.+]] = hrt.param "w" : <bf16, [2, 3]>
// S1-DAG: %[[MASTER:.+]] = hrt.state "opt.master.w" read_write {shard = #hrt.shard<4 x [2, 3]>} : <f32, [2]>
// S1: %[[W2:.+]] = hrt.alloc : <bf16, [2]>
// S1: hrt.collective reduce_scatter %{{.+}} : <bf16, [8]> into %[[G:.+]] : <bf16, [2]> over %[[COMM]]
// S1-NEXT: hrt.binary mul %[[G]]
// S1-NEXT: hrt.adamw_update %[[MASTER]] : <f32, [2]>, %[[G]] : <bf16, [2]> moments {{.+}} into %[[MASTER]] : <f32, [2]>, {{.+}} working %[[W2]] : !hrt.buffer<bf16, [2]>
// S1-NEXT: %[[ALL:.+]] = hrt.alloc : <bf16, [8]>
// S1-NEXT: hrt.collective all_gather %[[W2]] : <bf16, [2]> into %[[ALL]] : <bf16, [8]> over %[[COMM]]
// S1-NEXT: %[[FLAT:.+]] = hrt.view %[[W]] : <bf16, [2, 3]> to <bf16, [6]>
// S1-NEXT: hrt.slice %[[ALL]] : <bf16, [8]> into %[[FLAT]] : <bf16, [6]>
// S0-LABEL: hrt.executable @adamw_update_working
// S0: hrt.collective all_reduce %{{.+}} : <bf16, [2, 3]> into %[[MEAN:.+]] : <bf16, [2, 3]>
// S0-NEXT: hrt.binary mul %[[MEAN]]
// S0-NEXT: hrt.adamw_update %{{.+}} : <f32, [2, 3]>, %[[MEAN]] : <bf16, [2, 3]> moments {{.+}} working %[[W2:[^ ]+]] : !hrt.buffer<bf16, [2, 3]>
// S0-NEXT: hrt.copy %[[W2]] : <bf16, [2, 3]> into %{{.+}} : <bf16, [2, 3]>
hrt.executable @adamw_update_working symbols ["n"] params read_write {
  %x = hrt.input "x" : !hrt.buffer<bf16, [n, 2, 3]>
  %w = hrt.param "w" : !hrt.buffer<bf16, [2, 3]>
  %master = hrt.state "opt.master.w" read_write : !hrt.buffer<f32, [2, 3]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [2, 3]>
  %v = hrt.state "opt.exp_avg_sq.w" read_write : !hrt.buffer<f32, [2, 3]>
  %g = hrt.output "grad.w" : !hrt.buffer<bf16, [2, 3]>
  %s = hrt.input "s" : !hrt.buffer<f32, [1]>
  %y = hrt.alloc : !hrt.buffer<bf16, [n, 2, 3]>
  hrt.binary mul %x : !hrt.buffer<bf16, [n, 2, 3]>, %w : !hrt.buffer<bf16, [2, 3]> into %y : !hrt.buffer<bf16, [n, 2, 3]>
  hrt.reduce sum %y : !hrt.buffer<bf16, [n, 2, 3]> into %g : !hrt.buffer<bf16, [2, 3]> {axes = array<i64: 0>, keepdims = false}
  %w2 = hrt.alloc : !hrt.buffer<bf16, [2, 3]>
  hrt.adamw_update %master : !hrt.buffer<f32, [2, 3]>, %g : !hrt.buffer<bf16, [2, 3]> moments %m : !hrt.buffer<f32, [2, 3]>, %v : !hrt.buffer<f32, [2, 3]> betas %s : !hrt.buffer<f32, [1]>, %s : !hrt.buffer<f32, [1]> eps %s : !hrt.buffer<f32, [1]> step_size %s : !hrt.buffer<f32, [1]> bias_correction2_sqrt %s : !hrt.buffer<f32, [1]> decay_factor %s : !hrt.buffer<f32, [1]> into %master : !hrt.buffer<f32, [2, 3]>, %m : !hrt.buffer<f32, [2, 3]>, %v : !hrt.buffer<f32, [2, 3]> working %w2 : !hrt.buffer<bf16, [2, 3]>
  hrt.copy %w2 : !hrt.buffer<bf16, [2, 3]> into %w : !hrt.buffer<bf16, [2, 3]>
}
