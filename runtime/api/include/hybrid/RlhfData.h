// RLHF data as token ids: DeepSpeed-Chat's three steps read JSON Lines,
// one object a line, whose fields are arrays of token ids:
//
//   step 1 (SFT)           {"prompt": [...], "chosen": [...]}
//   step 2 (reward model)  {"prompt": [...], "chosen": [...], "rejected":
//   [...]} step 3 (PPO, GRPO)     {"prompt": [...]}
//
// "chosen" and "rejected" are answers: a training sequence is the prompt
// followed by one of them ("prompt" may be absent or empty; step 3 needs
// it). bench/tokenize_jsonl.py turns text into these with HF tokenizers.
#pragma once

#include "hybrid/HostTensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hybrid {

/// One line of an RLHF JSONL file; absent fields are empty.
struct RlhfRecord {
  std::vector<int64_t> prompt, chosen, rejected;
};

/// The records of `path`. Blank lines are skipped; other fields are
/// ignored. Throws hybrid::Error "<path>:<line>: <what is wrong>" for a
/// line that is not a JSON object, a field that is not an array of
/// non-negative integers, or a file that cannot be read or holds no
/// record.
std::vector<RlhfRecord> readRlhfJsonl(const std::string &path);

/// Sequences as a batch: ids i64 [rows, length] and attention mask (1 =
/// token). `leftPad` puts padding before the tokens (prompts, as
/// generation takes them), else after (training sequences). A longer
/// sequence keeps its last `length` tokens when left-padded (a prompt's
/// end), its first otherwise.
struct PaddedBatch {
  HostTensor ids, mask;
};
PaddedBatch padSequences(const std::vector<std::vector<int64_t>> &rows,
                         int64_t length, int64_t padId, bool leftPad);

/// `a` followed by `b`.
std::vector<int64_t> concatTokens(const std::vector<int64_t> &a,
                                  const std::vector<int64_t> &b);

} // namespace hybrid
