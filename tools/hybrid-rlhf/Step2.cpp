// hybrid-rlhf step2: DeepSpeed-Chat's step 2, reward-model training: a value
// model (the base model plus v_head) learns to score the chosen answer of
// each pair above the rejected one (the pairwise ranking loss in the
// bundle's graph, runtime/api/include/hybrid/RewardModel.h).
#include "RlhfCommands.h"
#include "RlhfCommon.h"

#include "hybrid/Checkpoint.h"
#include "hybrid/Metrics.h"
#include "hybrid/RewardModel.h"
#include "hybrid/RlhfData.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

namespace hybrid::run {

namespace {

namespace fs = std::filesystem;

/// Pairs as sequences: prompt + chosen and prompt + rejected, cut to a
/// length.
struct Pairs {
  std::vector<std::vector<int64_t>> chosen, rejected;
  size_t size() const { return chosen.size(); }
};

Pairs readPairs(const std::string &path, int64_t maxSeqLen) {
  Pairs pairs;
  std::vector<RlhfRecord> records = readRlhfJsonl(path);
  for (size_t i = 0; i < records.size(); ++i) {
    const RlhfRecord &r = records[i];
    if (r.chosen.empty() || r.rejected.empty())
      throw Error(path + ": record " + std::to_string(i + 1) +
                  " needs \"chosen\" and \"rejected\" answers");
    std::vector<int64_t> c = concatTokens(r.prompt, r.chosen);
    std::vector<int64_t> j = concatTokens(r.prompt, r.rejected);
    c.resize(std::min<size_t>(c.size(), maxSeqLen));
    j.resize(std::min<size_t>(j.size(), maxSeqLen));
    pairs.chosen.push_back(std::move(c));
    pairs.rejected.push_back(std::move(j));
  }
  return pairs;
}

/// Pairs `rows` of `pairs`, both sides right-padded to one length.
struct PairBatch {
  PaddedBatch chosen, rejected;
};
PairBatch batchOf(const Pairs &pairs, const std::vector<int64_t> &rows) {
  std::vector<std::vector<int64_t>> c, j;
  int64_t length = 0;
  for (int64_t r : rows) {
    c.push_back(pairs.chosen[r]);
    j.push_back(pairs.rejected[r]);
    length = std::max<int64_t>({length, static_cast<int64_t>(c.back().size()),
                                static_cast<int64_t>(j.back().size())});
  }
  // Padding is masked out: any id of the table serves.
  return {padSequences(c, length, 0, /*leftPad=*/false),
          padSequences(j, length, 0, /*leftPad=*/false)};
}

struct Step2Options {
  static constexpr const char *kName = "step2";
  std::optional<std::string> model, dataPath, evalDataPath, outputDir,
      bundlePath;
  DeviceFlags device;
  std::string dtype;
  int64_t batchSize = 16, epochs = 1, maxSeqLen = 512;
  double lr = 5e-5, weightDecay = 0.1, maxGradNorm = 1;
  uint64_t seed = 1234;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "DeepSpeed-Chat's step 2: reward-model training on chosen / "
             "rejected pairs",
             "--data_path (and --eval_data_path) is JSONL, {\"prompt\": [ids], "
             "\"chosen\": [ids], \"rejected\": [ids]} a line. The reward "
             "model is the base model of --model_name_or_path (an HF folder: "
             "a causal LM, e.g. step 1's output, or a reward model) plus "
             "v_head, which starts at zero when the checkpoint lacks it; the "
             "loss is DeepSpeed-Chat's pairwise ranking loss over the tokens "
             "where the answers differ. Each epoch ends with the evaluation "
             "set's accuracy (chosen scored above rejected) and mean scores. "
             "OUTPUT_DIR gets the reward model (trunk + v_head.weight, "
             "config.json), step 3's critic and reward model.");
    cmd.add_option("--model_name_or_path", model, "the base model's HF folder")
        ->type_name("DIR");
    cmd.add_option("--data_path", dataPath, "JSONL of pairs")
        ->type_name("FILE");
    cmd.add_option("--eval_data_path", evalDataPath,
                   "JSONL of pairs to evaluate on (default: the training "
                   "pairs)")
        ->type_name("FILE");
    cmd.add_option("--output_dir", outputDir, "the reward model")
        ->type_name("DIR");
    cmd.add_option("--bundle", bundlePath,
                   "the model compiled already (hybridc compile DIR --head "
                   "value --train --reward)")
        ->type_name("BUNDLE");
    addDtypeFlag(cmd, dtype);
    device.addTo(cmd);
    auto count = [&](const char *flag, int64_t &v, const char *what) {
      addCountFlag(cmd, flag, v, what);
    };
    count("--per_device_train_batch_size", batchSize, "pairs a step");
    count("--num_train_epochs", epochs, "passes over the pairs");
    count("--max_seq_len", maxSeqLen, "prompt + answer tokens at most");
    auto real = [&](const char *flag, double &v, const char *what) {
      addNumberFlag(cmd, flag, v, what);
    };
    real("--learning_rate", lr, "AdamW's learning rate");
    real("--weight_decay", weightDecay, "AdamW's weight decay");
    real("--max_grad_norm", maxGradNorm, "gradient clipping (0: none)");
    cmd.add_option("--seed", seed, "the data order")
        ->capture_default_str()
        ->transform(seedNumber());
  }

