// hybrid-run train-step, backward, train and ppo-step.
//
// The training library's runs (hybrid/TrainStep.h, Benchmark.h, Trainer.h,
// PpoShapedStep.h) from the command line, their reports on stderr.
#include "CommandLine.h"

#include "hybrid/Benchmark.h"
#include "hybrid/Checkpoint.h"
#include "hybrid/EngineState.h"
#include "hybrid/Escape.h"
#include "hybrid/PpoShapedStep.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/Trainer.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

namespace hybrid::run {

namespace {

/// The bundle and engine of a training subcommand, whose bundle must hold
/// `executable`, else "<bundle>: no <missing> (compile the model with
/// hybridc --train)".
OpenedEngine openForTraining(const CLI::App &cmd, const DeviceFlags &device,
                             const std::string &bundlePath,
                             const char *executable, const char *missing) {
  OpenedEngine opened = openEngine(device.open(cmd), bundlePath);
  const Engine &engine = opened.engine;
  if (!engine.hasExecutable(executable) && engine.hasExecutable("backward"))
    throw Error(bundlePath + ": no " + missing +
                " (the model has no loss of its own, a value head: it trains "
                "through hybrid-run backward from " +
                engine.backwardCotangent() + ")");
  if (!engine.hasExecutable(executable))
    throw Error(bundlePath + ": no " + missing +
                " (compile the model with hybridc --train)");
  return opened;
}

/// What happened to the loss scale in a skipped step: DeepSpeed's
/// "OVERFLOW! Skipping step. Attempted loss scale: ...".
std::string lossScaleChange(const StepResult &r, const LossScaleConfig &l) {
  char change[128];
  if (!l.dynamic)
    std::snprintf(change, sizeof change, "static loss scale %.0f", r.lossScale);
  else if (r.nextLossScale < r.lossScale)
    std::snprintf(change, sizeof change, "loss scale %.0f -> %.0f", r.lossScale,
                  r.nextLossScale);
  else
    std::snprintf(change, sizeof change,
                  "loss scale %.0f kept, hysteresis %lld -> %lld", r.lossScale,
                  static_cast<long long>(r.hysteresisLeft + 1),
                  static_cast<long long>(r.hysteresisLeft));
  return change;
}

} // namespace

struct TrainStep {
  static constexpr const char *kName = "train-step";
  TrainStepHyperparameters hyper;
  RunFlags flags;
  std::optional<std::string> optimizer, betas, nesterov;
  std::optional<double> peakFlops;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "One causal-LM training step (a bundle compiled with hybridc "
             "--train), or its timing on random weights",
             "--inputs holds input_ids (and attention_mask, labels); the "
             "step's loss (HF's\nlabels, shifted as HF does, -100 ignored; "
             "without labels input_ids, -100 where\nattention_mask is 0), "
             "gradients and update go to --out: loss, grad.<name>,\n"
             "logits_after and, for bf16/f16, "
             "opt.master.<name>. With --random-weights and\n--batch/--seq: a "
             "warm-up and --repeat (3) timed steps; prints the median and\n"
             "best step, tokens/s, the model FLOPs of a step (6 x trainable "
             "params x tokens\n+ attention's 12 x layers x width x T per "
             "token), FLOP/s, MFU, the losses\nand peak memory.");
    flags.addTo(cmd, "--inputs", "--seq");
    for (auto [flag, value, help] :
         {std::tuple<const char *, std::optional<float> *, const char *>{
              "--lr", &hyper.lr, "learning rate (default 1e-3)"},
          {"--eps", &hyper.eps, "AdamW's eps (default 1e-8)"},
          {"--weight-decay", &hyper.weightDecay,
           "default 0.01 (AdamW), 0 (SGD)"},
          {"--momentum", &hyper.momentum, "SGD's (default 0)"},
          {"--dampening", &hyper.dampening, "SGD's (default 0)"}})
      cmd.add_option(flag, *value, help)->transform(nonNegativeNumber());
    cmd.add_option("--peak-flops", peakFlops,
                   "the device's peak FLOP/s for MFU (default 989.4e12, the "
                   "H200's dense bf16)")
        ->check(CLI::Validator(
            [](std::string &value) -> std::string {
              std::string checked = value;
              std::string bad = nonNegativeNumber()(checked);
              if (bad.empty() && std::stod(checked) == 0)
                bad = "wants a positive number of FLOP/s, got '" + value + "'";
              return bad;
            },
            ">0"));
    cmd.add_option("--optimizer", optimizer,
                   "adamw or sgd: the one the bundle was compiled with");
    cmd.add_option("--betas", betas, "AdamW's B1,B2 (default 0.9,0.999)");
    cmd.add_option("--nesterov", nesterov, "SGD's, 0 or 1 (default 0)");
  }

  /// --betas B1,B2 and --nesterov 0|1, into `h`.
  void parsePairs(const CLI::App &cmd, TrainStepHyperparameters &h) const {
    if (nesterov) {
      if (*nesterov != "0" && *nesterov != "1")
        usageError(cmd, "--nesterov wants 0 or 1, got '" + *nesterov + "'");
      h.nesterov = *nesterov == "1";
    }
    if (!betas)
      return;
    const size_t comma = betas->find(',');
    if (comma == std::string::npos)
      usageError(cmd, "--betas wants B1,B2, got '" + *betas + "'");
    std::string beta[2] = {betas->substr(0, comma), betas->substr(comma + 1)};
    for (std::string &b : beta)
      if (std::string bad = nonNegativeNumber()(b); !bad.empty())
        throw UsageError{"--betas " + bad};
    h.beta1 = std::stof(beta[0]);
    h.beta2 = std::stof(beta[1]);
    if (*h.beta1 >= 1 || *h.beta2 >= 1)
      usageError(cmd, "--betas must be below 1, got '" + *betas + "'");
  }

  int run(const CLI::App &cmd) const {
    const WeightFlags &weights = flags.engine.weights;
    const std::string &bundlePath = flags.engine.bundle.get(cmd);
    // The timing form: random weights and tokens, no files.
    const bool timed =
        weights.randomSeed || flags.shapeGiven() || flags.repeat || peakFlops;
    if (timed) {
      if (!weights.randomSeed)
        usageError(cmd, "--batch, --seq, --repeat and --peak-flops time "
                        "random weights: give --random-weights SEED");
      for (const char *flag :
           {"--weights", "--inputs", "--out", "--allow-extra"})
        if (cmd.count(flag))
          usageError(cmd, std::string(flag) +
                              " and --random-weights exclude each other (the "
                              "timing reads and writes no files)");
    } else {
      const std::string &weightsPath = required(cmd, weights.path, "--weights");
      const std::string &inputsPath = required(cmd, flags.inputs, "--inputs");
      checkOutputIsNoInput(cmd, required(cmd, flags.out, "--out"), bundlePath,
                           weightsPath, inputsPath);
    }
    const bool sgd = optimizer && *optimizer == "sgd";
    if (optimizer && !sgd && *optimizer != "adamw")
      usageError(cmd, "--optimizer '" + *optimizer +
                          "' is not supported (adamw, sgd)");
    for (const char *flag :
         sgd ? std::vector<const char *>{"--betas", "--eps"}
             : std::vector<const char *>{"--momentum", "--dampening",
                                         "--nesterov"})
      if (cmd.count(flag))
        usageError(cmd, std::string(flag) + (sgd ? " is AdamW's"
                                                 : " is SGD's (--optimizer "
                                                   "sgd)"));
    TrainStepHyperparameters h = hyper;
    parsePairs(cmd, h);
    if (timed) {
      required(cmd, flags.batch, "--batch");
      if (required(cmd, flags.seq, "--seq") < 2)
        usageError(cmd, "--seq must be at least 2 (the loss predicts token t "
                        "+ 1 from token t), got '" +
                            std::to_string(*flags.seq) + "'");
    }

    auto [desc, engine] =
        openForTraining(cmd, flags.engine.device, bundlePath, "train_step",
                        "train_step executable");
    const Optimizer compiled = trainPlanOf(*desc).optimizer;
    if (optimizer && (compiled == Optimizer::Sgd) != sgd)
      throw Error(bundlePath + ": compiled for " +
                  (compiled == Optimizer::Sgd ? "SGD" : "AdamW") +
                  ", not --optimizer " + *optimizer);
    weights.bind(engine);
    // bf16 / f16 weights: their f32 masters, and the f16 loss scale.
    engine.initOptimizer();
    if (timed)
      return report(
          *desc, engine,
          timeTrainSteps(engine,
                         randomTokenBatch(*desc, *flags.batch, *flags.seq), h,
                         flags.repeat.value_or(3)));
    const TrainStepOutputs step = runTrainStep(
        engine, readTokenBatch(SafeTensorsFile::open(*flags.inputs)), h);
    writeSafeTensors(*flags.out, step.tensors,
                     {{"producer", "hybrid-run train-step"},
                      {"bundle", bundlePath},
                      {"weights", *weights.path}});
    std::fprintf(stderr, "hybrid-run: train-step: loss %.6f, %.2f ms\n",
                 static_cast<double>(step.loss()), step.ms);
    return 0;
  }

  int report(const BundleDesc &desc, const Engine &engine,
             const TrainStepTiming &t) const {
    const double peak = peakFlops.value_or(989.4e12); // H200 SXM, bf16
    // The default peak is a GPU's: against it a CPU's MFU means nothing.
    char mfu[96];
    if (engine.device().name() == "cpu" && !peakFlops)
      std::snprintf(mfu, sizeof mfu,
                    "n/a (no peak for the CPU: give --peak-flops)");
    else
      std::snprintf(mfu, sizeof mfu, "%.4g of %.4g FLOP/s", t.mfu(peak), peak);
    const StepFlops &f = t.flops;
    char attention[96];
    if (f.layers)
      std::snprintf(attention, sizeof attention,
                    "attention %.4g over %lld layers x %lld", f.attention,
                    static_cast<long long>(f.layers),
                    static_cast<long long>(f.width));
    else
      std::snprintf(attention, sizeof attention,
                    "attention 0: no attention in forward");
    std::fprintf(stderr,
                 "hybrid-run: train-step %s%s: %s trainable params, %lldx%lld "
                 "tokens: step %.2f ms (median of %zu; best %.2f ms), %.0f "
                 "tokens/s; model %.4g FLOP/step (6N %.4g + %s), %.4g FLOP/s, "
                 "MFU %s; loss %.4f -> %.4f; peak %.4g GiB\n",
                 modelNameOf(desc).c_str(), onDevice(engine.device()).c_str(),
                 humanCount(static_cast<double>(f.trainable)).c_str(),
                 static_cast<long long>(*flags.batch),
                 static_cast<long long>(*flags.seq), t.medianMs(),
                 t.stepMs.size(), t.bestMs(), t.tokensPerSecond(), f.total(),
                 f.dense, attention, t.flopsPerSecond(), mfu,
                 static_cast<double>(t.firstLoss),
                 static_cast<double>(t.lastLoss), t.peakGiB);
    return 0;
  }
};
Subcommand addTrainStep(CLI::App &root) { return subcommand<TrainStep>(root); }

