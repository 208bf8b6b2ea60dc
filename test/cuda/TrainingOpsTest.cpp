// The CUDA kernels on the operand shapes and dtypes that only the training
// executables (hybridc --train: @forward_loss, @forward_loss_grad,
// @train_step, @forward_backward, @step, @backward, @logprobs) give them,
// against the CPU oracle: rank-0 tensors, the one-hot cross-entropy over a
// vocabulary, gradient reductions over the leading axes, weight gradients
// with the tokens as the inner dimension, and the optimizer's elementwise
// chain. Odd sizes, random non-zero inputs, f32 and bf16.
#include "CudaTestSupport.h"

#include <limits>

namespace hybrid::cuda::test {
namespace {

class TrainingOpsTest : public CudaKernelTest {};

const std::vector<DType> kTrainTypes = {DType::F32, DType::BF16};

TEST_F(TrainingOpsTest, RankZeroTensors) {
  for (DType dt : kTrainTypes) {
    const std::string t = dtypeName(dt);
    // The loss: a sum over everything to [], scaled by a [] count.
    expectMatchesCpu(ops::Reduce{ReduceKind::Sum, {}, false},
                     {randomTensor(dt, {3, 17}, rng)}, {HostTensor(dt, {})},
                     "reduce_sum [3,17] -> [] " + t);
    expectMatchesCpu(ops::Binary{BinaryKind::Div},
                     {randomTensor(dt, {}, rng), randomTensor(dt, {}, rng)},
                     {HostTensor(dt, {})}, "div [] [] " + t);
    expectMatchesCpu(ops::Unary{UnaryKind::Neg}, {randomTensor(dt, {}, rng)},
                     {HostTensor(dt, {})}, "neg [] " + t);
    // A [] seed broadcast over a gradient, and [] constants on both sides.
    expectMatchesCpu(ops::BroadcastTo{}, {randomTensor(dt, {}, rng)},
                     {HostTensor(dt, {2, 1, 13})}, "broadcast_to [] " + t);
    expectMatchesCpu(
        ops::Binary{BinaryKind::Sub},
        {randomTensor(dt, {}, rng), randomTensor(dt, {3, 5, 11}, rng)},
        {HostTensor(dt, {3, 5, 11})}, "sub [] x " + t);
    expectMatchesCpu(
        ops::Binary{BinaryKind::Add},
        {randomTensor(dt, {3, 5, 1}, rng), randomTensor(dt, {}, rng)},
        {HostTensor(dt, {3, 5, 1})}, "add x [] " + t);
  }
  expectMatchesCpu(ops::Binary{BinaryKind::Equal},
                   {randomTensor(DType::I64, {3, 7}, rng, 0, 3),
                    tensorOf(DType::I64, {}, {1})},
                   {HostTensor(DType::Bool, {3, 7})}, "equal i64 x []");
}

TEST_F(TrainingOpsTest, SelectWithScalarBranches) {
  // Attention's backward masks: a [B,1,T,T] condition, a [] branch.
  for (DType dt : kTrainTypes) {
    const HostTensor cond = randomTensor(DType::Bool, {2, 1, 9, 9}, rng);
    const HostTensor x = randomTensor(dt, {2, 3, 9, 9}, rng);
    const HostTensor s = randomTensor(dt, {}, rng);
    expectMatchesCpu(ops::Select{}, {cond, x, s},
                     {HostTensor(dt, {2, 3, 9, 9})},
                     std::string("select x [] ") + dtypeName(dt));
    expectMatchesCpu(ops::Select{}, {cond, s, x},
                     {HostTensor(dt, {2, 3, 9, 9})},
                     std::string("select [] x ") + dtypeName(dt));
  }
  // The loss's ignored labels: a [1] value where the mask holds.
  expectMatchesCpu(ops::Select{},
                   {randomTensor(DType::Bool, {3, 10}, rng),
                    tensorOf(DType::I64, {1}, {-100}),
                    randomTensor(DType::I64, {3, 10}, rng, 0, 500)},
                   {HostTensor(DType::I64, {3, 10})}, "select i64 labels");
}

TEST_F(TrainingOpsTest, CrossEntropyOverAVocabulary) {
  // [B, T-1, V] with an odd vocabulary: log_softmax, the one-hot of the
  // labels (equal against an iota row, cast from bool), the picked
  // log-probabilities (mul + sum over V) and the softmax of the backward.
  const int64_t b = 2, t = 7, v = 50257;
  const HostTensor logits = randomTensor(DType::F32, {b, t, v}, rng, -8, 8);
  expectMatchesCpu(ops::Softmax{2, true}, {logits},
                   {HostTensor(DType::F32, {b, t, v})}, "log_softmax over V");
  expectMatchesCpu(ops::Softmax{2, false}, {logits},
                   {HostTensor(DType::F32, {b, t, v})}, "softmax over V");
  HostTensor labels = randomTensor(DType::I64, {b, t, 1}, rng, 0, v - 1);
  HostTensor iota(DType::I64, {1, 1, v});
  for (int64_t k = 0; k < v; ++k)
    iota.set(k, static_cast<double>(k));
  expectMatchesCpu(ops::Binary{BinaryKind::Equal}, {labels, iota},
                   {HostTensor(DType::Bool, {b, t, v})}, "one-hot equal");
  HostTensor hot = runCpu(ops::Binary{BinaryKind::Equal}, {labels, iota},
                          {HostTensor(DType::Bool, {b, t, v})})[0];
  for (DType dt : {DType::F32, DType::BF16, DType::I64})
    expectMatchesCpu(ops::Cast{}, {hot}, {HostTensor(dt, {b, t, v})},
                     std::string("cast bool -> ") + dtypeName(dt));
  const Tolerance sum = sumTolerance(DType::F32);
  expectMatchesCpu(ops::Reduce{ReduceKind::Sum, {2}, false}, {logits},
                   {HostTensor(DType::F32, {b, t})}, "sum over V", &sum);
  expectMatchesCpu(ops::Reduce{ReduceKind::Sum, {2}, true}, {logits},
                   {HostTensor(DType::F32, {b, t, 1})}, "sum over V, kept",
                   &sum);
  // The last position's zero gradient joined back on.
  expectMatchesCpu(ops::Concat{1},
                   {randomTensor(DType::F32, {b, t - 1, 513}, rng),
                    randomTensor(DType::F32, {b, 1, 513}, rng)},
                   {HostTensor(DType::F32, {b, t, 513})}, "concat along T");
  // Shifted views of the tokens and the logits.
  expectMatchesCpu(
      ops::Slice{{1}, {1}, {std::numeric_limits<int64_t>::max()}, {1}},
      {randomTensor(DType::I64, {b, t}, rng, 0, 100)},
      {HostTensor(DType::I64, {b, t - 1})}, "slice labels");
  expectMatchesCpu(ops::Slice{{1}, {0}, {-1}, {1}},
                   {randomTensor(DType::BF16, {b, t, 65}, rng)},
                   {HostTensor(DType::BF16, {b, t - 1, 65})}, "slice logits");
}

TEST_F(TrainingOpsTest, GradientReductionsOverLeadingAxes) {
  // Bias and norm-weight gradients: [B, T, N] summed over B and T.
  for (DType dt : kTrainTypes) {
    const Tolerance sum = sumTolerance(dt);
    const HostTensor g = randomTensor(dt, {3, 17, 65}, rng);
    expectMatchesCpu(ops::Reduce{ReduceKind::Sum, {0, 1}, false}, {g},
                     {HostTensor(dt, {65})},
                     std::string("sum over B,T ") + dtypeName(dt), &sum);
    expectMatchesCpu(ops::Reduce{ReduceKind::Sum, {0, 1}, true}, {g},
                     {HostTensor(dt, {1, 1, 65})},
                     std::string("sum over B,T kept ") + dtypeName(dt), &sum);
    // GQA's repeated heads summed back: [B, Hkv, rep, T, D] over rep.
    expectMatchesCpu(ops::Reduce{ReduceKind::Sum, {2}, false},
                     {randomTensor(dt, {2, 2, 3, 9, 16}, rng)},
                     {HostTensor(dt, {2, 2, 9, 16})},
                     std::string("sum over rep ") + dtypeName(dt), &sum);
    expectMatchesCpu(ops::BroadcastTo{},
                     {randomTensor(dt, {2, 2, 1, 9, 16}, rng)},
                     {HostTensor(dt, {2, 2, 3, 9, 16})},
                     std::string("broadcast rep ") + dtypeName(dt));
  }
}

TEST_F(TrainingOpsTest, WeightGradients) {
  // dW = x^T dy with the tokens (B*T) as the inner dimension, after the
  // transpose that puts them there; the embedding's through its one-hot.
  for (DType dt : kTrainTypes) {
    const Tolerance sum = sumTolerance(dt);
    const std::string t = dtypeName(dt);
    const HostTensor x = randomTensor(dt, {45, 513}, rng);
    expectMatchesCpu(ops::Transpose{{1, 0}}, {x}, {HostTensor(dt, {513, 45})},
                     "transpose tokens inward " + t);
    expectMatchesCpu(
        ops::MatMul{},
        {randomTensor(dt, {513, 45}, rng), randomTensor(dt, {45, 64}, rng)},
        {HostTensor(dt, {513, 64})}, "dW [513,45]x[45,64] " + t, &sum);
    expectMatchesCpu(
        ops::MatMul{},
        {randomTensor(dt, {65, 1037}, rng), randomTensor(dt, {1037, 33}, rng)},
        {HostTensor(dt, {65, 33})}, "dW long K " + t, &sum);
    // Attention's backward: scores' transposes and batched products.
    expectMatchesCpu(ops::Transpose{{0, 1, 3, 2}},
                     {randomTensor(dt, {2, 3, 9, 9}, rng)},
                     {HostTensor(dt, {2, 3, 9, 9})}, "transpose scores " + t);
    expectMatchesCpu(ops::MatMul{},
                     {randomTensor(dt, {2, 3, 9, 9}, rng),
                      randomTensor(dt, {2, 3, 9, 16}, rng)},
                     {HostTensor(dt, {2, 3, 9, 16})}, "dV batched " + t, &sum);
    // dx = dy W with W as stored ([out, in]: no transpose).
    expectMatchesCpu(ops::Linear{false},
                     {randomTensor(dt, {2, 9, 193}, rng),
                      randomTensor(dt, {193, 64}, rng), HostTensor::absent(),
                      HostTensor::absent()},
                     {HostTensor(dt, {2, 9, 64})}, "dx = dy W " + t, &sum);
  }
}

TEST_F(TrainingOpsTest, OptimizerElementwiseChain) {
  // AdamW on f32 masters: moments, bias corrections, sqrt, division, with
  // [1] hyperparameters; bf16 weights cast from and to the masters; the
  // global norm's overflow check.
  const Shape w = {129, 65};
  const HostTensor m = randomTensor(DType::F32, w, rng);
  const HostTensor v = randomTensor(DType::F32, w, rng, 1e-3, 2);
  const HostTensor h = randomTensor(DType::F32, {1}, rng, 0.5, 1);
  expectMatchesCpu(ops::Binary{BinaryKind::Mul}, {h, m},
                   {HostTensor(DType::F32, w)}, "[1] * m");
  expectMatchesCpu(ops::Unary{UnaryKind::Sqrt}, {v},
                   {HostTensor(DType::F32, w)}, "sqrt v");
  expectMatchesCpu(ops::Binary{BinaryKind::Div}, {m, v},
                   {HostTensor(DType::F32, w)}, "m / v");
  expectMatchesCpu(ops::Binary{BinaryKind::Pow},
                   {randomTensor(DType::F32, {1}, rng, 0.8, 0.99),
                    randomTensor(DType::F32, {1}, rng, 1, 9)},
                   {HostTensor(DType::F32, {1})}, "beta ^ step");
  expectMatchesCpu(ops::Binary{BinaryKind::Min},
                   {randomTensor(DType::F32, {1}, rng, 0, 2),
                    randomTensor(DType::F32, {1}, rng, 0, 2)},
                   {HostTensor(DType::F32, {1})}, "clip coefficient");
  expectMatchesCpu(ops::Cast{}, {randomTensor(DType::BF16, w, rng)},
                   {HostTensor(DType::F32, w)}, "bf16 -> f32 master");
  expectMatchesCpu(ops::Cast{}, {m}, {HostTensor(DType::BF16, w)},
                   "f32 master -> bf16");
  for (DType dt : kTrainTypes) {
    HostTensor x = randomTensor(dt, {3, 67}, rng);
    x.set(5, std::numeric_limits<double>::quiet_NaN());
    expectMatchesCpu(ops::Unary{UnaryKind::IsNan}, {x},
                     {HostTensor(DType::Bool, {3, 67})},
                     std::string("is_nan ") + dtypeName(dt));
  }
  expectMatchesCpu(ops::Unary{UnaryKind::Not},
                   {randomTensor(DType::Bool, {1}, rng)},
                   {HostTensor(DType::Bool, {1})}, "not [1]");
  expectMatchesCpu(ops::Select{},
                   {randomTensor(DType::Bool, {1}, rng), h,
                    randomTensor(DType::F32, {1}, rng)},
                   {HostTensor(DType::F32, {1})}, "select [1]");
}

} // namespace
} // namespace hybrid::cuda::test
