// hg-autodiff: attention's gradient is one hg.attention_grad (with the
// attention's masks, ALiBi slopes and attributes), not a decomposition over
// the scores; a KV cache's key_length and a mask or slopes that depend on a
// parameter have no rule.
// RUN: hybridc-opt --hg-autodiff --split-input-file --verify-diagnostics %s | FileCheck %s

// Grouped heads (4 query heads, 2 KV heads), causal with a sliding window
// and key padding: the gradients of q, k and v come from one op, read by
// the transposes' rules.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[MASK:[^:]+]]: tensor<?x?xi64>
// CHECK: %[[Q:.+]] = hg.transpose
// CHECK: %[[K:.+]] = hg.transpose
// CHECK: %[[V:.+]] = hg.transpose
// CHECK: hg.attention %[[Q]], %[[K]], %[[V]] key_mask %[[MASK]]
// CHECK-NOT: hg.softmax
// CHECK-NOT: hg.is_nan
// CHECK-NOT: hg.iota
// CHECK: %[[DQ:[^,]+]], %[[DK:[^,]+]], %[[DV:[^ ]+]] = hg.attention_grad %[[Q]], %[[K]], %[[V]], %{{.+}} key_mask %[[MASK]] {causal = true, scale = 5.000000e-01 : f64, sliding_window = 3 : i64} : (tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x4x?x4xf32>, tensor<?x?xi64>) -> (tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>)
// CHECK-NOT: hg.attention_grad
// CHECK-NOT: hg.softmax
// CHECK-DAG: hg.transpose %[[DQ]] [0, 2, 1, 3]
// CHECK-DAG: hg.transpose %[[DK]] [0, 2, 1, 3]
// CHECK-DAG: hg.transpose %[[DV]] [0, 2, 1, 3]
func.func @forward(%x: tensor<?x?x16xf32> {hg.dims = ["batch", "seq", 16], hg.name = "x"},
                   %mask: tensor<?x?xi64> {hg.dims = ["batch", "seq"], hg.name = "attention_mask"},
                   %wq: tensor<16x16xf32> {hg.param = "q.weight"},
                   %wk: tensor<8x16xf32> {hg.param = "k.weight"},
                   %wv: tensor<8x16xf32> {hg.param = "v.weight"}) -> (tensor<f32> {hg.name = "loss"}) {
  %q0 = hg.linear %x, %wq : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %k0 = hg.linear %x, %wk : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  %v0 = hg.linear %x, %wv : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  %q1 = hg.reshape %q0 ["batch", "seq", 4, 4] : tensor<?x?x16xf32> -> tensor<?x?x4x4xf32>
  %k1 = hg.reshape %k0 ["batch", "seq", 2, 4] : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  %v1 = hg.reshape %v0 ["batch", "seq", 2, 4] : tensor<?x?x8xf32> -> tensor<?x?x2x4xf32>
  %q = hg.transpose %q1 [0, 2, 1, 3] : tensor<?x?x4x4xf32> -> tensor<?x4x?x4xf32>
  %k = hg.transpose %k1 [0, 2, 1, 3] : tensor<?x?x2x4xf32> -> tensor<?x2x?x4xf32>
  %v = hg.transpose %v1 [0, 2, 1, 3] : tensor<?x?x2x4xf32> -> tensor<?x2x?x4xf32>
  %a = hg.attention %q, %k, %v key_mask %mask {causal = true, scale = 0.5 : f64, sliding_window = 3 : i64} : (tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64>) -> tensor<?x4x?x4xf32>
  %l = hg.reduce_mean %a [] {keepdims = false} : tensor<?x4x?x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An additive mask from the inputs goes to the gradient op as it is.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[M:[^:]+]]: tensor<1x1x3x5xf32>
// CHECK: hg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} mask %[[M]] {scale = 1.000000e+00 : f64}
func.func @forward(%q: tensor<2x2x3x4xf32> {hg.param = "q"},
                   %k: tensor<2x2x5x4xf32> {hg.param = "k"},
                   %v: tensor<2x2x5x4xf32> {hg.param = "v"},
                   %m: tensor<1x1x3x5xf32> {hg.name = "bias"}) -> (tensor<f32> {hg.name = "loss"}) {
  %a = hg.attention %q, %k, %v mask %m {scale = 1.0 : f64} : (tensor<2x2x3x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>, tensor<1x1x3x5xf32>) -> tensor<2x2x3x4xf32>
  %l = hg.reduce_sum %a [] {keepdims = false} : tensor<2x2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%q: tensor<1x2x3x4xf32> {hg.param = "q"},
                   %k: tensor<1x2x3x4xf32> {hg.name = "k"},
                   %m: tensor<1x1x3x3xf32> {hg.param = "bias"}) -> (tensor<f32> {hg.name = "loss"}) {
  // expected-error @+1 {{hg-autodiff: no gradient rule yet for an attention mask that depends on a parameter}}
  %a = hg.attention %q, %k, %k mask %m {scale = 1.0 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x2x3x4xf32>
  %l = hg.reduce_sum %a [] {keepdims = false} : tensor<1x2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// ALiBi (BLOOM's constant slopes) goes to the gradient op with the key
// mask; the gradients of q, k and v (one value here) are summed.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[S:.+]] = hg.constant
// CHECK: %[[DQ:[^,]+]], %[[DK:[^,]+]], %[[DV:[^ ]+]] = hg.attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} alibi %[[S]] key_mask %{{.+}} {causal = true, scale = 1.000000e+00 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<2xf32>, tensor<1x3xi64>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
// CHECK-DAG: hg.add %[[DQ]], %[[DK]]
func.func @forward(%q: tensor<1x2x3x4xf32> {hg.param = "q"},
                   %km: tensor<1x3xi64> {hg.name = "attention_mask"}) -> (tensor<f32> {hg.name = "loss"}) {
  %s = hg.constant dense<[0.25, 0.0625]> : tensor<2xf32>
  %a = hg.attention %q, %q, %q alibi %s key_mask %km {causal = true, scale = 1.0 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<2xf32>, tensor<1x3xi64>) -> tensor<1x2x3x4xf32>
  %l = hg.reduce_sum %a [] {keepdims = false} : tensor<1x2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%q: tensor<1x2x3x4xf32> {hg.param = "q"},
                   %s: tensor<2xf32> {hg.param = "slopes"}) -> (tensor<f32> {hg.name = "loss"}) {
  // expected-error @+1 {{hg-autodiff: no gradient rule yet for ALiBi slopes that depend on a parameter}}
  %a = hg.attention %q, %q, %q alibi %s {causal = true, scale = 1.0 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<2xf32>) -> tensor<1x2x3x4xf32>
  %l = hg.reduce_sum %a [] {keepdims = false} : tensor<1x2x3x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @forward(%q: tensor<1x2x1x4xf32> {hg.param = "q"},
                   %k: tensor<1x2x8x4xf32> {hg.name = "cache"},
                   %n: tensor<1xi64> {hg.name = "length"}) -> (tensor<f32> {hg.name = "loss"}) {
  // expected-error @+1 {{hg-autodiff: attention over a KV cache (key_length) has no gradient rule}}
  %a = hg.attention %q, %k, %k key_length %n {scale = 1.0 : f64} : (tensor<1x2x1x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1xi64>) -> tensor<1x2x1x4xf32>
  %l = hg.reduce_sum %a [] {keepdims = false} : tensor<1x2x1x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