struct Backward {
  static constexpr const char *kName = "backward";
  std::optional<std::string> inputs, out;
  EngineFlags flags;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "The backward pass of a loss computed outside the model, from "
             "its gradient w.r.t. the logits (or a value model's values)",
             "Writes the gradient of sum(logits * grad_logits), or of "
             "sum(values * grad_values)\nfor a value model (hybridc --head "
             "value), as step() would read it; the\nforward pass is "
             "recomputed (no activations are kept between calls).");
    flags.addTo(cmd, /*randomWeights=*/false);
    cmd.add_option("--out", out,
                   "safetensors file for grad.<name> per trainable parameter");
    cmd.add_option("--inputs", inputs,
                   "safetensors file holding int64 input_ids [B,T] (and "
                   "attention_mask) and float32 grad_logits [B,T,V] (a "
                   "value model: grad_values [B,T])");
  }

  int run(const CLI::App &cmd) const {
    const std::string &bundlePath = flags.bundle.get(cmd);
    const std::string &weightsPath =
        required(cmd, flags.weights.path, "--weights");
    const std::string &inputsPath = required(cmd, inputs, "--inputs");
    const std::string &outPath = required(cmd, out, "--out");
    checkOutputIsNoInput(cmd, outPath, bundlePath, weightsPath, inputsPath);

    auto [desc, engine] = openForTraining(cmd, flags.device, bundlePath,
                                          "backward", "backward executable");
    flags.weights.bind(engine);
    SafeTensorsFile in = SafeTensorsFile::open(inputsPath);
    const TokenBatch batch = readTokenBatch(in);
    const std::string name = engine.backwardCotangent();
    const char *shape = name == "grad_logits" ? "float32 [batch, seq, vocab]"
                                              : "float32 [batch, seq]";
    const SafeTensorsEntry *g = in.find(name);
    if (!g)
      throw Error(inputsPath + ": no tensor '" + name + "' (" + shape + ")");
    if (g->dtype != SafeTensorsDType::F32)
      throw Error(inputsPath + ": " + name + " is " +
                  safeTensorsDTypeName(g->dtype) + "; it must be " + shape);
    const auto start = std::chrono::steady_clock::now();
    engine.backward(batch.inputIds, in.toHost(*g, DType::F32), batch.mask());
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    const NamedTensors grads = accumulatedGradients(engine);
    writeSafeTensors(outPath, grads,
                     {{"producer", "hybrid-run backward"},
                      {"bundle", bundlePath},
                      {"weights", weightsPath}});
    std::fprintf(stderr, "hybrid-run: backward: %zu gradients, %.2f ms\n",
                 grads.size(), ms);
    return 0;
  }
};
Subcommand addBackward(CLI::App &root) { return subcommand<Backward>(root); }