  /// Accuracy and mean scores over `pairs`, batch by batch.
  struct Evaluation {
    double accuracy = 0, chosen = 0, rejected = 0;
  };
  Evaluation evaluate(Engine &engine, const Pairs &pairs) const {
    Evaluation e;
    const int64_t n = static_cast<int64_t>(pairs.size());
    double correct = 0;
    for (int64_t first = 0; first < n; first += batchSize) {
      std::vector<int64_t> rows(std::min(batchSize, n - first));
      std::iota(rows.begin(), rows.end(), first);
      PairBatch b = batchOf(pairs, rows);
      RewardRanking r = rewardEval(engine, b.chosen.ids, b.chosen.mask,
                                   b.rejected.ids, b.rejected.mask);
      correct += r.accuracy * static_cast<double>(rows.size());
      for (size_t i = 0; i < rows.size(); ++i) {
        e.chosen += r.chosenScores.as<float>()[i];
        e.rejected += r.rejectedScores.as<float>()[i];
      }
    }
    e.accuracy = correct / static_cast<double>(n);
    e.chosen /= static_cast<double>(n);
    e.rejected /= static_cast<double>(n);
    return e;
  }

  int run(const CLI::App &cmd) const {
    const std::string &modelDir = required(cmd, model, "--model_name_or_path");
    const std::string &data = required(cmd, dataPath, "--data_path");
    const std::string &out = required(cmd, outputDir, "--output_dir");
    const Pairs train = readPairs(data, maxSeqLen);
    const Pairs eval =
        evalDataPath ? readPairs(*evalDataPath, maxSeqLen) : train;
    fs::create_directories(out);
    std::shared_ptr<Device> dev = device.open(cmd);
    TempDir tmp;
    const std::string bundle =
        bundleFor(bundlePath, modelDir,
                  {"--head", "value", "--train", "--reward", "--no-generate"},
                  dtype, (tmp.path / "reward.hyb").string(), "reward model");
    OpenedEngine opened = openEngine(dev, bundle);
    Engine &engine = opened.engine;
    CheckpointBinding binding;
    binding.zeroIfMissing = {"v_head.weight"};
    engine.loadWeights(modelDir, binding);

    const int64_t n = static_cast<int64_t>(train.size());
    const int64_t perEpoch = (n + batchSize - 1) / batchSize;
    progress("reward model: " + std::to_string(n) + " pairs, " +
             std::to_string(epochs) + " epochs, " +
             std::to_string(perEpoch * epochs) + " steps" + onDevice(*dev));
    Evaluation before = evaluate(engine, eval);
    std::printf("before training: eval accuracy %.4f, chosen score %.4f, "
                "rejected score %.4f\n",
                before.accuracy, before.chosen, before.rejected);
    std::ofstream metrics(fs::path(out) / "metrics.jsonl");
    std::mt19937_64 rng(seed);
    std::vector<int64_t> order(n);
    int64_t step = 0;
    const auto start = std::chrono::steady_clock::now();
    Evaluation last = before;
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      std::iota(order.begin(), order.end(), int64_t{0});
      std::shuffle(order.begin(), order.end(), rng);
      double lossSum = 0, accuracySum = 0;
      for (int64_t first = 0; first < n; first += batchSize) {
        std::vector<int64_t> rows(order.begin() + first,
                                  order.begin() +
                                      std::min(n, first + batchSize));
        PairBatch b = batchOf(train, rows);
        RewardRanking r = rewardBackward(engine, b.chosen.ids, b.chosen.mask,
                                         b.rejected.ids, b.rejected.mask);
        StepConfig config;
        config.lr = static_cast<float>(lr);
        config.beta1 = 0.9f;
        config.beta2 = 0.95f;
        config.weightDecay = static_cast<float>(weightDecay);
        config.maxGradNorm = static_cast<float>(maxGradNorm);
        engine.step(config);
        lossSum += r.loss;
        accuracySum += r.accuracy;
        ++step;
      }
      last = evaluate(engine, eval);
      const double seconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
      const double loss = lossSum / static_cast<double>(perEpoch);
      std::printf("epoch %lld/%lld: loss %.4f, train accuracy %.4f; eval "
                  "accuracy %.4f, chosen score %.4f, rejected score %.4f; "
                  "%.1f s\n",
                  static_cast<long long>(epoch + 1),
                  static_cast<long long>(epochs), loss,
                  accuracySum / static_cast<double>(perEpoch), last.accuracy,
                  last.chosen, last.rejected, seconds);
      std::fflush(stdout);
      metrics << nlohmann::json{{"epoch", epoch + 1},
                                {"step", step},
                                {"loss", loss},
                                {"eval_accuracy", last.accuracy},
                                {"chosen_score", last.chosen},
                                {"rejected_score", last.rejected},
                                {"seconds", seconds}}
                     .dump()
              << "\n";
    }
    saveCheckpoint(engine, out, step, "hybrid-rlhf step2");
    copyModelConfig(modelDir, out);
    std::printf("hybrid-rlhf: step2: %lld steps, eval accuracy %.4f -> "
                "%.4f, peak %.2f GiB%s -> %s\n",
                static_cast<long long>(step), before.accuracy, last.accuracy,
                peakMemoryGiB(*dev), onDevice(*dev).c_str(), out.c_str());
    return 0;
  }
};

} // namespace

Subcommand addStep2(CLI::App &root) { return subcommand<Step2Options>(root); }

} // namespace hybrid::run
