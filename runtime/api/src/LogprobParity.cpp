// Generation's log-probs against @logprobs on the sampled sequences.
#include "hybrid/LogprobParity.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hybrid {

LogprobParity compareGenerationLogprobs(Engine &engine,
                                        const TokenBatch &prompts,
                                        const GenerateConfig &config) {
  if (!config.greedy && config.temperature != 1.0f)
    throw Error("comparing log-probs: generation scores logits / " +
                std::to_string(config.temperature) +
                " but @logprobs the logits; sample at temperature 1");
  if (config.minNewTokens > 0 && config.eosTokenId >= 0)
    throw Error("comparing log-probs: EOS is banned before min_new_tokens, "
                "so generation scores another distribution than @logprobs; "
                "give no EOS or min_new_tokens 0");
  if (!engine.hasExecutable("logprobs"))
    throw Error("comparing log-probs: bundle '" + engine.bundle().model +
                "' has no logprobs executable (compile it with hybridc "
                "--train)");
  LogprobParity r;
  r.generated = engine.generate(prompts.inputIds, prompts.mask(), config);
  const GenerateResult &g = r.generated;
  const int64_t B = prompts.rows(), P = prompts.seq(), N = g.steps;
  r.sequences = concatColumns(prompts.inputIds, g.tokens);
  HostTensor answerMask = HostTensor::allocate(DType::I64, {B, N});
  const int64_t *lengths = g.lengths.as<int64_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i)
      answerMask.as<int64_t>()[b * N + i] = i < lengths[b] ? 1 : 0;
  HostTensor promptMask = prompts.attentionMask
                              ? *prompts.attentionMask
                              : HostTensor::allocate(DType::I64, {B, P});
  if (!prompts.attentionMask)
    for (int64_t k = 0; k < B * P; ++k)
      promptMask.as<int64_t>()[k] = 1;
  r.attentionMask = concatColumns(promptMask, answerMask);
  // Only pass a mask to a model that takes one (without padding it is all
  // ones, the default).
  const bool takesMask = [&] {
    const auto &in = engine.executable("logprobs").inputNames();
    for (const std::string &n : in)
      if (n == "attention_mask")
        return true;
    return false;
  }();
  const HostTensor all =
      engine.logprobs(r.sequences, takesMask ? &r.attentionMask : nullptr);
  // Position t scores token t + 1: generated token i (at P + i) is scored
  // at P - 1 + i of the [B, P + N - 1] result.
  r.trainingLogprobs = HostTensor::allocate(DType::F32, {B, N});
  const float *lp = all.as<float>();
  const float *gen = g.logprobs.as<float>();
  float *train = r.trainingLogprobs.as<float>();
  const int64_t width = P + N - 1;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < lengths[b]; ++i) {
      const float t = lp[b * width + P - 1 + i], x = gen[b * N + i];
      train[b * N + i] = t;
      const double d = std::fabs(static_cast<double>(x) - t);
      r.maxAbsDiff = std::isnan(d) || std::isnan(r.maxAbsDiff)
                         ? NAN
                         : std::max(r.maxAbsDiff, d);
      r.differing += std::memcmp(&t, &x, sizeof t) != 0;
      ++r.compared;
    }
  return r;
}

} // namespace hybrid