struct Train {
  static constexpr const char *kName = "train";
  std::optional<int64_t> steps;
  EngineFlags flags;
  std::optional<std::string> config, data, save, resume;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "Optimizer steps of causal-LM training as a DeepSpeed-style "
             "config says (a bundle compiled with hybridc --train)",
             "Logs loss, lr, gradient norm, ms and tokens/s every "
             "steps_per_print steps; an\nfp16 overflow skips its step and "
             "says what the loss scale did. --resume DIR\ngoes on from a "
             "--save DIR as if the run had not stopped.");
    flags.addTo(cmd, /*randomWeights=*/false);
    cmd.add_option("--config", config, "DeepSpeed-style JSON config");
    cmd.add_option("--data", data,
                   "safetensors file holding input_ids [sequences, seq] (and "
                   "attention_mask, labels as HF's), taken in order and "
                   "cycling");
    cmd.add_option("--save", save,
                   "folder for model.safetensors (HF names) and "
                   "optimizer.safetensors");
    cmd.add_option("--resume", resume,
                   "a --save folder to go on from (instead of --weights)");
    cmd.add_option("--steps", steps, "optimizer steps to run")
        ->transform(integerAtLeast(1));
  }

  /// Before any work: --save is a folder that can be written and is not
  /// where --weights reads from (saving would replace the input).
  void checkSaveFolder(const CLI::App &cmd, const std::string &dir) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (flags.weights.path && fs::exists(dir, ec)) {
      const fs::path in(*flags.weights.path);
      const fs::path inModel =
          fs::is_directory(in, ec) ? in / "model.safetensors" : in;
      if (fs::equivalent(in, dir, ec) ||
          (fs::exists(inModel, ec) &&
           fs::equivalent(inModel.parent_path(), dir, ec) &&
           inModel.filename() == "model.safetensors"))
        usageError(cmd, "--save " + dir +
                            " would overwrite the --weights "
                            "checkpoint " +
                            *flags.weights.path);
    }
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
      throw Error("--save " + dir + ": cannot create the folder" +
                  (ec ? ": " + ec.message() : std::string()));
    const fs::path probe = fs::path(dir) / ".hybrid-run-write-test";
    if (!std::ofstream(probe))
      throw Error("--save " + dir + ": cannot write there");
    fs::remove(probe, ec);
  }

  int run(const CLI::App &cmd) const {
    const std::string &bundlePath = flags.bundle.get(cmd);
    if (resume && flags.weights.path)
      usageError(cmd, "give --weights or --resume, not both");
    if (!resume)
      required(cmd, flags.weights.path, "--weights");
    const std::string &configPath = required(cmd, config, "--config");
    const std::string &dataPath = required(cmd, data, "--data");
    required(cmd, steps, "--steps");

    if (save)
      checkSaveFolder(cmd, *save);

    // The configuration first: its mistakes are the cheapest to report.
    const TrainConfigFile file = loadTrainConfig(configPath);
    for (const std::string &key : file.unknownKeys)
      std::fprintf(stderr,
                   "hybrid-run: warning: %s: unknown key '%s' (ignored)\n",
                   configPath.c_str(), escapeControlCharacters(key).c_str());
    if (file.config.zeroStage > 0)
      std::fprintf(stderr,
                   "hybrid-run: zero_optimization.stage %lld on one rank: "
                   "nothing to partition, trained as stage 0\n",
                   static_cast<long long>(file.config.zeroStage));
    TokenDataset tokens = TokenDataset::open(dataPath);

    auto [desc, engine] =
        openForTraining(cmd, flags.device, bundlePath, "forward_backward",
                        "training executables");
    try {
      checkTrainConfig(file.config, trainPlanOf(*desc));
    } catch (const Error &e) {
      throw Error(configPath + ": " + e.what() + " (" + bundlePath + ")");
    }
    Trainer trainer(engine, file.config, std::move(tokens));
    if (resume) {
      trainer.resume(*resume, flags.weights.allowed());
    } else {
      flags.weights.bind(engine);
      trainer.start();
    }
    loop(trainer);
    if (save) {
      trainer.save(*save, "hybrid-run train");
      std::fprintf(stderr, "hybrid-run: saved %s and %s%s\n",
                   checkpointModelPath(*save).c_str(),
                   checkpointOptimizerPath(*save).c_str(),
                   engine.bundle().lora.enabled()
                       ? " (and the LoRA adapters as PEFT's "
                         "adapter_config.json, adapter_model.safetensors)"
                       : "");
    }
    return 0;
  }

  /// --steps optimizer steps, logged every steps_per_print (and the first
  /// and last); every skipped one is logged.
  void loop(Trainer &trainer) const {
    const TrainConfig &c = trainer.config();
    const long long first = trainer.globalSteps(), last = first + *steps;
    for (long long shown = first + 1; shown <= last; ++shown) {
      const TrainStepReport r = trainer.step();
      if (r.skipped) {
        std::fprintf(
            stderr,
            "hybrid-run: train step %lld/%lld: overflow: skipped step, %s\n",
            shown, last,
            lossScaleChange(r.result, c.optimizer.lossScale).c_str());
        continue;
      }
      if (shown % c.stepsPerPrint != 0 && shown != first + 1 && shown != last)
        continue;
      char scale[48] = "";
      if (r.result.lossScale > 0)
        std::snprintf(scale, sizeof scale, ", loss scale %.0f",
                      r.result.lossScale);
      std::fprintf(stderr,
                   "hybrid-run: train step %lld/%lld: loss %.6f, lr %.3g, "
                   "grad norm %.4g%s, %.1f ms, %.0f tokens/s\n",
                   shown, last, r.loss, r.lr, r.result.gradNorm, scale, r.ms,
                   r.tokensPerSecond);
    }
  }
};
Subcommand addTrain(CLI::App &root) { return subcommand<Train>(root); }

