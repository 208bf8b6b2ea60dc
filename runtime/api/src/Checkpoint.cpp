// Saving and restoring a training run's weights and optimizer state.
#include "hybrid/Checkpoint.h"

#include "hybrid/EngineState.h"
#include "hybrid/Escape.h"
#include "hybrid/SafeTensors.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sys/stat.h>

namespace hybrid {

std::string checkpointModelPath(const std::string &dir) {
  return dir + "/model.safetensors";
}

std::string checkpointOptimizerPath(const std::string &dir) {
  return dir + "/optimizer.safetensors";
}

namespace {

/// A fresh id naming one save: time and randomness, 64 bits in hex.
std::string checkpointId() {
  std::random_device random;
  const uint64_t v =
      (static_cast<uint64_t>(random()) << 32 ^ random()) ^
      static_cast<uint64_t>(
          std::chrono::steady_clock::now().time_since_epoch().count());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace

std::string checkpointEmaPath(const std::string &dir) {
  return dir + "/ema.safetensors";
}

void saveEmaWeights(Engine &engine, const std::string &path,
                    const std::string &producer) {
  if (!engine.emaEnabled())
    throw Error(path + ": the engine keeps no moving average (call "
                       "enableEma first)");
  char beta[32];
  std::snprintf(beta, sizeof beta, "%.9g", engine.emaBeta());
  writeSafeTensors(path, emaWeights(engine),
                   {{"producer", producer}, {"ema_beta", beta}});
}

void loadEmaWeights(Engine &engine, const std::string &path) {
  if (!engine.emaEnabled())
    throw Error(path + ": the engine keeps no moving average (call "
                       "enableEma first)");
  SafeTensorsFile saved = SafeTensorsFile::open(path);
  const WeightStore &w = engine.weights();
  const std::vector<std::string> &tied = engine.bundle().tied;
  for (const SafeTensorsEntry &e : saved.entries())
    if (!w.find(e.name) &&
        std::find(tied.begin(), tied.end(), e.name) == tied.end())
      throw Error(path + ": '" + escapeControlCharacters(e.name) +
                  "' is not a parameter of this bundle");
  NamedTensors values;
  for (size_t i = 0; i < w.size(); ++i) {
    const SafeTensorsEntry *e = saved.find(w.name(i));
    if (!e)
      throw Error(path + ": no moving average of parameter '" + w.name(i) +
                  "'");
    if (e->shape != w.shape(i))
      throw Error(path + ": '" + w.name(i) + "' is " + shapeToString(e->shape) +
                  ", the parameter " + shapeToString(w.shape(i)));
    values[w.name(i)] = saved.toHost(*e, DType::F32);
  }
  // Every tensor checked before any state changes.
  for (const auto &[name, value] : values)
    copyStateFromHost(engine, "ema." + name, value);
}

void saveCheckpoint(Engine &engine, const std::string &dir, int64_t globalSteps,
                    const std::string &producer) {
  // One level, as `mkdir` does: a mistyped parent is an error when the
  // first file cannot be created.
  ::mkdir(dir.c_str(), 0755);
  // The two files are one checkpoint: both carry the same id, and resuming
  // refuses a pair whose ids differ (a save stopped between the files).
  const std::string id = checkpointId();
  NamedTensors state = optimizerState(engine);
  if (state.empty())
    throw Error(checkpointOptimizerPath(dir) +
                ": no optimizer state to save (run a step first)");
  engine.weights().saveSafeTensors(checkpointModelPath(dir),
                                   {{"checkpoint_id", id}});
  // The adapters again as PEFT's files, for PeftModel.from_pretrained and
  // Engine::loadAdapters (the model file above keeps the run resumable).
  if (engine.bundle().lora.enabled())
    engine.saveAdapters(dir);
  if (engine.emaEnabled())
    saveEmaWeights(engine, checkpointEmaPath(dir), producer);
  writeSafeTensors(checkpointOptimizerPath(dir), state,
                   {{"producer", producer},
                    {"global_steps", std::to_string(globalSteps)},
                    {"checkpoint_id", id}});
}

CheckpointProgress
restoreCheckpoint(Engine &engine, const std::string &dir,
                  const std::set<std::string> &allowedExtra) {
  const std::string path = checkpointOptimizerPath(dir);
  SafeTensorsFile saved = SafeTensorsFile::open(path);
  // Every optimizer state the bundle has must be there: a file without
  // them would restart the moments and the step count silently.
  for (size_t i = 0; i < engine.states().size(); ++i) {
    const std::string &name = engine.states().desc(i).name;
    if (name.rfind("opt.", 0) == 0 && name.rfind("opt.grad.", 0) != 0 &&
        !saved.find(name))
      throw Error(path + ": no state '" + name +
                  "' (a checkpoint saves every optimizer state)");
  }
  {
    SafeTensorsFile model = SafeTensorsFile::open(checkpointModelPath(dir));
    auto id = [](const SafeTensorsFile &f) {
      auto it = f.metadata().find("checkpoint_id");
      return it == f.metadata().end() ? std::string() : it->second;
    };
    if (id(saved) != id(model))
      throw Error(dir + ": model.safetensors and optimizer.safetensors are "
                        "from different saves (one interrupted between the "
                        "two files?); resume from another checkpoint");
  }
  engine.loadWeights(checkpointModelPath(dir), allowedExtra);
  if (engine.emaEnabled()) {
    struct stat st;
    if (::stat(checkpointEmaPath(dir).c_str(), &st) == 0)
      loadEmaWeights(engine, checkpointEmaPath(dir));
    else
      engine.enableEma(engine.emaBeta());
  }
  CheckpointProgress progress;
  for (const SafeTensorsEntry &e : saved.entries()) {
    const std::optional<size_t> index = engine.states().find(e.name);
    if (!index)
      throw Error(path + ": state '" + e.name + "' is not this bundle's");
    HostTensor host = saved.toHost(e, engine.states().desc(*index).dtype);
    copyStateFromHost(engine, e.name, host);
    if (e.name == "opt.step")
      progress.appliedSteps = static_cast<int64_t>(host.as<float>()[0]);
  }
  // Without the count (a checkpoint of no skipped step), the applied steps
  // are the steps run.
  progress.globalSteps = progress.appliedSteps;
  const auto &metadata = saved.metadata();
  if (auto it = metadata.find("global_steps"); it != metadata.end()) {
    char *end = nullptr;
    const long long n = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end || n < progress.appliedSteps)
      throw Error(path + ": global_steps '" +
                  escapeControlCharacters(it->second) +
                  "' is not a step count of at least opt.step (" +
                  std::to_string(progress.appliedSteps) + ")");
    progress.globalSteps = n;
  }
  return progress;
}

} // namespace hybrid
