// The RLHF ops' gradient rules in one loss against finite differences:
// the critic's clipped value loss (hg.clipped_value_loss_grad) under a
// token-level masked mean, plus GRPO's k3 KL (hg.kl_k3_grad) under a
// per-sequence masked mean (hg.masked_mean_grad at both levels). The
// values are the logits' row sums, the log-probabilities label_log_probs';
// with the initial weights (finite_difference.py init) they are v = [2.82,
// 1.46, -1.11, -2.75, 0.90, 1.67]: the old values put token 0 and 5 inside
// the clip (0.2), 1 above it and 3 below it with the unclipped square
// larger, 2 below it with the clipped square larger (no gradient), 4
// masked out; every value stays clear of a bound or a crossing by far more
// than the differences move it.
func.func @forward(%x: tensor<6x4xf32> {hg.name = "x"},
                   %w: tensor<7x4xf32> {hg.param = "w"}) -> (tensor<f32> {hg.name = "loss"}) {
  %labels = hg.constant dense<[3, 0, 6, 2, 5, 1]> : tensor<6xi64>
  %old = hg.constant dense<[2.75, 1.0, -0.5, -2.0, 0.0, 1.6]> : tensor<6xf32>
  %ret = hg.constant dense<[2.0, 0.0, -3.0, -1.0, 0.0, 3.0]> : tensor<6xf32>
  %mask = hg.constant dense<[1.0, 1.0, 1.0, 1.0, 0.0, 1.0]> : tensor<6xf32>
  %ref = hg.constant dense<[-2.2, -1.5, -2.0, -3.0, -3.0, -1.0]> : tensor<6xf32>
  %h = hg.linear %x, %w : (tensor<6x4xf32>, tensor<7x4xf32>) -> tensor<6x7xf32>
  %v = hg.reduce_sum %h [1] {keepdims = false} : tensor<6x7xf32> -> tensor<6xf32>
  %vl = hg.clipped_value_loss %v, %old, %ret, %mask : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %critic = hg.masked_mean %vl, %mask : tensor<6xf32>, tensor<6xf32> -> tensor<f32>
  %lp = hg.label_log_probs %h, %labels : tensor<6x7xf32>, tensor<6xi64> -> tensor<6xf32>
  %kl = hg.kl_k3 %lp, %ref : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
  %kl2 = hg.reshape %kl [2, 3] : tensor<6xf32> -> tensor<2x3xf32>
  %mask2 = hg.reshape %mask [2, 3] : tensor<6xf32> -> tensor<2x3xf32>
  %penalty = hg.masked_mean %kl2, %mask2 {per_sequence = true} : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<f32>
  %loss = hg.add %critic, %penalty : tensor<f32>, tensor<f32> -> tensor<f32>
  return %loss : tensor<f32>
}
