// hrt-zero-partition at world size 4, stages 0 to 3, on a training module
// shaped like hg-adamw's after lowering: @forward_backward adds a gradient
// of w (768 x 768) to its accumulator, @step scales it, takes the global
// norm, updates AdamW's first moment in place and writes w. A shard of a
// 768 x 768 tensor is 589824 / 4 = 147456 elements.
// RUN: hybridc-opt %s --hrt-zero-partition="stage=0 world-size=4" | FileCheck %s --check-prefix=S0
// RUN: hybridc-opt %s --hrt-zero-partition="stage=1 world-size=4" | FileCheck %s --check-prefix=S1
// RUN: hybridc-opt %s --hrt-zero-partition="stage=2 world-size=4" | FileCheck %s --check-prefix=S2
// RUN: hybridc-opt %s --hrt-zero-partition="stage=3 world-size=4" | FileCheck %s --check-prefix=S3

// Stage 0 (data parallel): gradients accumulate locally; @step all-reduces
// the accumulator into a whole buffer and takes the mean (times 1/4) before
// its first use. Nothing is sharded.
// S0: module attributes {hrt.world_size = 4 : i64, hrt.zero_stage = 0 : i64}
// S0-LABEL: hrt.executable @forward_backward
// S0-NOT: hrt.collective
// S0: hrt.binary add %[[ACC:.+]] : <f32, [768, 768]>, %{{.+}} : <f32, [768, 768]> into %[[ACC]]
// S0-LABEL: hrt.executable @step
// S0: %[[COMM:.+]] = hrt.communicator "data_parallel"
// S0: %[[QUARTER:.+]] = hrt.constant dense<2.500000e-01> : tensor<1xf32>
// S0: %[[SACC:.+]] = hrt.state "opt.grad.w" read : <f32, [768, 768]>
// S0: hrt.state "opt.exp_avg.w" read_write : <f32, [768, 768]>
// S0: hrt.collective all_reduce %[[SACC]] : <f32, [768, 768]> into %[[MEAN:.+]] : <f32, [768, 768]> over %[[COMM]]
// S0-NEXT: hrt.binary mul %[[MEAN]] : <f32, [768, 768]>, %[[QUARTER]] : <f32, [1]> into %[[MEAN]]
// S0-NEXT: hrt.binary mul %[[MEAN]] : <f32, [768, 768]>
// S0-NOT: hrt.collective
// S0: hrt.unary sqrt
// S0-NOT: hrt.collective
// S0: hrt.copy

// Stage 1: AdamW's moment is sharded. @forward_backward still accumulates
// whole gradients locally; @step reduce-scatters the accumulator, runs the
// optimizer on this rank's shard, all-reduces the shard's sum of squares
// before the square root (the global norm), takes this rank's piece of w
// (every rank holds w whole: no communication), updates it and all-gathers
// the updated w.
// S1-LABEL: hrt.executable @forward_backward
// S1-NOT: hrt.collective
// S1: hrt.state "opt.grad.w" read_write : <f32, [768, 768]>
// S1-NOT: hrt.collective
// S1-LABEL: hrt.executable @step
// S1: %[[COMM:.+]] = hrt.communicator "data_parallel"
// S1: %[[QUARTER:.+]] = hrt.constant dense<2.500000e-01>
// S1: %[[W:.+]] = hrt.param "w" : <f32, [768, 768]>
// S1: %[[SACC:.+]] = hrt.state "opt.grad.w" read : <f32, [768, 768]>
// S1: %[[M:.+]] = hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [768, 768]>} : <f32, [147456]>
// S1: hrt.collective reduce_scatter %[[SACC]] : <f32, [768, 768]> into %[[RS:.+]] : <f32, [147456]> over %[[COMM]]
// S1-NEXT: hrt.binary mul %[[RS]] : <f32, [147456]>, %[[QUARTER]] : <f32, [1]> into %[[RS]]
// S1-NEXT: hrt.binary mul %[[RS]] : <f32, [147456]>, %{{.+}} : <f32, [1]> into %[[G:.+]] : <f32, [147456]>
// S1: hrt.binary mul %[[G]] : <f32, [147456]>, %[[G]] : <f32, [147456]> into %[[SQ:.+]] : <f32, [147456]>
// S1: hrt.reduce sum %[[SQ]] : <f32, [147456]> into %{{.+}} : <f32, []> {axes = array<i64>, keepdims = false}
// S1: hrt.binary add %{{.+}} : <f32, [1]>, %{{.+}} : <f32, [1]> into %[[PART:.+]] : <f32, [1]>
// S1-NEXT: %[[TOTAL:.+]] = hrt.alloc : <f32, [1]>
// S1-NEXT: hrt.collective all_reduce %[[PART]] : <f32, [1]> into %[[TOTAL]] : <f32, [1]> over %[[COMM]]
// S1-NEXT: hrt.unary sqrt %[[TOTAL]]
// S1: hrt.binary add %{{.+}} : <f32, [147456]>, %[[G]] : <f32, [147456]> into %[[M]] : <f32, [147456]>
// S1: hrt.binary mul %{{.+}} : <f32, [1]>, %[[M]] : <f32, [147456]> into %[[U:.+]] : <f32, [147456]>
// S1: hrt.collective shard %[[W]] : <f32, [768, 768]> into %[[PIECE:.+]] : <f32, [147456]> over %[[COMM]]
// S1-NEXT: hrt.binary sub %[[PIECE]] : <f32, [147456]>, %[[U]] : <f32, [147456]> into %[[W2:.+]] : <f32, [147456]>
// S1-NEXT: hrt.collective all_gather %[[W2]] : <f32, [147456]> into %[[W]] : <f32, [768, 768]> over %[[COMM]]
// S1-NEXT: }

