// hg-autodiff: a parameter marked hg.frozen (hg-lora's only-optimize) gets
// no gradient, and no op computes one for it: only the adapter's A and B.
// RUN: hybridc-opt --hg-autodiff --canonicalize %s | FileCheck %s

// CHECK-LABEL: func.func @forward_grad
// CHECK-SAME: -> (tensor<f32> {hg.name = "loss"}, tensor<2x4xf32> {hg.name = "grad.lora_A.weight"}, tensor<3x2xf32> {hg.name = "grad.lora_B.weight"})
// The two weight gradients (B's, then A's) and the one input gradient
// that reaches A: nothing of shape [3, 4] (W's) is computed.
// CHECK-COUNT-2: hg.matmul
// CHECK-NOT: hg.matmul
// CHECK-NOT: tensor<3x4xf32> -> 
// CHECK: return
func.func @forward(%x: tensor<?x4xf32> {hg.dims = ["batch", 4], hg.name = "x"},
                   %w: tensor<3x4xf32> {hg.frozen, hg.param = "fc.weight"},
                   %b: tensor<3xf32> {hg.frozen, hg.param = "fc.bias"},
                   %a: tensor<2x4xf32> {hg.param = "lora_A.weight"},
                   %bb: tensor<3x2xf32> {hg.param = "lora_B.weight"}) -> (tensor<f32> {hg.name = "loss"}) {
  %0 = hg.linear %x, %w bias %b : (tensor<?x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<?x3xf32>
  %1 = hg.linear %x, %a : (tensor<?x4xf32>, tensor<2x4xf32>) -> tensor<?x2xf32>
  %2 = hg.linear %1, %bb : (tensor<?x2xf32>, tensor<3x2xf32>) -> tensor<?x3xf32>
  %3 = hg.add %0, %2 : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  %4 = hg.tanh %3 : tensor<?x3xf32> -> tensor<?x3xf32>
  %5 = hg.reduce_mean %4 [] {keepdims = false} : tensor<?x3xf32> -> tensor<f32>
  return %5 : tensor<f32>
}
