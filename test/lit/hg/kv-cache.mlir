// hg-kv-cache: in generation steps, keys and values go into KV-cache
// states; @decode's attention reads the caches up to the filled length.
// RUN: hybridc-opt %s --split-input-file --hg-kv-cache --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[PAST:[^:]+]]: tensor<1xi64> {hg.state = "gen.past"}
// CHECK-SAME: %[[KC:[^:]+]]: tensor<?x2x?x4xf32> {hg.dims = ["batch", "", "cap", ""], hg.state = "kv.0.key"}
// CHECK-SAME: %[[VC:[^:]+]]: tensor<?x2x?x4xf32> {hg.dims = ["batch", "", "cap", ""], hg.state = "kv.0.value"}
// CHECK-SAME: -> (tensor<?x?x16xf32> {hg.name = "logits"}, tensor<?x2x?x4xf32> {hg.state = "kv.0.key"}, tensor<?x2x?x4xf32> {hg.state = "kv.0.value"})
// CHECK: %[[ONE:.+]] = hg.constant dense<1> : tensor<1xi64>
// CHECK: %[[LEN:.+]] = hg.add %[[PAST]], %[[ONE]]
// CHECK: %[[K:.+]] = hg.cache_write %[[KC]], %[[NEWK:.+]] at %[[PAST]] {axis = 2 : i64}
// CHECK: %[[V:.+]] = hg.cache_write %[[VC]], %{{.+}} at %[[PAST]] {axis = 2 : i64}
// CHECK: hg.attention %{{.+}}, %[[K]], %[[V]] key_length %[[LEN]] key_mask
// CHECK: return %{{.+}}, %[[K]], %[[V]]
func.func @decode(%q: tensor<?x2x1x4xf32> {hg.name = "q", hg.dims = ["batch"]},
                  %k: tensor<?x2x1x4xf32> {hg.name = "k", hg.dims = ["batch"]},
                  %mask: tensor<?x?xi64> {hg.name = "m", hg.dims = ["batch", "cap"]},
                  %past: tensor<1xi64> {hg.state = "gen.past"},
                  %w: tensor<16x8xf32> {hg.param = "w"})
    -> (tensor<?x?x16xf32> {hg.name = "logits"}) attributes {hg.generation = "decode"} {
  %a = hg.attention %q, %k, %k key_mask %mask {causal = true, scale = 0.5 : f64} : (tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?x2x1x4xf32>, tensor<?x?xi64>) -> tensor<?x2x1x4xf32>
  %r = hg.reshape %a ["batch", 1, 8] : tensor<?x2x1x4xf32> -> tensor<?x?x8xf32>
  %l = hg.linear %r, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %l : tensor<?x?x16xf32>
}

// -----

// In @prefill the prompt's keys go to slot 0 on; attention reads the prompt.
// CHECK-LABEL: func.func @prefill(
// CHECK: %[[ZERO:.+]] = hg.constant dense<0> : tensor<1xi64>
// CHECK: hg.cache_write %{{.+}}, %[[KEYS:[^ ]+]] at %[[ZERO]] {axis = 2 : i64}
// CHECK: hg.attention %{{.+}}, %[[KEYS]], %[[KEYS]] {causal = true
func.func @prefill(%x: tensor<?x2x?x4xf32> {hg.name = "x", hg.dims = ["batch", "", "seq", ""]})
    -> (tensor<?x2x?x4xf32> {hg.name = "y"}) attributes {hg.generation = "prefill"} {
  %a = hg.attention %x, %x, %x {causal = true, scale = 0.5 : f64} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %a : tensor<?x2x?x4xf32>
}

// -----

// Functions that are no generation step are left alone.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: cache_write
func.func @forward(%x: tensor<1x2x3x4xf32> {hg.name = "x"}) -> (tensor<1x2x3x4xf32> {hg.name = "y"}) {
  %a = hg.attention %x, %x, %x {scale = 0.5 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %a : tensor<1x2x3x4xf32>
}

// -----

// expected-error @+1 {{hg-kv-cache: a decode step needs the gen.past state}}
func.func @decode(%x: tensor<1x2x3x4xf32> {hg.name = "x"}) -> (tensor<1x2x3x4xf32> {hg.name = "y"}) attributes {hg.generation = "decode"} {
  %a = hg.attention %x, %x, %x {scale = 0.5 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %a : tensor<1x2x3x4xf32>
}