// Stage 2: the accumulator is sharded too. Each gradient is
// reduce-scattered right after the command that computes it, and the
// addition to the accumulator moves up with it (before the loss), so the
// whole gradient is free at once. @step runs on the shards it reads.
// S2-LABEL: hrt.executable @forward_backward
// S2: %[[COMM:.+]] = hrt.communicator "data_parallel"
// S2: %[[QUARTER:.+]] = hrt.constant dense<2.500000e-01>
// S2: %[[ACC:.+]] = hrt.state "opt.grad.w" read_write {shard = #hrt.shard<4 x [768, 768]>} : <f32, [147456]>
// S2: hrt.matmul %{{.+}} into %[[GRAD:.+]] : <f32, [768, 768]>
// S2-NEXT: %[[RS:.+]] = hrt.alloc : <f32, [147456]>
// S2-NEXT: hrt.collective reduce_scatter %[[GRAD]] : <f32, [768, 768]> into %[[RS]] : <f32, [147456]> over %[[COMM]]
// S2-NEXT: hrt.binary mul %[[RS]] : <f32, [147456]>, %[[QUARTER]] : <f32, [1]> into %[[RS]]
// S2-NEXT: hrt.binary add %[[ACC]] : <f32, [147456]>, %[[RS]] : <f32, [147456]> into %[[ACC]]
// S2: hrt.reduce sum
// S2: hrt.copy
// S2-LABEL: hrt.executable @step
// S2: %[[SACC:.+]] = hrt.state "opt.grad.w" read {shard = #hrt.shard<4 x [768, 768]>} : <f32, [147456]>
// S2: hrt.state "opt.exp_avg.w" read_write {shard = #hrt.shard<4 x [768, 768]>} : <f32, [147456]>
// S2-NOT: reduce_scatter
// S2: hrt.binary mul %[[SACC]] : <f32, [147456]>, %{{.+}} : <f32, [1]> into %{{.+}} : <f32, [147456]>
// S2: hrt.collective all_reduce %{{.+}} : <f32, [1]>
// S2-NEXT: hrt.unary sqrt
// S2: hrt.collective shard
// S2-NEXT: hrt.binary sub
// S2-NEXT: hrt.collective all_gather %{{.+}} : <f32, [147456]> into %{{.+}} : <f32, [768, 768]>

// Stage 3: the weight store holds a shard of w; @forward_backward gathers
// it into a workspace buffer right before its first use (memory planning
// frees that buffer after its last use), and @step updates the shard in
// place: no all_gather there.
// S3-LABEL: hrt.executable @forward_backward
// S3: %[[COMM:.+]] = hrt.communicator "data_parallel"
// S3: %[[W:.+]] = hrt.param "w" {shard = #hrt.shard<4 x [768, 768]>} : <f32, [147456]>
// S3: %[[WHOLE:.+]] = hrt.alloc : <f32, [768, 768]>
// S3-NEXT: hrt.collective all_gather %[[W]] : <f32, [147456]> into %[[WHOLE]] : <f32, [768, 768]> over %[[COMM]]
// S3-NEXT: hrt.linear %{{.+}} : <f32, [n, 768]>, %[[WHOLE]] : <f32, [768, 768]> into
// S3: hrt.matmul
// S3-NEXT: hrt.alloc : <f32, [147456]>
// S3-NEXT: hrt.collective reduce_scatter
// S3-LABEL: hrt.executable @step
// S3: %[[SW:.+]] = hrt.param "w" {shard = #hrt.shard<4 x [768, 768]>} : <f32, [147456]>
// S3-NOT: all_gather
// S3: hrt.binary sub %[[SW]] : <f32, [147456]>, %{{.+}} : <f32, [147456]> into %[[W2:.+]] : <f32, [147456]>
// S3-NEXT: hrt.copy %[[W2]] : <f32, [147456]> into %[[SW]] : <f32, [147456]>
// S3-NOT: hrt.collective

