// hg-sgd: hg-adamw's executables with torch.optim.SGD's update: weight
// decay added to the gradient, the momentum buffer started as the first
// step's direction (and kept so without momentum), Nesterov's look-ahead.
// RUN: hybridc-opt --hg-sgd --split-input-file --verify-diagnostics %s | FileCheck %s

// CHECK-LABEL: func.func @train_step
// CHECK-LABEL: func.func @forward_backward
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xf32> {hg.param = "w"}
// CHECK-SAME: %[[LR:[^:]+]]: tensor<1xf32> {hg.default = 1.000000e-03 : f64, hg.name = "lr"}
// CHECK-SAME: %[[MOM:[^:]+]]: tensor<1xf32> {hg.default = 0.000000e+00 : f64, hg.name = "momentum"}
// CHECK-SAME: %[[DAMP:[^:]+]]: tensor<1xf32> {hg.default = 0.000000e+00 : f64, hg.name = "dampening"}
// CHECK-SAME: %[[WD:[^:]+]]: tensor<1xf32> {hg.default = 0.000000e+00 : f64, hg.name = "weight_decay"}
// CHECK-SAME: %[[NES:[^:]+]]: tensor<1xf32> {hg.default = 0.000000e+00 : f64, hg.name = "nesterov"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<1xf32> {hg.state = "opt.step"}
// CHECK-SAME: %[[BUF:[^:]+]]: tensor<3xf32> {hg.state = "opt.momentum_buffer.w"}
// CHECK-SAME: -> (tensor<3xf32> {hg.state = "opt.momentum_buffer.w"}, tensor<3xf32> {hg.param = "w"}, tensor<1xf32> {hg.state = "opt.step"}, tensor<1xf32> {hg.name = "grad_norm"})
// CHECK: %[[CLIP:.+]] = hg.select
// CHECK: %[[FACTOR:.+]] = hg.mul %{{.+}}, %[[CLIP]] : tensor<1xf32>, tensor<1xf32>
// CHECK: %[[T:.+]] = hg.add %[[STEP]], %{{.+}}
// CHECK: %[[FIRST:.+]] = hg.equal %[[T]],
// CHECK: %[[NOMOM:.+]] = hg.equal %[[MOM]],
// CHECK: %[[RESTART:.+]] = hg.or %[[FIRST]], %[[NOMOM]]
// CHECK: %[[UNDAMPED:.+]] = hg.sub %{{.+}}, %[[DAMP]]
// CHECK: %[[NESTEROV:.+]] = hg.greater %[[NES]],
// CHECK: %[[G:.+]] = hg.mul %{{.+}}, %[[FACTOR]] : tensor<3xf32>, tensor<1xf32>
// CHECK: %[[DECAY:.+]] = hg.mul %[[WD]], %[[W]]
// CHECK: %[[D:.+]] = hg.add %[[G]], %[[DECAY]]
// CHECK: %[[KEPT:.+]] = hg.mul %[[MOM]], %[[BUF]]
// CHECK: %[[NEW:.+]] = hg.mul %[[UNDAMPED]], %[[D]]
// CHECK: %[[SUM:.+]] = hg.add %[[KEPT]], %[[NEW]]
// CHECK: %[[BUF2:.+]] = hg.select %[[RESTART]], %[[D]], %[[SUM]]
// CHECK: %[[AHEAD:.+]] = hg.mul %[[MOM]], %[[BUF2]]
// CHECK: %[[LOOK:.+]] = hg.add %[[D]], %[[AHEAD]]
// CHECK: %[[DIR:.+]] = hg.select %[[NESTEROV]], %[[LOOK]], %[[BUF2]]
// CHECK: %[[DELTA:.+]] = hg.mul %[[LR]], %[[DIR]]
// CHECK: %[[W2:.+]] = hg.sub %[[W]], %[[DELTA]]
// CHECK: return %[[BUF2]], %[[W2]], %[[T]], %{{.+}} :
func.func @forward_loss_grad(%x: tensor<3xf32> {hg.name = "x"},
                             %w: tensor<3xf32> {hg.param = "w"})
    -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"}) {
  %0 = hg.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = hg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<1xf32>
  return %1, %x : tensor<1xf32>, tensor<3xf32>
}

// -----

// A bf16 parameter: the update reads the f32 master, the buffer is f32.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xbf16> {hg.param = "w"}
// CHECK-SAME: %[[MASTER:[^:]+]]: tensor<3xf32> {hg.state = "opt.master.w"}
// CHECK-SAME: tensor<3xf32> {hg.state = "opt.momentum_buffer.w"}
// CHECK: hg.mul %{{.+}}, %[[MASTER]] : tensor<1xf32>, tensor<3xf32>
// CHECK: %[[W2:.+]] = hg.sub %[[MASTER]], %{{.+}} : tensor<3xf32>, tensor<3xf32>
// CHECK: hg.cast %[[W2]] : tensor<3xf32> -> tensor<3xbf16>
// CHECK-LABEL: func.func @init_optimizer
func.func @forward_loss_grad(%x: tensor<3xf32> {hg.name = "x"},
                             %w: tensor<3xbf16> {hg.param = "w"})
    -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xbf16> {hg.name = "grad.w"}) {
  %c = hg.cast %w : tensor<3xbf16> -> tensor<3xf32>
  %0 = hg.mul %x, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = hg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<1xf32>
  %g = hg.cast %x : tensor<3xf32> -> tensor<3xbf16>
  return %1, %g : tensor<1xf32>, tensor<3xbf16>
}

// -----

// expected-error @+1 {{hg-sgd: no @forward_loss_grad or @forward_vjp (run hg-causal-lm-loss and hg-autodiff, or hg-autodiff cotangent=..., first)}}
module {
  func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}
