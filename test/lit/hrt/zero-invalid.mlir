// Errors of #hrt.shard and of the ZeRO passes, one case each.
// RUN: hybridc-opt %s --split-input-file --verify-diagnostics --hrt-zero-partition="stage=1 world-size=4"
// RUN: not hybridc-opt %s --split-input-file --hrt-zero-partition="stage=4 world-size=4" 2>&1 | FileCheck %s --check-prefix=STAGE
// RUN: not hybridc-opt %s --split-input-file --hrt-zero-partition="stage=1 world-size=0" 2>&1 | FileCheck %s --check-prefix=RANKS
// RUN: not hybridc-opt %s --split-input-file --hrt-zero-partition="stage=3 world-size=4 max-reuse-distance=-1" 2>&1 | FileCheck %s --check-prefix=REUSE
// RUN: not hybridc-opt %s --split-input-file --hrt-zero-prefetch="bucket-size=-1" 2>&1 | FileCheck %s --check-prefix=BUCKET
// STAGE: error: hrt-zero-partition: stage must be 0, 1, 2 or 3, got 4
// RANKS: error: hrt-zero-partition: world-size must be >= 1, got 0
// REUSE: error: hrt-zero-partition: max-reuse-distance must be >= 0, got -1
// BUCKET: error: hrt-zero-prefetch: bucket-size must be >= 0, got -1

// A sharded buffer is its rank's piece: ceil(768 * 768 / 4) elements.
hrt.executable @piece symbols [] params read {
  // expected-error @+1 {{parameter 'w' is sharded as #hrt.shard<4 x [768, 768]>: its buffer must be [147456], got '!hrt.buffer<f32, [768, 768]>'}}
  %w = hrt.param "w" {shard = #hrt.shard<4 x [768, 768]>} : !hrt.buffer<f32, [768, 768]>
}

// -----

hrt.executable @state_piece symbols [] params read {
  // expected-error @+1 {{state 'opt.exp_avg.b' is sharded as #hrt.shard<4 x [3]>: its buffer must be [1], got '!hrt.buffer<f32, [3]>'}}
  %m = hrt.state "opt.exp_avg.b" read {shard = #hrt.shard<4 x [3]>} : !hrt.buffer<f32, [3]>
}

// -----

hrt.executable @no_ranks symbols [] params read {
  // expected-error @+1 {{shard world size must be >= 1, got 0}}
  %w = hrt.param "w" {shard = #hrt.shard<0 x [8]>} : !hrt.buffer<f32, [8]>
}

// -----

hrt.executable @negative symbols [] params read {
  // expected-error @+1 {{shard shape has a negative dim (-8)}}
  %w = hrt.param "w" {shard = #hrt.shard<4 x [-8]>} : !hrt.buffer<f32, [2]>
}

// -----

// A tensor input is the rank's own data, not the same on every rank: it
// has no piece of it to keep in the sharded moment.
hrt.executable @whole_into_shard symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [8]>
  %w = hrt.param "w" : !hrt.buffer<f32, [8]>
  %m = hrt.state "opt.exp_avg.w" read_write : !hrt.buffer<f32, [8]>
  // expected-error @+1 {{hrt-zero-partition: @whole_into_shard: writes a whole tensor into state 'opt.exp_avg.w', which holds a shard at ZeRO stage 1}}
  hrt.copy %x : !hrt.buffer<f32, [8]> into %m : !hrt.buffer<f32, [8]>
}

// -----

// Partitioning changes buffers: it comes before memory planning.
// expected-error @+1 {{hrt-zero-partition: @planned has a memory plan already (partition before hrt-plan-memory)}}
hrt.executable @planned symbols [] params read attributes {alignment = 256 : i64, workspace = 0 : i64} {
  %w = hrt.param "w" : !hrt.buffer<f32, [8]>
}
