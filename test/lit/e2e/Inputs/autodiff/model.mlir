// A small loss that goes through every op with a gradient rule that is
// smooth at the test point (hg-autodiff's finite-difference check).
func.func @forward(%x: tensor<?x4xf32> {hg.dims = ["batch", 4], hg.name = "x"},
                   %w1: tensor<6x4xf32> {hg.param = "l1.weight"},
                   %b1: tensor<6xf32> {hg.param = "l1.bias"},
                   %w2: tensor<6x3xf32> {hg.param = "l2.weight"},
                   %s: tensor<3xf32> {hg.param = "scale"},
                   %m: tensor<3x3xf32> {hg.param = "mix"}) -> (tensor<f32> {hg.name = "loss"}) {
  %h = hg.linear %x, %w1 bias %b1 : (tensor<?x4xf32>, tensor<6x4xf32>, tensor<6xf32>) -> tensor<?x6xf32>
  %g1 = hg.gelu %h {approximate = "tanh"} : tensor<?x6xf32> -> tensor<?x6xf32>
  %g2 = hg.gelu %h : tensor<?x6xf32> -> tensor<?x6xf32>
  %g3 = hg.silu %h : tensor<?x6xf32> -> tensor<?x6xf32>
  %a0 = hg.add %g1, %g2 : tensor<?x6xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  %a = hg.sub %a0, %g3 : tensor<?x6xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  %y = hg.linear %a, %w2 {transpose_weight = false} : (tensor<?x6xf32>, tensor<6x3xf32>) -> tensor<?x3xf32>
  %z = hg.mul %y, %s : tensor<?x3xf32>, tensor<3xf32> -> tensor<?x3xf32>
  %sig = hg.sigmoid %z : tensor<?x3xf32> -> tensor<?x3xf32>
  %th = hg.tanh %z : tensor<?x3xf32> -> tensor<?x3xf32>
  %q0 = hg.matmul %sig, %m : tensor<?x3xf32>, tensor<3x3xf32> -> tensor<?x3xf32>
  %q = hg.add %q0, %th : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  %tr = hg.transpose %q [1, 0] : tensor<?x3xf32> -> tensor<3x?xf32>
  %sm = hg.softmax %tr {axis = 1 : i64} : tensor<3x?xf32> -> tensor<3x?xf32>
  %ls = hg.log_softmax %q {axis = 1 : i64} : tensor<?x3xf32> -> tensor<?x3xf32>
  %flat = hg.reshape %ls ["3*batch"] : tensor<?x3xf32> -> tensor<?xf32>
  %e = hg.exp %flat : tensor<?xf32> -> tensor<?xf32>
  %sq = hg.mul %q, %q : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  %one = hg.constant dense<1.0> : tensor<f32>
  %sq1 = hg.add %sq, %one : tensor<?x3xf32>, tensor<f32> -> tensor<?x3xf32>
  %rs = hg.rsqrt %sq1 : tensor<?x3xf32> -> tensor<?x3xf32>
  %sr = hg.sqrt %sq1 : tensor<?x3xf32> -> tensor<?x3xf32>
  %ratio = hg.div %rs, %sr : tensor<?x3xf32>, tensor<?x3xf32> -> tensor<?x3xf32>
  %l1 = hg.reduce_mean %e [] {keepdims = false} : tensor<?xf32> -> tensor<f32>
  %l2 = hg.reduce_sum %sm [1] {keepdims = false} : tensor<3x?xf32> -> tensor<3xf32>
  %l2w = hg.mul %l2, %s : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %l2s = hg.reduce_sum %l2w [] {keepdims = false} : tensor<3xf32> -> tensor<f32>
  %l3 = hg.reduce_mean %ratio [0, 1] {keepdims = false} : tensor<?x3xf32> -> tensor<f32>
  %l4 = hg.reduce_mean %ls [] {keepdims = false} : tensor<?x3xf32> -> tensor<f32>
  %s1 = hg.add %l1, %l2s : tensor<f32>, tensor<f32> -> tensor<f32>
  %s2 = hg.sub %s1, %l3 : tensor<f32>, tensor<f32> -> tensor<f32>
  %loss = hg.add %s2, %l4 : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}
