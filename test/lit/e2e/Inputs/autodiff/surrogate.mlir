// hg.clipped_surrogate's gradient rule inside DeepSpeed-Chat's actor loss,
// sum(clipped_surrogate(log-probs, old, advantages, mask)) / sum(mask),
// against finite differences. The old log-probabilities put the ratios of
// the initial weights (finite_difference.py init) at 1.05 (inside the
// clip), 1.6 with A > 0 (clipped: no gradient) and A < 0 (unclipped), 0.5
// with A < 0 (clipped) and, masked out, 0.5 with A > 0; every ratio stays
// clear of a bound by far more than the differences move it.
func.func @forward(%x: tensor<5x4xf32> {hg.name = "x"},
                   %w: tensor<7x4xf32> {hg.param = "w"}) -> (tensor<f32> {hg.name = "loss"}) {
  %labels = hg.constant dense<[3, 0, 6, 2, 5]> : tensor<5xi64>
  %old = hg.constant dense<[-1.9469, -2.4322, -2.5746, -2.1419, -2.5401]> : tensor<5xf32>
  %adv = hg.constant dense<[0.7, 1.3, -0.9, -1.1, 0.6]> : tensor<5xf32>
  %mask = hg.constant dense<[1.0, 1.0, 1.0, 1.0, 0.0]> : tensor<5xf32>
  %logits = hg.linear %x, %w : (tensor<5x4xf32>, tensor<7x4xf32>) -> tensor<5x7xf32>
  %lp = hg.label_log_probs %logits, %labels : tensor<5x7xf32>, tensor<5xi64> -> tensor<5xf32>
  %pg = hg.clipped_surrogate %lp, %old, %adv, %mask {clip_high = 0.28 : f64} : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32> -> tensor<5xf32>
  %sum = hg.reduce_sum %pg [] {keepdims = false} : tensor<5xf32> -> tensor<f32>
  %count = hg.reduce_sum %mask [] {keepdims = false} : tensor<5xf32> -> tensor<f32>
  %loss = hg.div %sum, %count : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}
