// hg-autodiff cotangent=R: @F_vjp seeds the backward pass from an input,
// grad_R (f32, R's shape and hg.dims), instead of a scalar loss, and returns
// only the gradients of sum(R * grad_R) (a vector-Jacobian product).
// RUN: hybridc-opt --hg-autodiff="cotangent=logits" --split-input-file --verify-diagnostics %s | FileCheck %s
// RUN: hybridc-opt --hg-autodiff="cotangent=logits loss-scale=opt.loss_scale" --split-input-file --verify-diagnostics %s | FileCheck %s --check-prefix=SCALED

// logits = x W^T: the cotangent is the linear's result gradient itself,
// the weight's gradient is g^T x; the other result (`hidden`) and no loss
// are returned.
// CHECK-LABEL: func.func @forward_vjp
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x4xf32> {hg.dims = ["batch", "seq", 4], hg.name = "x"}, %[[W:[^:]+]]: tensor<8x4xf32> {hg.param = "lm_head.weight"}, %[[G:[^:]+]]: tensor<?x?x8xf32> {hg.dims = ["batch", "seq", 8], hg.name = "grad_logits"})
// CHECK-SAME: -> (tensor<8x4xf32> {hg.name = "grad.lm_head.weight"})
// CHECK: hg.linear %[[X]], %[[W]]
// CHECK: %[[GF:.+]] = hg.reshape %[[G]]
// CHECK: %[[GT:.+]] = hg.transpose %[[GF]]
// CHECK: %[[GW:.+]] = hg.matmul %[[GT]]
// CHECK: return %[[GW]] : tensor<8x4xf32>
// With loss-scale, the cotangent is multiplied by the scale first.
// SCALED-LABEL: func.func @forward_vjp
// SCALED-SAME: %[[S:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale"}, %[[G:[^:]+]]: tensor<?x?x8xf32> {hg.dims = ["batch", "seq", 8], hg.name = "grad_logits"}
// SCALED: %[[GS:.+]] = hg.mul %[[G]], %[[S]]
// SCALED: hg.reshape %[[GS]]
func.func @forward(%x: tensor<?x?x4xf32> {hg.dims = ["batch", "seq", 4], hg.name = "x"},
                   %w: tensor<8x4xf32> {hg.param = "lm_head.weight"})
    -> (tensor<?x?x8xf32> {hg.name = "logits"}, tensor<?x?x4xf32> {hg.name = "hidden"}) {
  %0 = hg.linear %x, %w : (tensor<?x?x4xf32>, tensor<8x4xf32>) -> tensor<?x?x8xf32>
  return %0, %x : tensor<?x?x8xf32>, tensor<?x?x4xf32>
}

// -----

// bf16 logits: the f32 cotangent is cast to their type.
// CHECK-LABEL: func.func @forward_vjp
// CHECK-SAME: %[[G:[^:]+]]: tensor<?x8xf32> {hg.dims = ["batch", 8], hg.name = "grad_logits"}
// CHECK: hg.cast %[[G]] : tensor<?x8xf32> -> tensor<?x8xbf16>
// SCALED-LABEL: func.func @forward_vjp
// SCALED: %[[GS:.+]] = hg.mul
// SCALED: hg.cast %[[GS]] : tensor<?x8xf32> -> tensor<?x8xbf16>
func.func @forward(%x: tensor<?x4xbf16> {hg.dims = ["batch", 4], hg.name = "x"},
                   %w: tensor<8x4xbf16> {hg.param = "w"})
    -> (tensor<?x8xbf16> {hg.name = "logits"}) {
  %0 = hg.linear %x, %w : (tensor<?x4xbf16>, tensor<8x4xbf16>) -> tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// -----

// expected-error @+1 {{hg-autodiff: @forward has no result named 'logits'}}
func.func @forward(%w: tensor<3xf32> {hg.param = "w"}) -> (tensor<3xf32> {hg.name = "loss"}) {
  return %w : tensor<3xf32>
}

// -----

// expected-error @+1 {{hg-autodiff: the cotangent's result 'logits' must be a float tensor, got 'tensor<3xi64>'}}
func.func @forward(%w: tensor<3xf32> {hg.param = "w"},
                   %i: tensor<3xi64> {hg.name = "ids"}) -> (tensor<3xi64> {hg.name = "logits"}) {
  return %i : tensor<3xi64>
}

// -----

// expected-error @+1 {{hg-autodiff: @forward already has an input named 'grad_logits'}}
func.func @forward(%w: tensor<3xf32> {hg.param = "w"},
                   %g: tensor<3xf32> {hg.name = "grad_logits"}) -> (tensor<3xf32> {hg.name = "logits"}) {
  return %w : tensor<3xf32>
}
