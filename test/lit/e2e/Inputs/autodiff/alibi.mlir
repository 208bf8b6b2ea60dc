// ALiBi attention's gradient (one hg.attention_grad with the slopes)
// against finite differences: BLOOM's constant slopes, one per query head,
// two query heads on one KV head, causal, and the first key padding.
func.func @forward(%x: tensor<5x4xf32> {hg.name = "x"},
                   %wq: tensor<8x4xf32> {hg.param = "wq"},
                   %wk: tensor<4x4xf32> {hg.param = "wk"},
                   %wv: tensor<4x4xf32> {hg.param = "wv"}) -> (tensor<f32> {hg.name = "loss"}) {
  %keys = hg.constant dense<[[0, 1, 1, 1, 1]]> : tensor<1x5xi64>
  %slopes = hg.constant dense<[0.75, 0.3]> : tensor<2xf32>
  %weights = hg.constant dense<[0.7, -1.3, 0.4, 1.1]> : tensor<4xf32>
  %q = hg.linear %x, %wq : (tensor<5x4xf32>, tensor<8x4xf32>) -> tensor<5x8xf32>
  %k = hg.linear %x, %wk : (tensor<5x4xf32>, tensor<4x4xf32>) -> tensor<5x4xf32>
  %v = hg.linear %x, %wv : (tensor<5x4xf32>, tensor<4x4xf32>) -> tensor<5x4xf32>
  %q4 = hg.reshape %q [1, 5, 2, 4] : tensor<5x8xf32> -> tensor<1x5x2x4xf32>
  %k4 = hg.reshape %k [1, 5, 1, 4] : tensor<5x4xf32> -> tensor<1x5x1x4xf32>
  %v4 = hg.reshape %v [1, 5, 1, 4] : tensor<5x4xf32> -> tensor<1x5x1x4xf32>
  %qt = hg.transpose %q4 [0, 2, 1, 3] : tensor<1x5x2x4xf32> -> tensor<1x2x5x4xf32>
  %kt = hg.transpose %k4 [0, 2, 1, 3] : tensor<1x5x1x4xf32> -> tensor<1x1x5x4xf32>
  %vt = hg.transpose %v4 [0, 2, 1, 3] : tensor<1x5x1x4xf32> -> tensor<1x1x5x4xf32>
  %a = hg.attention %qt, %kt, %vt alibi %slopes key_mask %keys {causal = true, scale = 0.5 : f64} : (tensor<1x2x5x4xf32>, tensor<1x1x5x4xf32>, tensor<1x1x5x4xf32>, tensor<2xf32>, tensor<1x5xi64>) -> tensor<1x2x5x4xf32>
  %s = hg.mul %a, %weights : tensor<1x2x5x4xf32>, tensor<4xf32> -> tensor<1x2x5x4xf32>
  %e = hg.tanh %s : tensor<1x2x5x4xf32> -> tensor<1x2x5x4xf32>
  %loss = hg.reduce_sum %e [] {keepdims = false} : tensor<1x2x5x4xf32> -> tensor<f32>
  return %loss : tensor<f32>
}
