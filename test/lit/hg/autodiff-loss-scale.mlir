// hg-autodiff loss-scale=S: the gradients are those of loss x state S (an
// f32 [1] argument added to @F_grad): the backward pass starts from the
// scale instead of 1. The loss returned stays unscaled.
// RUN: hybridc-opt --hg-autodiff="loss-scale=opt.loss_scale" --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[X:[^:]+]]: tensor<3xf32> {hg.name = "x"}
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xf16> {hg.param = "w"}
// CHECK-SAME: %[[S:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale"}
// CHECK-SAME: -> (tensor<f32> {hg.name = "loss"}, tensor<3xf16> {hg.name = "grad.w"})
// CHECK: %[[LOSS:.+]] = hg.reduce_sum
// CHECK: %[[SEED:.+]] = hg.reshape %[[S]] [] : tensor<1xf32> -> tensor<f32>
// CHECK: %[[SEED1:.+]] = hg.reshape %[[SEED]] [1]
// CHECK: %[[G:.+]] = hg.broadcast_to %[[SEED1]] [3]
// CHECK: %[[GW:.+]] = hg.mul %[[G]], %[[X]]
// CHECK: %[[GW16:.+]] = hg.cast %[[GW]] : tensor<3xf32> -> tensor<3xf16>
// CHECK: return %[[LOSS]], %[[GW16]]
func.func @forward(%x: tensor<3xf32> {hg.name = "x"},
                   %w: tensor<3xf16> {hg.param = "w"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.cast %w : tensor<3xf16> -> tensor<3xf32>
  %1 = hg.mul %x, %0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %2 = hg.reduce_sum %1 [] {keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// A loss in f16 starts from the scale cast to f16.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[S:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale"}
// CHECK: %[[S16:.+]] = hg.cast %[[S]] : tensor<1xf32> -> tensor<1xf16>
// CHECK: %[[SEED:.+]] = hg.reshape %[[S16]] [1] : tensor<1xf16> -> tensor<1xf16>
// CHECK: hg.broadcast_to %[[SEED]] [3] : tensor<1xf16> -> tensor<3xf16>
func.func @forward(%w: tensor<3xf16> {hg.param = "w"}) -> (tensor<1xf16> {hg.name = "loss"}) {
  %0 = hg.reduce_sum %w [0] : tensor<3xf16> -> tensor<1xf16>
  return %0 : tensor<1xf16>
}

// -----

// expected-error @+1 {{hg-autodiff: @forward already reads state 'opt.loss_scale' (the loss scale is added here)}}
func.func @forward(%w: tensor<3xf32> {hg.param = "w"},
                   %s: tensor<1xf32> {hg.state = "opt.loss_scale"}) -> (tensor<1xf32> {hg.name = "loss"}) {
  %0 = hg.reduce_sum %w [0] : tensor<3xf32> -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
