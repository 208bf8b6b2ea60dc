// hg.rotary's gradient rule, full (rotary_dim = head size) and partial
// (rotary_dim 2 of 4: the features past it pass through, as Phi-3 and
// GPT-NeoX rotate only part of each head), against finite differences.
func.func @forward(%x: tensor<3x4xf32> {hg.name = "x"},
                   %w: tensor<8x4xf32> {hg.param = "w"},
                   %v: tensor<8x4xf32> {hg.param = "v"}) -> (tensor<f32> {hg.name = "loss"}) {
  %cos4 = hg.constant dense<[[[0.9, 0.6, 0.9, 0.6], [0.3, -0.4, 0.3, -0.4], [-0.7, 0.8, -0.7, 0.8]]]> : tensor<1x3x4xf32>
  %sin4 = hg.constant dense<[[[0.4, 0.8, 0.4, 0.8], [0.95, 0.9, 0.95, 0.9], [0.7, -0.6, 0.7, -0.6]]]> : tensor<1x3x4xf32>
  %cos2 = hg.constant dense<[[[0.5, 0.5], [-0.2, -0.2], [0.8, 0.8]]]> : tensor<1x3x2xf32>
  %sin2 = hg.constant dense<[[[0.85, 0.85], [0.97, 0.97], [-0.6, -0.6]]]> : tensor<1x3x2xf32>
  %h = hg.linear %x, %w : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %g = hg.linear %x, %v : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<3x8xf32>
  %h4 = hg.reshape %h [1, 3, 2, 4] : tensor<3x8xf32> -> tensor<1x3x2x4xf32>
  %g4 = hg.reshape %g [1, 3, 2, 4] : tensor<3x8xf32> -> tensor<1x3x2x4xf32>
  %ht = hg.transpose %h4 [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
  %gt = hg.transpose %g4 [0, 2, 1, 3] : tensor<1x3x2x4xf32> -> tensor<1x2x3x4xf32>
  %full = hg.rotary %ht, %cos4, %sin4 : (tensor<1x2x3x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %part = hg.rotary %gt, %cos2, %sin2 : (tensor<1x2x3x4xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x2x3x4xf32>
  %p = hg.mul %full, %part : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  %q = hg.mul %part, %part : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  %s = hg.add %p, %q : tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  %e = hg.tanh %s : tensor<1x2x3x4xf32> -> tensor<1x2x3x4xf32>
  %loss = hg.reduce_sum %e [] {keepdims = false} : tensor<1x2x3x4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
