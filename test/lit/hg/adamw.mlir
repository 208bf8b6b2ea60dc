// hg-adamw: @train_step = @forward_loss_grad, then AdamW in place: the
// moments and the step count are states, the parameters are written back.
// What every parameter shares is computed once on [1] tensors; each
// parameter is one hg.adamw_update, no elementwise op over its elements.
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
// CHECK: %[[BP1:.+]] = hg.pow %[[B1:[^,]+]], %[[T]]
// CHECK: %[[BC1:.+]] = hg.sub %{{.+}}, %[[BP1]]
// CHECK: %[[BP2:.+]] = hg.pow %[[B2:[^,]+]], %[[T]]
// CHECK: %[[BC2:.+]] = hg.sub %{{.+}}, %[[BP2]]
// CHECK: %[[SIZE:.+]] = hg.div %[[LR:[^,]+]], %[[BC1]] : tensor<1xf32>
// CHECK: %[[ROOT:.+]] = hg.sqrt %[[BC2]] : tensor<1xf32>
// CHECK: %[[LRWD:.+]] = hg.mul %[[LR]], %[[WD:[^ ]+]] : tensor<1xf32>
// CHECK: %[[DECAY:.+]] = hg.sub %{{.+}}, %[[LRWD]] : tensor<1xf32>
// CHECK-NOT: tensor<3xf32>, tensor<{{[13]}}xf32> -> tensor<3xf32>
// CHECK: %[[P2:[^,]+]], %[[M2:[^,]+]], %[[V2:[^ ]+]] = hg.adamw_update %[[W]], %{{.+}} moments %[[M]], %[[V]] betas %[[B1]], %[[B2]] eps %{{.+}} step_size %[[SIZE]] bias_correction2_sqrt %[[ROOT]] decay_factor %[[DECAY]] : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
// CHECK-NOT: tensor<3xf32>
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

