// The causal-LM training loop over an Engine, configured as DeepSpeed is.
//
// DESIGN §2.9: micro-batches from a TokenDataset accumulated into optimizer
// steps, gradient clipping, the learning-rate schedule, fp16 loss scaling
// with skipped steps, checkpoints and resuming from them.
#pragma once

#include "hybrid/Engine.h"
#include "hybrid/TokenDataset.h"
#include "hybrid/TrainConfig.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace hybrid {

/// A DeepSpeed-style JSON configuration file, parsed.
struct TrainConfigFile {
  TrainConfig config;
  /// Keys hybridc does not know ("zero_optimization.foo"): ignored, so
  /// the caller should say so.
  std::vector<std::string> unknownKeys;
};

/// Reads and parses the configuration at `path` (parseTrainConfig). Throws
/// hybrid::Error "<path>: cannot read the configuration" or "<path>:
/// config: <what is wrong, naming the key>".
TrainConfigFile loadTrainConfig(const std::string &path);

/// What one optimizer step did.
struct TrainStepReport {
  int64_t step = 0; ///< its index in the run (0 first), skipped ones counted
  bool skipped = false;       ///< fp16 overflow: weights, schedule unchanged
  double loss = 0;            ///< mean of its micro-batches' losses
  double lr = 0;              ///< the learning rate it applied
  StepResult result;          ///< gradient norm, loss scale and its change
  double ms = 0;              ///< wall time, micro-batches and update
  double tokensPerSecond = 0; ///< train_batch_size x seq per second
};

/// Ownership: refers to an Engine it does not own (it must outlive the
/// trainer) and owns its configuration and data. Thread safety: one thread
/// at a time, and none may use the engine meanwhile.
class Trainer {
public:
  /// Checks `config` against what the engine's bundle was compiled for
  /// (checkTrainConfig) and `data` against one micro-batch. Throws
  /// hybrid::Error naming the key or the data.
  Trainer(Engine &engine, TrainConfig config, TokenDataset data);

  /// Starts the optimizer afresh from the weights the engine holds (f32
  /// masters, the config's loss scale) at step 0 of the data.
  void start();
  /// Goes on with the run saved in `dir` (restoreCheckpoint; allowedExtra as
  /// Engine::loadWeights): the schedule from its applied steps, the data
  /// from its steps run.
  void resume(const std::string &dir,
              const std::set<std::string> &allowedExtra = {});

  /// One optimizer step: gradient_accumulation_steps micro-batches of
  /// train_micro_batch_size_per_gpu sequences (the data's next ones),
  /// forward and backward each, then the update at the schedule's learning
  /// rate. As DeepSpeed, a step skipped for an fp16 overflow does not
  /// advance the schedule. Throws hybrid::Error as Engine::step does.
  TrainStepReport step();

  /// Saves the run so far (saveCheckpoint) for resume().
  void save(const std::string &dir, const std::string &producer = "hybridc");

  /// The learning rate of optimizer step `applied` (0 first) under the
  /// config's schedule.
  double learningRateAt(int64_t applied) const;

  int64_t globalSteps() const { return global_; }   ///< steps run
  int64_t appliedSteps() const { return applied_; } ///< steps not skipped
  const TrainConfig &config() const { return config_; }
  const TokenDataset &data() const { return data_; }

private:
  Engine *engine_;
  TrainConfig config_;
  TokenDataset data_;
  int64_t global_ = 0, applied_ = 0;
};

} // namespace hybrid
