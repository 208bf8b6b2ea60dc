// hybrid-rlhf step1: DeepSpeed-Chat's step 1, supervised fine-tuning of a
// causal LM on prompt + chosen answer pairs from a JSONL file, the loss on
// the answer's tokens only (HF labels, -100 on the prompt and padding).
#include "RlhfCommands.h"
#include "RlhfCommon.h"

#include "hybrid/Checkpoint.h"
#include "hybrid/Metrics.h"
#include "hybrid/RlhfData.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

namespace hybrid::run {

namespace {

namespace fs = std::filesystem;

struct Step1Options {
  static constexpr const char *kName = "step1";
  std::optional<std::string> model, dataPath, outputDir, bundlePath;
  DeviceFlags device;
  std::string dtype, scheduler = "cosine";
  int64_t batchSize = 16, accumulation = 1, epochs = 1, maxSeqLen = 512,
          warmup = 0;
  double lr = 9.65e-6, weightDecay = 0, maxGradNorm = 1;
  bool trainOnPrompt = false;
  uint64_t seed = 1234;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "DeepSpeed-Chat's step 1: supervised fine-tuning of a causal LM "
             "on prompt + chosen answers",
             "--data_path is JSONL, {\"prompt\": [ids], \"chosen\": [ids]} a "
             "line (token ids; a line without a prompt trains on the whole "
             "of chosen). Each sequence is the prompt then the answer, cut "
             "to --max_seq_len and right-padded; the loss covers the "
             "answer's tokens (--train_on_prompt: the prompt's too). The "
             "model (an HF folder) is compiled by hybridc; the result goes "
             "to OUTPUT_DIR as an HF checkpoint (config.json, "
             "model.safetensors) beside metrics.jsonl.");
    cmd.add_option("--model_name_or_path", model, "the model's HF folder")
        ->type_name("DIR");
    cmd.add_option("--data_path", dataPath, "JSONL of prompt/chosen pairs")
        ->type_name("FILE");
    cmd.add_option("--output_dir", outputDir, "the fine-tuned checkpoint")
        ->type_name("DIR");
    cmd.add_option("--bundle", bundlePath,
                   "the model compiled already (hybridc compile DIR --train)")
        ->type_name("BUNDLE");
    addDtypeFlag(cmd, dtype);
    device.addTo(cmd);
    auto count = [&](const char *flag, int64_t &v, const char *what) {
      addCountFlag(cmd, flag, v, what);
    };
    count("--per_device_train_batch_size", batchSize,
          "sequences a micro-batch");
    count("--gradient_accumulation_steps", accumulation,
          "micro-batches an optimizer step");
    count("--num_train_epochs", epochs, "passes over the data");
    count("--max_seq_len", maxSeqLen, "prompt + answer tokens at most");
    cmd.add_option("--num_warmup_steps", warmup, "linear warm-up steps")
        ->capture_default_str()
        ->transform(integerAtLeast(0));
    cmd.add_option("--lr_scheduler_type", scheduler, "cosine or constant")
        ->capture_default_str()
        ->check(CLI::IsMember({"cosine", "constant"}));
    auto real = [&](const char *flag, double &v, const char *what) {
      addNumberFlag(cmd, flag, v, what);
    };
    real("--learning_rate", lr, "AdamW's peak learning rate");
    real("--weight_decay", weightDecay, "AdamW's weight decay");
    real("--max_grad_norm", maxGradNorm, "gradient clipping (0: none)");
    cmd.add_flag("--train_on_prompt", trainOnPrompt,
                 "the loss covers the prompt's tokens too");
    cmd.add_option("--seed", seed, "the data order")
        ->capture_default_str()
        ->transform(seedNumber());
  }

  double learningRate(int64_t step, int64_t total) const {
    if (step < warmup)
      return lr * static_cast<double>(step + 1) /
             static_cast<double>(warmup + 1);
    if (scheduler == "constant" || total <= warmup)
      return lr;
    const double progress = static_cast<double>(step - warmup) /
                            static_cast<double>(total - warmup);
    return lr * 0.5 * (1 + std::cos(M_PI * progress));
  }

