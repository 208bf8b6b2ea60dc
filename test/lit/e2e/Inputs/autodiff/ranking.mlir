// The reward model's ranking loss's gradient rule (hg.pairwise_ranking_loss
// -> hg.pairwise_ranking_loss_grad) against finite differences, through
// both of its differentiable results: the loss plus a weighted sum of the
// end scores. The values are the rows of x . w^T summed, as [4 rows, 5
// positions]: two pairs (rows 0 and 2, rows 1 and 3); pair 0's answers
// differ from position 2 and end at 4 (chosen) and 3 (rejected), pair 1's
// rows are equal (the span is the last position, both ends 5).
func.func @forward(%x: tensor<20x4xf32> {hg.name = "x"},
                   %w: tensor<3x4xf32> {hg.param = "w"}) -> (tensor<f32> {hg.name = "loss"}) {
  %ids = hg.constant dense<[[1, 2, 3, 4, 0], [6, 7, 8, 9, 9], [1, 2, 5, 0, 0], [6, 7, 8, 9, 9]]> : tensor<4x5xi64>
  %mask = hg.constant dense<[[1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]> : tensor<4x5xi64>
  %weights = hg.constant dense<[0.5, -0.25, 0.75, -1.0]> : tensor<4xf32>
  %h = hg.linear %x, %w : (tensor<20x4xf32>, tensor<3x4xf32>) -> tensor<20x3xf32>
  %s = hg.reduce_sum %h [1] {keepdims = false} : tensor<20x3xf32> -> tensor<20xf32>
  %v = hg.reshape %s [4, 5] : tensor<20xf32> -> tensor<4x5xf32>
  %loss, %scores, %accuracy = hg.pairwise_ranking_loss %v, %ids, %mask : tensor<4x5xf32>, tensor<4x5xi64>, tensor<4x5xi64> -> tensor<f32>, tensor<4xf32>, tensor<f32>
  %weighted = hg.mul %scores, %weights : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %sum = hg.reduce_sum %weighted [0] {keepdims = false} : tensor<4xf32> -> tensor<f32>
  %total = hg.add %loss, %sum : tensor<f32>, tensor<f32> -> tensor<f32>
  return %total : tensor<f32>
}
