// hg-autodiff loss-scale-f16-only: the loss scale is added only where a
// parameter is f16, whose gradients need it to stay above half's underflow
// (hybridc's training pipeline names the scale for every model).
// RUN: hybridc-opt --hg-autodiff="loss-scale=opt.loss_scale loss-scale-f16-only=true" --split-input-file %s | FileCheck %s

// An f16 parameter: the backward pass starts from the scale.
// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: %[[S:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale"}
// CHECK: hg.reshape %[[S]]
func.func @forward(%w: tensor<3xf16> {hg.param = "w"},
                   %v: tensor<3xf32> {hg.param = "v"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.cast %w : tensor<3xf16> -> tensor<3xf32>
  %1 = hg.mul %v, %0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %2 = hg.reduce_sum %1 [] {keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// f32 and bf16 parameters (and an f16 input that is no parameter): no
// scale.
// CHECK-LABEL: func.func @forward_grad
// CHECK-NOT: opt.loss_scale
// CHECK: return
func.func @forward(%x: tensor<3xf16> {hg.name = "x"},
                   %w: tensor<3xbf16> {hg.param = "w"},
                   %v: tensor<3xf32> {hg.param = "v"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.cast %w : tensor<3xbf16> -> tensor<3xf32>
  %1 = hg.cast %x : tensor<3xf16> -> tensor<3xf32>
  %2 = hg.mul %v, %0 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %3 = hg.mul %2, %1 : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %4 = hg.reduce_sum %3 [] {keepdims = false} : tensor<3xf32> -> tensor<f32>
  return %4 : tensor<f32>
}