  int run(const CLI::App &cmd) const {
    const std::string &modelDir = required(cmd, model, "--model_name_or_path");
    const std::string &data = required(cmd, dataPath, "--data_path");
    const std::string &out = required(cmd, outputDir, "--output_dir");
    std::vector<RlhfRecord> records = readRlhfJsonl(data);
    std::vector<std::vector<int64_t>> rows, labels;
    for (size_t i = 0; i < records.size(); ++i) {
      const RlhfRecord &r = records[i];
      if (r.chosen.empty())
        throw Error(data + ": record " + std::to_string(i + 1) +
                    " has no \"chosen\" answer");
      std::vector<int64_t> seq = concatTokens(r.prompt, r.chosen);
      std::vector<int64_t> label = seq;
      if (!trainOnPrompt)
        std::fill_n(label.begin(), std::min(label.size(), r.prompt.size()),
                    int64_t{-100});
      seq.resize(std::min<size_t>(seq.size(), maxSeqLen));
      label.resize(seq.size());
      rows.push_back(std::move(seq));
      labels.push_back(std::move(label));
    }
    fs::create_directories(out);
    std::shared_ptr<Device> dev = device.open(cmd);
    TempDir tmp;
    const std::string bundle =
        bundleFor(bundlePath, modelDir, {"--train"}, dtype,
                  (tmp.path / "model.hyb").string(), "model");
    OpenedEngine opened = openEngine(dev, bundle);
    Engine &engine = opened.engine;
    engine.loadWeights(modelDir);
    // Padding is masked out of attention and loss: any id in the table.
    const int64_t pad = 0;

    const int64_t n = static_cast<int64_t>(rows.size());
    const int64_t microPerEpoch = (n + batchSize - 1) / batchSize;
    const int64_t total =
        (microPerEpoch * epochs + accumulation - 1) / accumulation;
    progress("SFT: " + std::to_string(n) + " sequences, " +
             std::to_string(epochs) + " epochs, " + std::to_string(total) +
             " optimizer steps" + onDevice(*dev));
    std::ofstream metrics(fs::path(out) / "metrics.jsonl");
    std::mt19937_64 rng(seed);
    std::vector<int64_t> order(n);
    int64_t step = 0, micro = 0;
    double lossSum = 0;
    auto start = std::chrono::steady_clock::now();
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
      std::iota(order.begin(), order.end(), int64_t{0});
      std::shuffle(order.begin(), order.end(), rng);
      for (int64_t first = 0; first < n; first += batchSize) {
        std::vector<std::vector<int64_t>> ids, labs;
        for (int64_t i = first; i < std::min(n, first + batchSize); ++i) {
          ids.push_back(rows[order[i]]);
          labs.push_back(labels[order[i]]);
        }
        int64_t len = 0;
        for (const auto &r : ids)
          len = std::max<int64_t>(len, r.size());
        PaddedBatch b = padSequences(ids, len, pad, /*leftPad=*/false);
        PaddedBatch l = padSequences(labs, len, -100, /*leftPad=*/false);
        lossSum += engine.forwardBackward(b.ids, &b.mask, &l.ids);
        if (++micro % accumulation != 0 &&
            !(epoch + 1 == epochs && first + batchSize >= n))
          continue;
        StepConfig config;
        config.lr = static_cast<float>(learningRate(step, total));
        config.beta1 = 0.9f;
        config.beta2 = 0.95f;
        config.weightDecay = static_cast<float>(weightDecay);
        config.maxGradNorm = static_cast<float>(maxGradNorm);
        StepResult result = engine.step(config);
        const double loss = lossSum / static_cast<double>(result.microBatches);
        lossSum = 0;
        const double seconds = std::chrono::duration<double>(
                                   std::chrono::steady_clock::now() - start)
                                   .count();
        ++step;
        std::printf("step %lld/%lld (epoch %lld): loss %.4f, lr %.3g, grad "
                    "norm %.3f, %.1f s\n",
                    static_cast<long long>(step), static_cast<long long>(total),
                    static_cast<long long>(epoch + 1), loss, config.lr,
                    result.gradNorm, seconds);
        std::fflush(stdout);
        metrics << nlohmann::json{{"step", step},
                                  {"epoch", epoch + 1},
                                  {"loss", loss},
                                  {"lr", config.lr},
                                  {"grad_norm", result.gradNorm},
                                  {"seconds", seconds}}
                       .dump()
                << "\n";
      }
    }
    // What the model now answers to the first prompt, greedily.
    if (engine.hasExecutable("prefill") && !records[0].prompt.empty()) {
      const RlhfRecord &first = records[0];
      PaddedBatch p = padSequences({first.prompt},
                                   static_cast<int64_t>(first.prompt.size()),
                                   pad, /*leftPad=*/true);
      GenerateConfig gen;
      gen.maxNewTokens = static_cast<int64_t>(first.chosen.size());
      engine.eval();
      GenerateResult g = engine.generate(p.ids, &p.mask, gen);
      auto join = [](const int64_t *v, size_t n) {
        std::string s;
        for (size_t i = 0; i < n; ++i)
          s += (i ? " " : "") + std::to_string(v[i]);
        return s;
      };
      std::printf("sample: prompt [%s] -> [%s] (chosen [%s])\n",
                  join(first.prompt.data(), first.prompt.size()).c_str(),
                  join(g.tokens.as<int64_t>(), g.tokens.numel()).c_str(),
                  join(first.chosen.data(), first.chosen.size()).c_str());
    }
    saveCheckpoint(engine, out, step, "hybrid-rlhf step1");
    copyModelConfig(modelDir, out);
    std::printf("hybrid-rlhf: step1: %lld steps, peak %.2f GiB%s -> %s\n",
                static_cast<long long>(step), peakMemoryGiB(*dev),
                onDevice(*dev).c_str(), out.c_str());
    return 0;
  }
};

} // namespace

Subcommand addStep1(CLI::App &root) { return subcommand<Step1Options>(root); }

} // namespace hybrid::run