// @forward_backward: the gradient of w (a matmul) added to its accumulator
// after the loss is written.
hrt.executable @forward_backward symbols ["n"] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [n, 768]>
  %w = hrt.param "w" : !hrt.buffer<f32, [768, 768]>
  %acc = hrt.state "opt.grad.w" read_write : !hrt.buffer<f32, [768, 768]>
  %loss = hrt.output "loss" : !hrt.buffer<f32, [1]>
  %y = hrt.alloc : !hrt.buffer<f32, [n, 768]>
  hrt.linear %x : !hrt.buffer<f32, [n, 768]>, %w : !hrt.buffer<f32, [768, 768]> into %y : !hrt.buffer<f32, [n, 768]> {transpose_weight = false}
  %xt = hrt.alloc : !hrt.buffer<f32, [768, n]>
  hrt.transpose %x : !hrt.buffer<f32, [n, 768]> into %xt : !hrt.buffer<f32, [768, n]> {perm = array<i64: 1, 0>}
  %g = hrt.alloc : !hrt.buffer<f32, [768, 768]>
  hrt.matmul %xt : !hrt.buffer<f32, [768, n]>, %y : !hrt.buffer<f32, [n, 768]> into %g : !hrt.buffer<f32, [768, 768]>
  %s = hrt.alloc : !hrt.buffer<f32, []>
  hrt.reduce sum %y : !hrt.buffer<f32, [n, 768]> into %s : !hrt.buffer<f32, []> {axes = array<i64>, keepdims = false}
  %sv = hrt.view %s : !hrt.buffer<f32, []> to !hrt.buffer<f32, [1]>
  hrt.copy %sv : !hrt.buffer<f32, [1]> into %loss : !hrt.buffer<f32, [1]>
  hrt.binary add %acc : !hrt.buffer<f32, [768, 768]>, %g : !hrt.buffer<f32, [768, 768]> into %acc : !hrt.buffer<f32, [768, 768]>
}

// @step: the gradient scaled, its global norm, the first moment (in place),
// the update of w.
hrt.executable @step symbols [] params read_write {
  %w = hrt.param "w" : !hrt.buffer<f32, [768, 768]>
  %scale = hrt.input "grad_scale" {default_value = 1.0 : f64} : !hrt.buffer<f32, [1]>
  %lr = hrt.input "lr" {default_value = 1.0e-3 : f64} : !hrt.buffer<f32, [1]>
  %b1 = hrt.input "beta1" {default_value = 0.9 : f64} : !hrt.buffer<f32, [1]>
  %acc = hrt.state "opt.grad.w" read : !hrt.buffer<f32, [768, 768]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [768, 768]>
  %norm = hrt.output "grad_norm" : !hrt.buffer<f32, [1]>
  %zero = hrt.constant dense<0.0> : tensor<1xf32> : !hrt.buffer<f32, [1]>
  %g = hrt.alloc : !hrt.buffer<f32, [768, 768]>
  hrt.binary mul %acc : !hrt.buffer<f32, [768, 768]>, %scale : !hrt.buffer<f32, [1]> into %g : !hrt.buffer<f32, [768, 768]>
  %sq = hrt.alloc : !hrt.buffer<f32, [768, 768]>
  hrt.binary mul %g : !hrt.buffer<f32, [768, 768]>, %g : !hrt.buffer<f32, [768, 768]> into %sq : !hrt.buffer<f32, [768, 768]>
  %sum = hrt.alloc : !hrt.buffer<f32, []>
  hrt.reduce sum %sq : !hrt.buffer<f32, [768, 768]> into %sum : !hrt.buffer<f32, []> {axes = array<i64: 0, 1>, keepdims = false}
  %sumv = hrt.view %sum : !hrt.buffer<f32, []> to !hrt.buffer<f32, [1]>
  %total = hrt.alloc : !hrt.buffer<f32, [1]>
  hrt.binary add %sumv : !hrt.buffer<f32, [1]>, %zero : !hrt.buffer<f32, [1]> into %total : !hrt.buffer<f32, [1]>
  hrt.unary sqrt %total : !hrt.buffer<f32, [1]> into %norm : !hrt.buffer<f32, [1]>
  %bm = hrt.alloc : !hrt.buffer<f32, [768, 768]>
  hrt.binary mul %b1 : !hrt.buffer<f32, [1]>, %m : !hrt.buffer<f32, [768, 768]> into %bm : !hrt.buffer<f32, [768, 768]>
  hrt.binary add %bm : !hrt.buffer<f32, [768, 768]>, %g : !hrt.buffer<f32, [768, 768]> into %m : !hrt.buffer<f32, [768, 768]>
  %u = hrt.alloc : !hrt.buffer<f32, [768, 768]>
  hrt.binary mul %lr : !hrt.buffer<f32, [1]>, %m : !hrt.buffer<f32, [768, 768]> into %u : !hrt.buffer<f32, [768, 768]>
  %w2 = hrt.alloc : !hrt.buffer<f32, [768, 768]>
  hrt.binary sub %w : !hrt.buffer<f32, [768, 768]>, %u : !hrt.buffer<f32, [768, 768]> into %w2 : !hrt.buffer<f32, [768, 768]>
  hrt.copy %w2 : !hrt.buffer<f32, [768, 768]> into %w : !hrt.buffer<f32, [768, 768]>
}
