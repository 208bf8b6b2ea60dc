// Generation's log-probs against the training graph's for the same sampled
// sequences (RLHF's train/inference mismatch).
//
// PPO scores the tokens generation sampled with @logprobs of the training
// graph; where the two disagree the importance ratio starts away from 1. The
// check samples, runs @logprobs on prompt + answer and compares each
// generated token's log-prob with the training graph's at its position.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/Generation.h"
#include "hybrid/HostTensor.h"
#include "hybrid/TokenDataset.h"

#include <cstdint>

namespace hybrid {

/// One comparison: what generation gave, what @logprobs gave for it and how
/// far apart they are over the generated tokens (up to each row's length).
struct LogprobParity {
  GenerateResult generated;
  HostTensor sequences;     ///< i64 [batch, prompt + steps]: prompts, answers
  HostTensor attentionMask; ///< i64: the prompts' mask, 1 for the answers up
                            ///< to each row's length, 0 after
  /// f32 [batch, steps]: @logprobs at the generated tokens' positions (0
  /// past a row's length, as generation's).
  HostTensor trainingLogprobs;
  double maxAbsDiff = 0; ///< over the compared tokens; NaN when one is NaN
  int64_t compared = 0;  ///< generated tokens compared
  int64_t differing = 0; ///< of those, the ones whose f32 bits differ
  bool bitwiseEqual() const { return differing == 0; }
};

/// Generates after `prompts` with `config` (greedy, or sampling at
/// temperature 1: @logprobs has no temperature), then runs the engine's
/// @logprobs (a bundle compiled with hybridc --train that generates) on the
/// prompts followed by the answers. Throws hybrid::Error, one line, for a
/// temperature other than 1, for EOS banned before min_new tokens (generation
/// then scores another distribution), and every error of generate() and
/// logprobs().
LogprobParity compareGenerationLogprobs(Engine &engine,
                                        const TokenBatch &prompts,
                                        const GenerateConfig &config);

} // namespace hybrid
