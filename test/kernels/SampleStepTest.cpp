// sample_step: the fused sampling epilogue against the composition of the
// kernels it replaces (cast, less/equal/and/select for the EOS ban,
// sample, log_softmax of the temperature-scaled logits, gather_nd, the
// selects for finished rows, cache_write, the state's adds and ors), bit
// for bit, greedy and sampled, in and out of place.
#include "KernelTestSupport.h"

#include <limits>

namespace hybrid::cpu::test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// A generation step's inputs (Ops.h's SampleStep operands) and the state
/// it writes into.
struct StepInputs {
  HostTensor logits, config, sampling, rng, count, finished, lengths;
  HostTensor tokens, logprobs; // [B, N], updated at column count
};

/// What a step gives: the emitted tokens and the new state.
struct StepOutputs {
  HostTensor token, tokens, logprobs, lengths, finished, count, rng;
};

HostTensor binary(BinaryKind kind, const HostTensor &a, const HostTensor &b,
                  DType dtype, Shape shape) {
  return run(ops::Binary{kind}, {&a, &b}, dtype, std::move(shape));
}

/// The epilogue as hg-split-generation used to build it, op by op.
StepOutputs composed(const StepInputs &in) {
  const int64_t B = in.logits.shape[0], V = in.logits.shape[1];
  const Shape rows = {B}, one = {1};
  HostTensor logits = run(ops::Cast{}, {&in.logits}, DType::F32, {B, V});
  HostTensor eos = i64(one, {in.config.i()[0]});
  HostTensor pad = i64(one, {in.config.i()[1]});
  HostTensor minNew = i64(one, {in.config.i()[2]});
  HostTensor early =
      binary(BinaryKind::Less, in.count, minNew, DType::Bool, one);
  HostTensor ids = run(ops::Iota{0, 1}, {}, DType::I64, {V});
  HostTensor isEos = binary(BinaryKind::Equal, ids, eos, DType::Bool, {V});
  HostTensor ban = binary(BinaryKind::And, isEos, early, DType::Bool, {V});
  HostTensor minusInf = f32(one, {-kInf});
  HostTensor masked =
      run(ops::Select{}, {&ban, &minusInf, &logits}, DType::F32, {B, V});
  HostTensor token =
      run(ops::Sample{}, {&masked, &in.sampling, &in.rng}, DType::I64, rows);

  HostTensor temperature = f32(one, {in.sampling.f()[0]});
  HostTensor zero = f32(one, {0}), unit = f32(one, {1});
  HostTensor warm =
      binary(BinaryKind::Greater, temperature, zero, DType::Bool, one);
  HostTensor divisor =
      run(ops::Select{}, {&warm, &temperature, &unit}, DType::F32, one);
  HostTensor scaled =
      binary(BinaryKind::Div, masked, divisor, DType::F32, {B, V});
  HostTensor logSoftmax =
      run(ops::Softmax{1, true}, {&scaled}, DType::F32, {B, V});
  HostTensor index = token;
  index.shape = {B, 1};
  HostTensor logprob =
      run(ops::GatherNd{1}, {&logSoftmax, &index}, DType::F32, rows);

  StepOutputs out;
  out.token =
      run(ops::Select{}, {&in.finished, &pad, &token}, DType::I64, rows);
  HostTensor logprobOut =
      run(ops::Select{}, {&in.finished, &zero, &logprob}, DType::F32, rows);
  out.tokens = in.tokens;
  out.logprobs = in.logprobs;
  HostTensor tokenColumn = out.token, logprobColumn = logprobOut;
  tokenColumn.shape = logprobColumn.shape = {B, 1};
  runKernel(ops::CacheWrite{1}, {&tokenColumn, &in.count}, out.tokens);
  runKernel(ops::CacheWrite{1}, {&logprobColumn, &in.count}, out.logprobs);
  HostTensor running =
      run(ops::Unary{UnaryKind::Not}, {&in.finished}, DType::Bool, rows);
  HostTensor counted = run(ops::Cast{}, {&running}, DType::I64, rows);
  out.lengths = binary(BinaryKind::Add, in.lengths, counted, DType::I64, rows);
  HostTensor ended =
      binary(BinaryKind::Equal, out.token, eos, DType::Bool, rows);
  out.finished = binary(BinaryKind::Or, in.finished, ended, DType::Bool, rows);
  HostTensor step = i64(one, {1});
  out.count = binary(BinaryKind::Add, in.count, step, DType::I64, one);
  HostTensor advance = i64({2}, {0, 1});
  out.rng = binary(BinaryKind::Add, in.rng, advance, DType::I64, {2});
  return out;
}

