// hg-adamw: @train_step = @forward_loss_grad, then AdamW in place: the
// moments and the step count are states, the parameters are written back.
// RUN: hybridc-opt --hg-adamw --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xf32> {hg.param = "w"}
// CHECK-SAME: {hg.default = 1.000000e-03 : f64, hg.name = "lr"}
// CHECK-SAME: {hg.default = 9.000000e-01 : f64, hg.name = "beta1"}
// CHECK-SAME: {hg.default = 0.99899999999999999 : f64, hg.name = "beta2"}
// CHECK-SAME: {hg.default = 1.000000e-08 : f64, hg.name = "eps"}
// CHECK-SAME: {hg.default = 1.000000e-02 : f64, hg.name = "weight_decay"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<1xf32> {hg.state = "opt.step"}
// CHECK-SAME: %[[M:[^:]+]]: tensor<3xf32> {hg.state = "opt.exp_avg.w"}
// CHECK-SAME: %[[V:[^:]+]]: tensor<3xf32> {hg.state = "opt.exp_avg_sq.w"}
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"}, tensor<3xf32> {hg.state = "opt.exp_avg.w"}, tensor<3xf32> {hg.state = "opt.exp_avg_sq.w"}, tensor<3xf32> {hg.param = "w"}, tensor<1xf32> {hg.state = "opt.step"})
// CHECK: %[[T:.+]] = hg.add %[[STEP]], %{{.+}} : tensor<1xf32>, tensor<1xf32>
// CHECK: hg.pow %{{.+}}, %[[T]]
// CHECK: %[[M2:.+]] = hg.add %{{.+}}, %{{.+}} : tensor<3xf32>, tensor<3xf32>
// CHECK: %[[V2:.+]] = hg.add %{{.+}}, %{{.+}} : tensor<3xf32>, tensor<3xf32>
// CHECK: %[[P2:.+]] = hg.sub
// CHECK: return %{{.+}}, %{{.+}}, %[[M2]], %[[V2]], %[[P2]], %[[T]]
// @forward_backward: the loss; the gradient added to its accumulator.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<3xf32> {hg.state = "opt.grad.w"}
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.state = "opt.grad.w"})
// CHECK: %[[SUM:.+]] = hg.add %[[ACC]], %{{.+}} : tensor<3xf32>, tensor<3xf32>
// CHECK: return %{{.+}}, %[[SUM]]

// @step: the accumulator scaled, the global norm, the clip factor.
// CHECK-LABEL: func.func @step
// CHECK-SAME: {hg.default = 1.000000e+00 : f64, hg.name = "grad_scale"}
// CHECK-SAME: {hg.default = 0.000000e+00 : f64, hg.name = "max_grad_norm"}
// CHECK-SAME: {hg.state = "opt.grad.w"}
// CHECK-SAME: tensor<1xf32> {hg.name = "grad_norm"}
// CHECK: hg.sqrt
// CHECK: hg.min
// CHECK: hg.select
func.func @forward_loss_grad(%x: tensor<3xf32> {hg.name = "x"},
                             %w: tensor<3xf32> {hg.param = "w"})
    -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"}) {
  %0 = hg.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = hg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<1xf32>
  return %1, %x : tensor<1xf32>, tensor<3xf32>
}

// -----

// expected-error @+1 {{hg-adamw: no @forward_loss_grad (run hg-causal-lm-loss and hg-autodiff first)}}
module {
  func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}
