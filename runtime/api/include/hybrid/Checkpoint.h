// Training checkpoints: a run's weights and optimizer state, saved and resumed.
//
// A checkpoint is a folder holding model.safetensors (the weights under
// their HuggingFace names: transformers and Engine::loadWeights read it) and
// optimizer.safetensors (moments, f32 masters, loss scale, step count; the
// run's step count in its metadata); with LoRA also the adapters as PEFT
// saves them (adapter_config.json, adapter_model.safetensors). Both functions
// use the engine from the calling thread only, as Engine requires.
#pragma once

#include "hybrid/Engine.h"

#include <cstdint>
#include <set>
#include <string>

namespace hybrid {

/// How far a run had come when it was saved.
struct CheckpointProgress {
  /// Optimizer steps applied (the opt.step state): where the learning-rate
  /// schedule goes on.
  int64_t appliedSteps = 0;
  /// Steps run, fp16 overflows that were skipped included: where the data
  /// goes on. At least appliedSteps.
  int64_t globalSteps = 0;
};

std::string checkpointModelPath(const std::string &dir);
std::string checkpointOptimizerPath(const std::string &dir);
/// ema.safetensors: the moving average of the weights, when the engine
/// keeps one (Engine::enableEma).
std::string checkpointEmaPath(const std::string &dir);

/// Writes the moving average of the weights (Engine::enableEma) as a
/// checkpoint: f32 tensors under the parameters' HuggingFace names
/// (transformers and Engine::loadWeights read it; another bundle's dtype
/// converts on load), beta and `producer` in its metadata; atomically.
/// Throws hybrid::Error when the engine keeps no average or the file
/// cannot be written.
void saveEmaWeights(Engine &engine, const std::string &path,
                    const std::string &producer = "hybridc");
/// Puts a saved average back (resuming): every parameter's tensor of
/// `path` (f32, bf16 or f16, converted to f32) into its "ema." state. The
/// engine's average must be enabled (its beta stays enableEma's). Throws
/// hybrid::Error naming the file and the tensor: one missing, mis-shaped,
/// not a float, or not a parameter of this bundle (its tied names aside).
void loadEmaWeights(Engine &engine, const std::string &path);

/// Writes the engine's weights, its moving average when it keeps one
/// (checkpointEmaPath) and its optimizer state to `dir` (created when
/// absent; its other files are left alone), each file atomically (temp file
/// and rename), the optimizer's last; `producer` goes into its metadata.
/// Throws hybrid::Error naming the file that could not be written.
void saveCheckpoint(Engine &engine, const std::string &dir, int64_t globalSteps,
                    const std::string &producer = "hybridc");

/// Binds the weights saved in `dir` (allowedExtra as Engine::loadWeights)
/// and puts the optimizer state back; an engine that keeps a moving average
/// gets the saved one back (loadEmaWeights), or, from a checkpoint without
/// one, starts it again from the restored weights. Throws hybrid::Error naming
/// the file: a state this bundle does not have, a global_steps that is not a
/// count of at least opt.step, and every error of loadWeights.
CheckpointProgress
restoreCheckpoint(Engine &engine, const std::string &dir,
                  const std::set<std::string> &allowedExtra = {});

} // namespace hybrid