/// The fused kernel. In place, the state results are the operands' own
/// tensors (as the compiler plans them).
StepOutputs fused(const StepInputs &in, bool inPlace) {
  const int64_t B = in.logits.shape[0];
  StepOutputs out;
  out.token = HostTensor(DType::I64, {B});
  out.tokens = in.tokens;
  out.logprobs = in.logprobs;
  out.lengths = inPlace ? in.lengths : HostTensor(DType::I64, {B});
  out.finished = inPlace ? in.finished : HostTensor(DType::Bool, {B});
  out.count = inPlace ? in.count : HostTensor(DType::I64, {1});
  out.rng = inPlace ? in.rng : HostTensor(DType::I64, {2});
  const HostTensor *count = inPlace ? &out.count : &in.count;
  const HostTensor *finished = inPlace ? &out.finished : &in.finished;
  const HostTensor *lengths = inPlace ? &out.lengths : &in.lengths;
  const HostTensor *rng = inPlace ? &out.rng : &in.rng;
  runKernelOnResults(
      ops::SampleStep{},
      {&in.logits, &in.config, &in.sampling, rng, count, finished, lengths},
      {&out.token, &out.tokens, &out.logprobs, &out.lengths, &out.finished,
       &out.count, &out.rng});
  return out;
}

void expectSame(const StepOutputs &got, const StepOutputs &want,
                const std::string &what) {
  expectEqual(got.token, want.token, what + " token");
  expectEqual(got.tokens, want.tokens, what + " tokens");
  expectEqual(got.logprobs, want.logprobs, what + " logprobs");
  expectEqual(got.lengths, want.lengths, what + " lengths");
  expectEqual(got.finished, want.finished, what + " finished");
  expectEqual(got.count, want.count, what + " count");
  expectEqual(got.rng, want.rng, what + " rng");
}

/// Random logits in [-4, 4) (never all zeros), a random mix of finished
/// rows, earlier columns filled, EOS the argmax of row 0 (so banning it
/// changes the greedy token, and emitting it finishes the row).
StepInputs randomInputs(Random &r, DType dt, int64_t B, int64_t V,
                        std::vector<float> sampling, int64_t count,
                        int64_t minNew) {
  constexpr int64_t N = 6;
  StepInputs in;
  in.logits = r.floats(dt, {B, V}, -4, 4);
  int64_t eos = 0;
  for (int64_t j = 1; j < V; ++j)
    if (in.logits.at(j) > in.logits.at(eos))
      eos = j;
  in.config = i64({4}, {eos, V - 1, minNew, 0});
  in.sampling = f32({3}, std::move(sampling));
  in.rng = i64({2}, {r.integer(0, 1 << 30), r.integer(0, 1000)});
  in.count = i64({1}, {count});
  in.finished = r.boolean({B});
  in.finished.b()[0] = 0; // row 0 runs: its token is EOS when not banned
  in.lengths = r.i64({B}, 0, 10);
  in.tokens = r.i64({B, N}, 0, V - 1);
  in.logprobs = r.f32({B, N}, -9, 0);
  return in;
}

