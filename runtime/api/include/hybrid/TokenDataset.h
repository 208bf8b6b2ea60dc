// Token data for causal-LM training and generation.
//
// A batch of token ids with its attention mask and causal-LM labels (read
// from safetensors or drawn at random for a bundle), and a dataset of
// sequences served in micro-batches that cycles.
#pragma once

#include "hybrid/BundleDesc.h"
#include "hybrid/HostTensor.h"
#include "hybrid/SafeTensors.h"

#include <cstdint>
#include <optional>
#include <string>

namespace hybrid {

/// Token ids i64 [rows, seq] and, when the data has them, their attention
/// mask i64 [rows, seq] (1 = token, 0 = padding) and causal-LM labels i64
/// [rows, seq] (HF's: aligned with the ids, position t is scored against
/// labels[t + 1], -100 ignored; without them the loss scores the ids but
/// the padding).
///
/// Ownership: plain data; copies share the tensors' bytes (HostTensor).
/// Thread safety: as HostTensor.
struct TokenBatch {
  HostTensor inputIds;
  std::optional<HostTensor> attentionMask;
  std::optional<HostTensor> labels;

  int64_t rows() const { return inputIds.shape()[0]; }
  int64_t seq() const { return inputIds.shape()[1]; }
  /// The mask as Engine's calls take it: null when there is none.
  const HostTensor *mask() const {
    return attentionMask ? &*attentionMask : nullptr;
  }
  /// The labels as Engine's calls take them: null when there are none.
  const HostTensor *labelsOrNull() const { return labels ? &*labels : nullptr; }
  /// input_ids and attention_mask by name, as the model's executables
  /// (@forward, @logprobs) take them.
  NamedTensors inputs() const;
  /// inputs() and labels by name, as the loss's executables
  /// (@forward_loss, @train_step, @forward_backward) take them.
  NamedTensors lossInputs() const;
  /// `n` rows from row `first` on, wrapping around past the last row.
  TokenBatch rowsFrom(int64_t first, int64_t n) const;
  /// The first `n` tokens of every row (prompts cut from sequences);
  /// throws hybrid::Error when the rows are shorter.
  TokenBatch firstTokens(int64_t n) const;
};

/// Reads token ids, tensor `idsName` (int64 or int32, rank 2), and, when the
/// file holds them, `attention_mask` and `labels` of the same shape, as
/// int64. `what` describes the ids in messages ("int64 [batch, seq]").
/// Throws hybrid::Error, one line naming the file and the tensor: ids
/// missing, not integers or not rank 2; a mask or labels that are not
/// integers of their shape.
TokenBatch readTokenBatch(const SafeTensorsFile &file,
                          const std::string &idsName = "input_ids",
                          const std::string &what = "int64 [batch, seq]");

/// Deterministic random token ids [batch, seq] (no mask) for a bundle whose
/// forward takes input_ids and otherwise only inputs with defaults; ids
/// are drawn below the vocabulary read off its logits. The same arguments
/// give the same ids. Throws hybrid::Error for a bundle that takes other
/// inputs.
TokenBatch randomTokenBatch(const BundleDesc &bundle, int64_t batch,
                            int64_t seq);

/// Sequences to train on, i64 [sequences, seq] (with their mask and
/// labels), handed out in order as micro-batches and cycling: after the
/// last sequence comes the first.
///
/// Ownership: owns its tensors (a copy shares them) and its read position.
/// Thread safety: one thread at a time (next() moves the position).
class TokenDataset {
public:
  /// input_ids [sequences, seq] (and attention_mask, labels) of the
  /// safetensors file at `path`; throws hybrid::Error naming the file.
  static TokenDataset open(const std::string &path);
  /// `sequences` as the data; `source` names it in messages.
  explicit TokenDataset(TokenBatch sequences, std::string source = "tokens");

  int64_t sequences() const { return data_.rows(); }
  int64_t seq() const { return data_.seq(); }
  const std::string &source() const { return source_; }
  /// Every sequence, in order.
  const TokenBatch &tokens() const { return data_; }

  /// Moves the read position to sequence `index` (modulo sequences()): where
  /// a run that has consumed `index` sequences goes on.
  void seek(int64_t index);
  /// The next `n` sequences, wrapping around; the position moves past them.
  TokenBatch next(int64_t n);

private:
  TokenBatch data_;
  std::string source_;
  int64_t position_ = 0;
};

} // namespace hybrid
