// Saving and restoring a training run's weights and optimizer state.
#include "hybrid/Checkpoint.h"

#include "hybrid/EngineState.h"
#include "hybrid/Escape.h"
#include "hybrid/SafeTensors.h"

#include <cstdlib>
#include <sys/stat.h>

namespace hybrid {

std::string checkpointModelPath(const std::string &dir) {
  return dir + "/model.safetensors";
}

std::string checkpointOptimizerPath(const std::string &dir) {
  return dir + "/optimizer.safetensors";
}

void saveCheckpoint(Engine &engine, const std::string &dir, int64_t globalSteps,
                    const std::string &producer) {
  // One level, as `mkdir` does: a mistyped parent is an error when the
  // first file cannot be created.
  ::mkdir(dir.c_str(), 0755);
  engine.weights().saveSafeTensors(checkpointModelPath(dir));
  // The adapters again as PEFT's files, for PeftModel.from_pretrained and
  // Engine::loadAdapters (the model file above keeps the run resumable).
  if (engine.bundle().lora.enabled())
    engine.saveAdapters(dir);
  writeSafeTensors(
      checkpointOptimizerPath(dir), optimizerState(engine),
      {{"producer", producer}, {"global_steps", std::to_string(globalSteps)}});
}

CheckpointProgress
restoreCheckpoint(Engine &engine, const std::string &dir,
                  const std::set<std::string> &allowedExtra) {
  engine.loadWeights(checkpointModelPath(dir), allowedExtra);
  const std::string path = checkpointOptimizerPath(dir);
  SafeTensorsFile saved = SafeTensorsFile::open(path);
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
