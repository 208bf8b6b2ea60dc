// hg-autodiff: @forward_grad returns the loss and one gradient per
// parameter, from each op's vector-Jacobian rule, in reverse order.
// RUN: hybridc-opt --hg-autodiff --split-input-file --verify-diagnostics %s | FileCheck %s

// mean(tanh(x W^T + b)): the seed is spread over the mean's elements,
// tanh's rule multiplies by 1 - y^2, linear's gives g^T x for the weight
// and the column sums of g for the bias; an unused parameter gets zeros.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x4xf32> {{[^%]+}}, %[[W:[^:]+]]: tensor<3x4xf32> {{[^%]+}}, %[[B:[^:]+]]: tensor<3xf32> {{[^%]+}}, %[[U:[^:]+]]: tensor<2xf32> {hg.param = "unused"})
// CHECK-SAME: -> (tensor<f32> {hg.name = "loss"}, tensor<3x4xf32> {hg.name = "grad.fc.weight"}, tensor<3xf32> {hg.name = "grad.fc.bias"}, tensor<2xf32> {hg.name = "grad.unused"})
// CHECK: %[[H:.+]] = hg.linear %[[X]], %[[W]] bias %[[B]]
// CHECK: %[[Y:.+]] = hg.tanh %[[H]]
// CHECK: %[[LOSS:.+]] = hg.reduce_mean %[[Y]]
// CHECK: %[[COUNT:.+]] = hg.reduce_sum %{{.+}} [] : tensor<?x3xf32> -> tensor<1x1xf32>
// CHECK: %[[G:.+]] = hg.div %{{.+}}, %[[COUNT]]
// CHECK: %[[YY:.+]] = hg.mul %[[Y]], %[[Y]]
// CHECK: %[[SLOPE:.+]] = hg.sub %{{.+}}, %[[YY]]
// CHECK: %[[GH:.+]] = hg.mul %[[G]], %[[SLOPE]]
// CHECK: %[[GT:.+]] = hg.transpose %[[GH]] [1, 0] : tensor<?x3xf32> -> tensor<3x?xf32>
// CHECK: %[[GW:.+]] = hg.matmul %[[GT]], %[[X]] : tensor<3x?xf32>, tensor<?x4xf32> -> tensor<3x4xf32>
// CHECK: %[[GB:.+]] = hg.reduce_sum %[[GH]] [0] {keepdims = false} : tensor<?x3xf32> -> tensor<3xf32>
// CHECK: %[[GU:.+]] = hg.broadcast_to %{{.+}} [2] : tensor<f32> -> tensor<2xf32>
// CHECK: return %[[LOSS]], %[[GW]], %[[GB]], %[[GU]]
func.func @forward(%x: tensor<?x4xf32> {hg.dims = ["batch", 4], hg.name = "x"},
                   %w: tensor<3x4xf32> {hg.param = "fc.weight"},
                   %b: tensor<3xf32> {hg.param = "fc.bias"},
                   %u: tensor<2xf32> {hg.param = "unused"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.linear %x, %w bias %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = hg.tanh %0 : tensor<?x3xf32> -> tensor<?x3xf32>
  %2 = hg.reduce_mean %1 [] {keepdims = false} : tensor<?x3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// A parameter used twice gets the sum of both uses' gradients; one
// broadcast into a larger shape gets its gradient summed back over the
// broadcast dims and reshaped.
// CHECK-LABEL: func.func @forward_grad
// CHECK: %[[A:.+]] = hg.reduce_sum %{{.+}} [0, 1] : tensor<2x3xf32> -> tensor<1x1xf32>
// CHECK: hg.reshape %[[A]] [1] : tensor<1x1xf32> -> tensor<1xf32>
// CHECK: %[[S:.+]] = hg.add
// CHECK: return %{{.+}}, %[[S]]
func.func @forward(%x: tensor<2x3xf32> {hg.name = "x"},
                   %s: tensor<1xf32> {hg.param = "s"}) -> (tensor<1xf32> {hg.name = "loss"}) {
  %0 = hg.mul %x, %s : tensor<2x3xf32>, tensor<1xf32> -> tensor<2x3xf32>
  %1 = hg.reduce_sum %0 [0, 1] {keepdims = false} : tensor<2x3xf32> -> tensor<f32>
  %2 = hg.mul %1, %s : tensor<f32>, tensor<1xf32> -> tensor<1xf32>
  return %2 : tensor<1xf32>
}

// -----

// Integer values stop gradients (the ids of an embedding carry none; the
// table gets one hg.embedding_grad); an op on the path without a rule is
// named.
func.func @forward(%ids: tensor<2x3xi64> {hg.name = "ids"},
                   %t: tensor<10x4xf32> {hg.param = "table"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.embedding %t, %ids : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  // expected-error @+1 {{hg-autodiff: no gradient rule for 'hg.clip'}}
  %1 = hg.clip %0 {min = 0.0 : f64} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %2 = hg.reduce_sum %1 [] {keepdims = false} : tensor<2x3x4xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// expected-error @+1 {{hg-autodiff: @forward has no result named 'loss'}}
func.func @forward(%x: tensor<2xf32> {hg.param = "p"}) -> (tensor<2xf32> {hg.name = "logits"}) {
  return %x : tensor<2xf32>
}

// -----

// expected-error @+1 {{hg-autodiff: the loss must be one float, got 'tensor<2xf32>'}}
func.func @forward(%x: tensor<2xf32> {hg.param = "p"}) -> (tensor<2xf32> {hg.name = "loss"}) {
  return %x : tensor<2xf32>
}

// -----

func.func @forward(%x: tensor<2x4xf32> {hg.name = "x"}, %w: tensor<4x4xf32> {hg.param = "w"}) -> (tensor<f32> {hg.name = "loss"}) {
  // expected-error @+1 {{hg-autodiff: a linear with a fused epilogue has no gradient rule (differentiate before hg-fuse-epilogues)}}
  %0 = hg.linear %x, %w residual %x {activation = "relu"} : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %1 = hg.reduce_sum %0 [] {keepdims = false} : tensor<2x4xf32> -> tensor<f32>
  return %1 : tensor<f32>
}