struct PpoStep {
  static constexpr const char *kName = "ppo-step";
  std::optional<uint64_t> randomSeed;
  BundleArgument bundle;
  DeviceFlags device;
  // The anchor's shape (../shared/bench/anchor_ppo_step_h200.py).
  int64_t batch = 32, promptLen = 256;
  int repeat = 1;
  uint64_t seed = 0;
  bool noCudaGraph = false;
  PpoShapedStepConfig config;

  void declare(CLI::App &cmd) {
    describe(
        cmd,
        "Times PPO-shaped steps on random weights: generate, switch, train on "
        "one weight store",
        "Prints the median step and its phases (generate, train, the "
        "eval()/train()\nswitches and the bytes they moved), generated "
        "tokens/s, the first and last\nloss and the device's peak "
        "memory.");
    bundle.addTo(cmd);
    device.addTo(cmd);
    cmd.add_option("--random-weights", randomSeed,
                   "deterministic random weights from this seed")
        ->transform(seedNumber());
    for (auto [flag, value, help] :
         {std::tuple<const char *, int64_t *, const char *>{"--batch", &batch,
                                                            "prompts"},
          {"--prompt-len", &promptLen, "random prompt tokens"},
          {"--new-tokens", &config.newTokens, "sampled tokens per prompt"},
          {"--micro-batch", &config.microBatch,
           "sequences per forward + backward"}})
      cmd.add_option(flag, *value, help)
          ->transform(positiveCount())
          ->capture_default_str();
    cmd.add_option("--repeat", repeat, "timed steps after a warm-up")
        ->transform(positiveCount())
        ->capture_default_str();
    cmd.add_option("--seed", seed, "sampling seed of the first step")
        ->transform(seedNumber())
        ->capture_default_str();
    cmd.add_option("--lr", config.lr, "the optimizer's learning rate")
        ->transform(nonNegativeNumber())
        ->capture_default_str();
    cmd.add_flag("--release-cache", config.releaseInferenceCache,
                 "let the KV cache go when generation ends");
    cmd.add_flag("--no-cuda-graph", noCudaGraph,
                 "run the decode step kernel by kernel");
  }