TEST(SampleStep, EqualsTheComposedEpilogue) {
  Random r(2207);
  const std::vector<std::vector<float>> configs = {
      {0, 1, 0},        // greedy
      {0.8f, 0.9f, 50}, // temperature, top-k and top-p
      {1.3f, 1, 0},     // temperature alone
      {0.6f, 0.5f, 0}};
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t V : {int64_t(1000), int64_t(50257)})
      for (int64_t B : {int64_t(1), int64_t(3), int64_t(32)})
        for (size_t c = 0; c < configs.size(); ++c)
          for (int64_t minNew : {int64_t(0), int64_t(5)}) {
            if (V > 1000 && B > 3 && c > 1)
              continue; // flat rows walked by a CPU sort: slow, and covered
            StepInputs in = randomInputs(r, dt, B, V, configs[c], 3, minNew);
            const std::string what =
                std::string(dtypeName(dt)) + " V " + std::to_string(V) + " B " +
                std::to_string(B) + " config " + std::to_string(c) +
                " min_new " + std::to_string(minNew);
            const StepOutputs want = composed(in);
            expectSame(fused(in, /*inPlace=*/false), want, what);
            expectSame(fused(in, /*inPlace=*/true), want, what + " in place");
            if (c == 0) {
              // Greedy: row 0's argmax is EOS; banned, it takes another.
              const bool banned = minNew > 3;
              EXPECT_EQ(want.token.i()[0] == in.config.i()[0], !banned) << what;
              EXPECT_EQ(want.finished.b()[0] != 0, !banned) << what;
            }
          }
}

TEST(SampleStep, FinishedRowsEmitPadAndZero) {
  Random r(31);
  StepInputs in = randomInputs(r, DType::F32, 3, 100, {0.7f, 1, 0}, 2, 0);
  in.finished = boolean({3}, {0, 1, 1});
  const StepOutputs got = fused(in, false);
  for (int64_t b : {1, 2}) {
    EXPECT_EQ(got.token.i()[b], 99);
    EXPECT_EQ(got.tokens.i()[b * 6 + 2], 99);
    EXPECT_EQ(got.logprobs.f()[b * 6 + 2], 0.0f);
    EXPECT_EQ(got.lengths.i()[b], in.lengths.i()[b]);
    EXPECT_EQ(got.finished.b()[b], 1);
  }
  EXPECT_EQ(got.lengths.i()[0], in.lengths.i()[0] + 1);
  EXPECT_LT(got.logprobs.f()[2], 0.0f);
  // Every other column keeps its value.
  for (int64_t k = 0; k < 18; ++k)
    if (k % 6 != 2) {
      EXPECT_EQ(got.tokens.i()[k], in.tokens.i()[k]) << k;
      EXPECT_EQ(got.logprobs.f()[k], in.logprobs.f()[k]) << k;
    }
  EXPECT_EQ(got.count.i()[0], 3);
  EXPECT_EQ(got.rng.i()[0], in.rng.i()[0]);
  EXPECT_EQ(got.rng.i()[1], in.rng.i()[1] + 1);
}

TEST(SampleStep, RejectsAColumnPastTheEnd) {
  Random r(5);
  StepInputs in = randomInputs(r, DType::F32, 2, 10, {0, 1, 0}, 6, 0);
  HostTensor token(DType::I64, {2}), lengths(DType::I64, {2}),
      finished(DType::Bool, {2}), count(DType::I64, {1}), rng(DType::I64, {2});
  try {
    runKernelOnResults(
        ops::SampleStep{},
        {&in.logits, &in.config, &in.sampling, &in.rng, &in.count, &in.finished,
         &in.lengths},
        {&token, &in.tokens, &in.logprobs, &lengths, &finished, &count, &rng});
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "sample_step: column 6 is outside tokens [2,6]");
  }
}

TEST(SampleStep, RejectsAMalformedConfig) {
  Random r(6);
  StepInputs in = randomInputs(r, DType::F32, 2, 10, {0, 1, 0}, 0, 0);
  in.config = i64({3}, {1, 2, 3});
  HostTensor token(DType::I64, {2}), lengths(DType::I64, {2}),
      finished(DType::Bool, {2}), count(DType::I64, {1}), rng(DType::I64, {2});
  try {
    runKernelOnResults(
        ops::SampleStep{},
        {&in.logits, &in.config, &in.sampling, &in.rng, &in.count, &in.finished,
         &in.lengths},
        {&token, &in.tokens, &in.logprobs, &lengths, &finished, &count, &rng});
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "sample_step: config [3] must hold {eos, pad, "
                           "min_new, unused}");
  }
}

} // namespace
} // namespace hybrid::cpu::test