// A model with no loss of its own (a value head): @forward_vjp alone gives
// @step and @backward, no @train_step or @forward_backward.
// CHECK-NOT: func.func @train_step
// CHECK-NOT: func.func @forward_backward
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %{{[^:]+}}: tensor<3xf32> {hg.name = "grad_values"}
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<3xf32> {hg.state = "opt.grad.w"}
// CHECK-SAME: -> (tensor<3xf32> {hg.state = "opt.grad.w"})
// CHECK: %[[SUM:.+]] = hg.add %[[ACC]], %{{.+}} : tensor<3xf32>, tensor<3xf32>
// CHECK: return %[[SUM]]
// CHECK-LABEL: func.func @step
// CHECK-SAME: {hg.state = "opt.grad.w"}
// CHECK: hg.adamw_update
func.func @forward_vjp(%x: tensor<3xf32> {hg.name = "x"},
                       %w: tensor<3xf32> {hg.param = "w"},
                       %g: tensor<3xf32> {hg.name = "grad_values"})
    -> (tensor<3xf32> {hg.name = "grad.w"}) {
  %0 = hg.mul %x, %g : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// expected-error @+1 {{hg-adamw: no @forward_loss_grad or @forward_vjp (run hg-causal-lm-loss and hg-autodiff, or hg-autodiff cotangent=..., first)}}
module {
  func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32> {
    return %x : tensor<3xf32>
  }
}

// -----

// A bf16 parameter is updated through its f32 master: the update reads and
// writes `opt.master.w`, the parameter is written back as its cast, which
// the update writes itself (its fourth result, `working bf16`); in
// @train_step it reads the bf16 gradient as it is. No hg.cast runs around
// it. @init_optimizer copies the working weights into the masters.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xbf16> {hg.param = "w"}
// CHECK-SAME: %[[MASTER:[^:]+]]: tensor<3xf32> {hg.state = "opt.master.w"}
// CHECK: %[[G:.+]] = hg.cast %{{.+}} : tensor<3xf32> -> tensor<3xbf16>
// CHECK-NOT: hg.cast
// CHECK: %[[NEXT:[^,]+]], %[[M2:[^,]+]], %[[V2:[^,]+]], %[[WORKING:[^ ]+]] = hg.adamw_update %[[MASTER]], %[[G]] moments {{.+}} working bf16 : (tensor<3xf32>, tensor<3xbf16>, {{.+}}) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>)
// CHECK-NOT: hg.cast
// CHECK: return %{{.+}}, %[[G]], %[[M2]], %[[V2]], %[[NEXT]], %[[WORKING]], %{{.+}} :
// The gradient accumulator stays f32.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.state = "opt.grad.w"})
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xbf16> {hg.param = "w"}
// CHECK-SAME: %[[MASTER:[^:]+]]: tensor<3xf32> {hg.state = "opt.master.w"}
// CHECK-SAME: -> (tensor<3xf32> {hg.state = "opt.exp_avg.w"}, tensor<3xf32> {hg.state = "opt.exp_avg_sq.w"}, tensor<3xf32> {hg.state = "opt.master.w"}, tensor<3xbf16> {hg.param = "w"}, tensor<1xf32> {hg.state = "opt.step"}, tensor<1xf32> {hg.name = "grad_norm"})
// CHECK-NOT: hg.cast
// CHECK: %[[NEXT:[^,]+]], %[[M2:[^,]+]], %[[V2:[^,]+]], %[[WORKING:[^ ]+]] = hg.adamw_update %[[MASTER]], %{{.+}} moments {{.+}} working bf16 : (tensor<3xf32>, tensor<3xf32>, {{.+}}) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>)
// CHECK-NOT: hg.cast
// CHECK: return %[[M2]], %[[V2]], %[[NEXT]], %[[WORKING]], %{{.+}}, %{{.+}} :
// CHECK-LABEL: func.func @init_optimizer
// CHECK-SAME: (%[[P:[^:]+]]: tensor<3xbf16> {hg.param = "w"}, %{{[^:]+}}: tensor<3xf32> {hg.state = "opt.master.w"})
// CHECK-SAME: -> (tensor<3xf32> {hg.state = "opt.master.w"})
// CHECK: %[[COPY:.+]] = hg.cast %[[P]] : tensor<3xbf16> -> tensor<3xf32>
// CHECK: return %[[COPY]]
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

// fp16 with the loss scaled (@forward_loss_grad reads `opt.loss_scale`):
// @step unscales the mean gradient, takes an inf or NaN global norm as an
// overflow and then keeps every write-back's old value (moments, master,
// parameter, step count) with a select; the scale itself is updated
// whatever happens. @train_step unscales its gradient outputs the same way.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"},
// CHECK: %[[INV:.+]] = hg.div %{{.+}}, %{{.+}} : tensor<1xf32>, tensor<1xf32>
// CHECK: %[[G:.+]] = hg.mul %{{.+}}, %[[INV]] : tensor<3xf32>, tensor<1xf32>
// CHECK: hg.is_inf
// CHECK: return %{{.+}}, %[[G]],
// CHECK-LABEL: func.func @step
// CHECK-SAME: %[[W:[^:]+]]: tensor<3xf16> {hg.param = "w"}
// CHECK-SAME: %[[GS:[^:]+]]: tensor<1xf32> {hg.default = 1.000000e+00 : f64, hg.name = "grad_scale"}
// CHECK-SAME: %[[S:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale"}
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<3xf32> {hg.state = "opt.grad.w"}
// CHECK-SAME: %[[STEP:[^:]+]]: tensor<1xf32> {hg.state = "opt.step"}
// CHECK-SAME: %[[MASTER:[^:]+]]: tensor<3xf32> {hg.state = "opt.master.w"}
// CHECK-SAME: %[[M:[^:]+]]: tensor<3xf32> {hg.state = "opt.exp_avg.w"}
// CHECK-SAME: %[[V:[^:]+]]: tensor<3xf32> {hg.state = "opt.exp_avg_sq.w"}
// CHECK-SAME: %[[DYN:[^:]+]]: tensor<1xf32> {hg.default = 1.000000e+00 : f64, hg.name = "dynamic_loss_scale"}
// CHECK-SAME: %[[WINDOW:[^:]+]]: tensor<1xf32> {hg.default = 1.000000e+03 : f64, hg.name = "loss_scale_window"}
// CHECK-SAME: %[[HYST:[^:]+]]: tensor<1xf32> {hg.default = 2.000000e+00 : f64, hg.name = "hysteresis"}
// CHECK-SAME: %[[MIN:[^:]+]]: tensor<1xf32> {hg.default = 1.000000e+00 : f64, hg.name = "min_loss_scale"}
// CHECK-SAME: %[[LEFT:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale_hysteresis"}
// CHECK-SAME: %[[GOOD:[^:]+]]: tensor<1xf32> {hg.state = "opt.loss_scale_good_steps"}
// CHECK-SAME: -> ({{.*}}, tensor<1xf32> {hg.state = "opt.loss_scale"}, tensor<1xf32> {hg.state = "opt.loss_scale_hysteresis"}, tensor<1xf32> {hg.state = "opt.loss_scale_good_steps"}, tensor<1xf32> {hg.name = "overflow"}, tensor<1xf32> {hg.name = "loss_scale"}, tensor<1xf32> {hg.name = "next_loss_scale"}, tensor<1xf32> {hg.name = "hysteresis_left"}, tensor<1xf32> {hg.name = "grad_norm"})
// The norm is |grad_scale / loss_scale| times the accumulators'; the
// accumulator is multiplied once, by that scale times the clip factor.
// CHECK: %[[UNSCALE:.+]] = hg.div %[[GS]], %[[S]]
// CHECK: hg.mul %[[ACC]], %[[ACC]]
// CHECK: %[[ROOT:.+]] = hg.sqrt %{{.+}} : tensor<1xf32>
// CHECK: %[[ABS:.+]] = hg.abs %[[UNSCALE]]
// CHECK: %[[NORM:.+]] = hg.mul %[[ROOT]], %[[ABS]]
// CHECK-DAG: %[[NAN:.+]] = hg.is_nan %[[NORM]]
// CHECK-DAG: %[[INF:.+]] = hg.is_inf %[[NORM]]
// CHECK: %[[OVF:.+]] = hg.or %[[INF]], %[[NAN]]
// CHECK: %[[FACTOR:.+]] = hg.mul %[[UNSCALE]], %{{.+}} : tensor<1xf32>, tensor<1xf32>
// CHECK: %[[T:.+]] = hg.add %[[STEP]], %{{.+}}
// CHECK: %[[G:.+]] = hg.mul %[[ACC]], %[[FACTOR]] : tensor<3xf32>, tensor<1xf32>
// CHECK: %[[NEXT:[^,]+]], %[[M1:[^,]+]], %[[V1:[^,]+]], %[[CAST:[^ ]+]] = hg.adamw_update %[[MASTER]], %[[G]] moments %[[M]], %[[V]] {{.+}} working f16
// CHECK: %[[M2:.+]] = hg.select %[[OVF]], %[[M]], %[[M1]] : tensor<1xi1>, tensor<3xf32>, tensor<3xf32>
// CHECK: %[[V2:.+]] = hg.select %[[OVF]], %[[V]], %[[V1]] : tensor<1xi1>, tensor<3xf32>, tensor<3xf32>
// CHECK: %[[MASTER2:.+]] = hg.select %[[OVF]], %[[MASTER]], %[[NEXT]]
// CHECK-NOT: hg.cast
// CHECK: %[[W2:.+]] = hg.select %[[OVF]], %[[W]], %[[CAST]] : tensor<1xi1>, tensor<3xf16>, tensor<3xf16>
// CHECK: %[[STEP2:.+]] = hg.select %[[OVF]], %[[STEP]], %[[T]]
// Hysteresis spent, or none to spend (hysteresis 1): the scale halves, not
// below the minimum; after `window` good steps it doubles.
// CHECK: %[[DYNAMIC:.+]] = hg.greater %[[DYN]]
// CHECK: %[[SPENT:.+]] = hg.less_equal %[[LEFT]]
// CHECK: %[[NONE:.+]] = hg.less_equal %[[HYST]]
// CHECK: %[[SHIFT:.+]] = hg.or %[[SPENT]], %[[NONE]]
// CHECK: %[[HALF:.+]] = hg.div %[[S]]
// CHECK: %[[HALVED:.+]] = hg.max %[[HALF]], %[[MIN]]
// CHECK: %[[LEFT1:.+]] = hg.sub %[[LEFT]]
// CHECK: %[[LEFT2:.+]] = hg.select %[[SHIFT]], %[[LEFT]], %[[LEFT1]]
// CHECK: %[[GROW:.+]] = hg.greater_equal %[[GOOD]], %[[WINDOW]]
// CHECK: %[[DOUBLED:.+]] = hg.mul %[[S]]
// CHECK: %[[GROWN:.+]] = hg.select %[[GROW]], %[[DOUBLED]], %[[S]]
// CHECK: %[[SHRUNK:.+]] = hg.select %[[SHIFT]], %[[HALVED]], %[[S]]
// CHECK: %[[CHANGED:.+]] = hg.select %[[OVF]], %[[SHRUNK]], %[[GROWN]]
// CHECK: %[[S2:.+]] = hg.select %[[DYNAMIC]], %[[CHANGED]], %[[S]]
// CHECK: %[[REFILL:.+]] = hg.select %[[GROW]], %[[HYST]], %[[LEFT]]
// CHECK: %[[LEFT3:.+]] = hg.select %[[OVF]], %[[LEFT2]], %[[REFILL]]
// CHECK: %[[GOOD1:.+]] = hg.add %[[GOOD]]
// CHECK: %[[GOOD2:.+]] = hg.select %[[GROW]], %{{.+}}, %[[GOOD1]]
// CHECK: %[[GOOD3:.+]] = hg.select %[[OVF]], %{{.+}}, %[[GOOD2]]
// The overflow output says what happened: 0 none, 1 hysteresis spent, 2
// the scale shifted.
// CHECK: %[[SHIFTED:.+]] = hg.and %[[OVF]], %[[SHIFT]]
// CHECK-DAG: %[[ANY:.+]] = hg.cast %[[OVF]] : tensor<1xi1> -> tensor<1xf32>
// CHECK-DAG: %[[LOWER:.+]] = hg.cast %[[SHIFTED]] : tensor<1xi1> -> tensor<1xf32>
// CHECK: %[[FLAG:.+]] = hg.add %[[ANY]], %[[LOWER]]
// CHECK: return %[[M2]], %[[V2]], %[[MASTER2]], %[[W2]], %[[STEP2]], %[[S2]], %[[LEFT3]], %[[GOOD3]], %[[FLAG]], %[[S]], %[[S2]], %[[LEFT3]], %[[NORM]]
// @init_optimizer: the masters, and the scale's starting state.
// CHECK-LABEL: func.func @init_optimizer
// CHECK-SAME: %[[INIT:[^:]+]]: tensor<1xf32> {hg.default = 6.553600e+04 : f64, hg.name = "initial_loss_scale"}
// CHECK-SAME: %[[H:[^:]+]]: tensor<1xf32> {hg.default = 2.000000e+00 : f64, hg.name = "hysteresis"}
// CHECK-SAME: -> (tensor<3xf32> {hg.state = "opt.master.w"}, tensor<1xf32> {hg.state = "opt.loss_scale"}, tensor<1xf32> {hg.state = "opt.loss_scale_hysteresis"}, tensor<1xf32> {hg.state = "opt.loss_scale_good_steps"})
// CHECK: return %{{.+}}, %[[INIT]], %[[H]], %{{.+}} :
func.func @forward_loss_grad(%x: tensor<3xf32> {hg.name = "x"},
                             %w: tensor<3xf16> {hg.param = "w"},
                             %s: tensor<1xf32> {hg.state = "opt.loss_scale"})
    -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf16> {hg.name = "grad.w"}) {
  %c = hg.cast %w : tensor<3xf16> -> tensor<3xf32>
  %0 = hg.mul %x, %c : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = hg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<1xf32>
  %2 = hg.mul %x, %s : tensor<3xf32>, tensor<1xf32> -> tensor<3xf32>
  %g = hg.cast %2 : tensor<3xf32> -> tensor<3xf16>
  return %1, %g : tensor<1xf32>, tensor<3xf16>
}

