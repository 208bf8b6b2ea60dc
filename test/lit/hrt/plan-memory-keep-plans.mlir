// hrt-plan-memory keep-plans: an executable that has a workspace already (a
// planned module given to hybridc) keeps its plan; the others are planned.
// Without the option every executable is planned again.
// RUN: hybridc-opt %s --hrt-plan-memory=keep-plans=true | FileCheck %s
// RUN: hybridc-opt %s --hrt-plan-memory | FileCheck %s --check-prefix=REPLAN

// CHECK-LABEL: hrt.executable @planned
// CHECK-SAME: workspace = 4096 : i64
// CHECK: hrt.input "x" {offset = 1024 : i64}
// CHECK: hrt.output "y" {offset = 2048 : i64}
// CHECK-LABEL: hrt.executable @unplanned
// CHECK-SAME: workspace = 512 : i64
// CHECK: hrt.input "x" {offset = 0 : i64}
// CHECK: hrt.output "y" {offset = 256 : i64}

// REPLAN-LABEL: hrt.executable @planned
// REPLAN-SAME: workspace = 512 : i64
// REPLAN: hrt.input "x" {offset = 0 : i64}
hrt.executable @planned symbols [] params read attributes {alignment = 256 : i64, workspace = 4096 : i64} {
  %x = hrt.input "x" {offset = 1024 : i64} : !hrt.buffer<f32, [10]>
  %y = hrt.output "y" {offset = 2048 : i64} : !hrt.buffer<f32, [10]>
  hrt.unary neg %x : !hrt.buffer<f32, [10]> into %y : !hrt.buffer<f32, [10]>
}
hrt.executable @unplanned symbols [] params read {
  %x = hrt.input "x" : !hrt.buffer<f32, [10]>
  %y = hrt.output "y" : !hrt.buffer<f32, [10]>
  hrt.unary neg %x : !hrt.buffer<f32, [10]> into %y : !hrt.buffer<f32, [10]>
}