  int run(const CLI::App &cmd) const {
    const std::string &bundlePath = bundle.get(cmd);
    if (!randomSeed)
      usageError(cmd, "times random weights: give --random-weights SEED");
    if (batch % config.microBatch != 0)
      usageError(cmd, "--batch " + std::to_string(batch) +
                          " is not a multiple of --micro-batch " +
                          std::to_string(config.microBatch));
    PpoShapedStepConfig c = config;
    c.cudaGraph = !noCudaGraph;

    auto [desc, engine] = openEngine(device.open(cmd), bundlePath);
    if (std::string missing = PpoShapedStep::missingExecutables(engine);
        !missing.empty())
      throw Error(bundlePath + ": " + missing);
    const int64_t positions = promptLen + c.newTokens,
                  limit = PpoShapedStep::positionLimit(*desc);
    if (limit > 0 && positions > limit)
      throw Error("ppo-step: --prompt-len " + std::to_string(promptLen) +
                  " + --new-tokens " + std::to_string(c.newTokens) + " = " +
                  std::to_string(positions) + " positions; the model has " +
                  std::to_string(limit) + " (" + bundlePath + ")");

    engine.initRandom(*randomSeed);
    engine.initOptimizer();
    // The latency line every eval() writes is not this command's output.
    engine.setLog([](const std::string &) {});
    PpoShapedStep step(engine, randomTokenBatch(*desc, batch, promptLen), c);
    const PpoStepTiming timing = timePpoSteps(step, seed, repeat);
    const PpoStepCost median = timing.median();
    std::fprintf(
        stderr,
        "hybrid-run: ppo-step %s%s: batch %lld, prompt %lld, new %lld, "
        "micro-batch %lld: step %.3f s (generate %.3f s, train %.3f s, "
        "switch %.3f ms, switch bytes %llu); generate %.0f tok/s; loss %.4f "
        "-> %.4f; peak %.3f GiB (median of %d steps%s)\n",
        modelNameOf(*desc).c_str(), onDevice(engine.device()).c_str(),
        static_cast<long long>(batch), static_cast<long long>(promptLen),
        static_cast<long long>(median.newTokens),
        static_cast<long long>(c.microBatch), median.total.seconds,
        median.generate.seconds, median.train.seconds,
        median.switches.seconds * 1000,
        static_cast<unsigned long long>(timing.maxSwitchBytes()),
        static_cast<double>(batch * median.newTokens) / median.generate.seconds,
        static_cast<double>(timing.steps.front().loss),
        static_cast<double>(timing.steps.back().loss),
        peakMemoryGiB(engine.device()), repeat,
        c.releaseInferenceCache ? ", KV cache released for training" : "");
    return 0;
  }
};
Subcommand addPpoStep(CLI::App &root) { return subcommand<PpoStep>(root); }

} // namespace hybrid::run