// -----

// expected-error @+1 {{hg-adamw: @init_optimizer exists already}}
module {
  func.func @forward_loss_grad(%w: tensor<3xf32> {hg.param = "w"})
      -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"}) {
    %0 = hg.reduce_sum %w [0] : tensor<3xf32> -> tensor<1xf32>
    return %0, %w : tensor<1xf32>, tensor<3xf32>
  }
  func.func @init_optimizer() {
    return
  }
}

// -----

// With @forward_vjp (hg-autodiff cotangent=logits), @backward takes the
// cotangent grad_logits and adds its gradients to the accumulators
// @forward_backward fills and @step reads; it returns nothing else.
// CHECK-LABEL: func.func @forward_backward
// CHECK-SAME: {hg.state = "opt.grad.w"}
// CHECK-LABEL: func.func @step
// CHECK-SAME: {hg.state = "opt.grad.w"}
// CHECK-LABEL: func.func @backward
// CHECK-SAME: %[[G:[^:]+]]: tensor<?xf32> {hg.dims = ["batch"], hg.name = "grad_logits"}
// CHECK-SAME: %[[ACC:[^:]+]]: tensor<3xf32> {hg.state = "opt.grad.w"}
// CHECK-SAME: -> (tensor<3xf32> {hg.state = "opt.grad.w"})
// CHECK: %[[R:.+]] = hg.reduce_sum %[[G]]
// CHECK: %[[GW:.+]] = hg.broadcast_to %[[R]]
// CHECK: %[[SUM:.+]] = hg.add %[[ACC]], %[[GW]]
// CHECK: return %[[SUM]] : tensor<3xf32>
func.func @forward_loss_grad(%x: tensor<3xf32> {hg.name = "x"},
                             %w: tensor<3xf32> {hg.param = "w"})
    -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"}) {
  %0 = hg.mul %x, %w : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %1 = hg.reduce_sum %0 [0] : tensor<3xf32> -> tensor<1xf32>
  return %1, %x : tensor<1xf32>, tensor<3xf32>
}
func.func @forward_vjp(%w: tensor<3xf32> {hg.param = "w"},
                       %g: tensor<?xf32> {hg.dims = ["batch"], hg.name = "grad_logits"})
    -> (tensor<3xf32> {hg.name = "grad.w"}) {
  %0 = hg.reduce_sum %g [0] {keepdims = false} : tensor<?xf32> -> tensor<f32>
  %1 = hg.broadcast_to %0 [3] : tensor<f32> -> tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// @backward must fill the accumulators @step reads: one per parameter of
// @forward_loss_grad.
func.func @forward_loss_grad(%w: tensor<3xf32> {hg.param = "w"})
    -> (tensor<1xf32> {hg.name = "loss"}, tensor<3xf32> {hg.name = "grad.w"}) {
  %0 = hg.reduce_sum %w [0] : tensor<3xf32> -> tensor<1xf32>
  return %0, %w : tensor<1xf32>, tensor<3xf32>
}
// expected-error @+1 {{hg-adamw: @forward_vjp's parameters differ from @forward_loss_grad's}}
func.func @forward_vjp(%v: tensor<3xf32> {hg.param = "v"})
    -> (tensor<3xf32> {hg.name = "grad.v"}) {
  return %v : tensor<3xf32>
}
