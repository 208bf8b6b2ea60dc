// The DeepSpeed-style training loop.
#include "hybrid/Trainer.h"

#include "hybrid/Checkpoint.h"

#include <chrono>
#include <fstream>
#include <sstream>

namespace hybrid {

TrainConfigFile loadTrainConfig(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw Error(path + ": cannot read the configuration");
  // A configuration is a few kB; reading stops past 16 MiB (a file that
  // never ends, /dev/zero, grew without bound).
  constexpr std::streamsize kMaxBytes = 16 << 20;
  std::string text(kMaxBytes + 1, '\0');
  file.read(text.data(), kMaxBytes + 1);
  text.resize(static_cast<size_t>(file.gcount()));
  if (static_cast<std::streamsize>(text.size()) > kMaxBytes)
    throw Error(path + ": larger than 16 MiB, not a DeepSpeed configuration");
  TrainConfigFile parsed;
  try {
    parsed.config = parseTrainConfig(text, &parsed.unknownKeys);
  } catch (const Error &e) {
    throw Error(path + ": " + e.what());
  }
  return parsed;
}

Trainer::Trainer(Engine &engine, TrainConfig config, TokenDataset data)
    : engine_(&engine), config_(std::move(config)), data_(std::move(data)) {
  checkTrainConfig(config_, trainPlanOf(engine.bundle()));
  if (data_.sequences() < config_.microBatchSize)
    throw Error(data_.source() + ": " + std::to_string(data_.sequences()) +
                " sequences, fewer than one micro-batch (" +
                std::to_string(config_.microBatchSize) + ")");
}

void Trainer::start() {
  engine_->initOptimizer(config_.optimizer.lossScale);
  global_ = applied_ = 0;
  data_.seek(0);
}

void Trainer::resume(const std::string &dir,
                     const std::set<std::string> &allowedExtra) {
  const CheckpointProgress progress =
      restoreCheckpoint(*engine_, dir, allowedExtra);
  global_ = progress.globalSteps;
  applied_ = progress.appliedSteps;
  data_.seek(global_ * config_.trainBatchSize);
}

double Trainer::learningRateAt(int64_t applied) const {
  return learningRate(config_.scheduler, config_.optimizer.lr, applied);
}

TrainStepReport Trainer::step() {
  const auto start = std::chrono::steady_clock::now();
  TrainStepReport report;
  report.step = global_;
  for (int64_t k = 0; k < config_.gradientAccumulationSteps; ++k) {
    const TokenBatch batch = data_.next(config_.microBatchSize);
    report.loss += engine_->forwardBackward(batch.inputIds, batch.mask(),
                                            batch.labelsOrNull());
  }
  report.loss /= static_cast<double>(config_.gradientAccumulationSteps);
  StepConfig update = config_.optimizer;
  update.lr = static_cast<float>(learningRateAt(applied_));
  report.lr = update.lr;
  report.result = engine_->step(update);
  report.skipped = report.result.overflow;
  report.ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  report.tokensPerSecond = static_cast<double>(config_.trainBatchSize) *
                           static_cast<double>(data_.seq()) /
                           (report.ms / 1000);
  ++global_;
  if (!report.skipped)
    ++applied_;
  return report;
}

void Trainer::save(const std::string &dir, const std::string &producer) {
  saveCheckpoint(*engine_, dir, global_, producer);
}

} // namespace hybrid
