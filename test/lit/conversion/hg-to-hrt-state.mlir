// convert-hg-to-hrt with state: arguments tagged hg.state become hrt.state
// (read_write when a result writes them back), results tagged hg.state are
// computed straight into the state buffer when nothing reads the old value
// later, else copied in at the end; positions expand into commands.
// RUN: hybridc-opt %s --split-input-file --convert-hg-to-hrt | FileCheck %s

// CHECK-LABEL: hrt.executable @step symbols ["batch", "cap", "seq"]
// CHECK-DAG: %[[PAST:.+]] = hrt.state "gen.past" read_write : <i64, [1]>
// CHECK-DAG: %[[CACHE:.+]] = hrt.state "kv.0.key" read_write : <f32, [batch, 4, cap, 8]>
// CHECK-DAG: %[[CFG:.+]] = hrt.state "gen.config" read : <i64, [4]>
// The cache write goes into the state itself (no copy of the cache).
// CHECK: hrt.cache_write %{{.+}} : <f32, [batch, 4, 1, 8]> at %[[PAST]] : <i64, [1]> into %[[CACHE]] : <f32, [batch, 4, cap, 8]> {axis = 2 : i64}
// past + 1 is computed in place: the cache write read the old value first.
// CHECK: hrt.binary add %[[PAST]] : <i64, [1]>, %{{.+}} into %[[PAST]]
// positions(mask) = select(mask == 0, 1, cumsum(mask) - 1)
// CHECK: hrt.cumsum
// CHECK: hrt.binary sub
// CHECK: hrt.binary equal
// CHECK: hrt.select
// CHECK-NOT: hrt.copy {{.+}} into %[[CACHE]]
module {
  func.func @step(%past: tensor<1xi64> {hg.state = "gen.past"},
                  %cache: tensor<?x4x?x8xf32> {hg.state = "kv.0.key", hg.dims = ["batch", "", "cap", ""]},
                  %cfg: tensor<4xi64> {hg.state = "gen.config"},
                  %k: tensor<?x4x1x8xf32> {hg.name = "k", hg.dims = ["batch"]},
                  %mask: tensor<?x?xi64> {hg.name = "mask", hg.dims = ["batch", "seq"]})
      -> (tensor<1xi64> {hg.state = "gen.past"}, tensor<?x4x?x8xf32> {hg.state = "kv.0.key"}, tensor<?x?xi64> {hg.name = "pos"}, tensor<4xi64> {hg.name = "cfg"}) {
    %c = hg.cache_write %cache, %k at %past {axis = 2 : i64} : (tensor<?x4x?x8xf32>, tensor<?x4x1x8xf32>, tensor<1xi64>) -> tensor<?x4x?x8xf32>
    %one = hg.constant dense<1> : tensor<1xi64>
    %s = hg.add %past, %one : tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
    %p = hg.positions %mask : tensor<?x?xi64> -> tensor<?x?xi64>
    return %s, %c, %p, %cfg : tensor<1xi64>, tensor<?x4x?x8xf32>, tensor<?x?xi64>, tensor<4xi64>
  }
}

// -----

// The new value is read after the old one: computed aside, copied in last.
// CHECK-LABEL: hrt.executable @late
// CHECK: %[[S:.+]] = hrt.state "n" read_write
// CHECK: %[[T:.+]] = hrt.alloc
// CHECK: hrt.binary add %[[S]] : <i64, [1]>, %{{.+}} into %[[T]]
// CHECK: hrt.binary mul %[[S]]
// CHECK: hrt.copy %[[T]] : <i64, [1]> into %[[S]]
module {
  func.func @late(%n: tensor<1xi64> {hg.state = "n"})
      -> (tensor<1xi64> {hg.state = "n"}, tensor<1xi64> {hg.name = "twice"}) {
    %one = hg.constant dense<1> : tensor<1xi64>
    %next = hg.add %n, %one : tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
    %two = hg.mul %n, %next : tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
    return %next, %two : tensor<1xi64>, tensor<1xi64>
  }
}

// -----

// The old value is also an output: the new one is computed aside and
// copied in after the output has copied the old one out.
// CHECK-LABEL: hrt.executable @returned
// CHECK: %[[S:.+]] = hrt.state "n" read_write
// CHECK: %[[OUT:.+]] = hrt.output "before"
// CHECK: %[[T:.+]] = hrt.alloc
// CHECK: hrt.binary add %[[S]] : <i64, [1]>, %{{.+}} into %[[T]]
// CHECK: hrt.copy %[[S]] : <i64, [1]> into %[[OUT]]
// CHECK: hrt.copy %[[T]] : <i64, [1]> into %[[S]]
module {
  func.func @returned(%n: tensor<1xi64> {hg.state = "n"})
      -> (tensor<1xi64> {hg.state = "n"}, tensor<1xi64> {hg.name = "before"}) {
    %one = hg.constant dense<1> : tensor<1xi64>
    %next = hg.add %n, %one : tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
    return %next, %n : tensor<1xi64>, tensor<1xi64>
  }
}

// -----

// The new value is also an output: computed into the state, the output
// copies it from there.
// CHECK-LABEL: hrt.executable @shown
// CHECK: %[[S:.+]] = hrt.state "n" read_write
// CHECK: %[[OUT:.+]] = hrt.output "after"
// CHECK: hrt.binary add %[[S]] : <i64, [1]>, %{{.+}} into %[[S]]
// CHECK: hrt.copy %[[S]] : <i64, [1]> into %[[OUT]]
module {
  func.func @shown(%n: tensor<1xi64> {hg.state = "n"})
      -> (tensor<1xi64> {hg.state = "n"}, tensor<1xi64> {hg.name = "after"}) {
    %one = hg.constant dense<1> : tensor<1xi64>
    %next = hg.add %n, %one : tensor<1xi64>, tensor<1xi64> -> tensor<1xi64>
    return %next, %next : tensor<1xi64>, tensor<1xi64>
  }
}
