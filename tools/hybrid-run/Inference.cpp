// hybrid-run forward and generate, over the library's timed runs.
//
// An executable's outputs or generated tokens from files, or their timing
// on random weights and tokens.
#include "CommandLine.h"

#include "hybrid/Benchmark.h"
#include "hybrid/ExecutableInputs.h"
#include "hybrid/LogprobParity.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/TokenDataset.h"

#include <cstdio>

namespace hybrid::run {

struct Forward {
  static constexpr const char *kName = "forward";
  RunFlags flags;
  std::string executable = "forward";

  void declare(CLI::App &cmd) {
    describe(cmd, "Runs a bundle's forward executable on a device",
             "--inputs holds every input the executable declares, by name "
             "(e.g. int64\ninput_ids [B,T]); --out gets every output (e.g. "
             "float32 logits [B,T,V]).\nWith --random-weights and "
             "--batch/--seq it times calls on random weights and\ninput_ids "
             "instead; --repeat N reports the best and mean of N calls and "
             "the\nbest of N device-resident ones.");
    flags.addTo(cmd, "--inputs", "--seq");
    cmd.add_option("--executable", executable,
                   "another of the bundle's executables to run the same way "
                   "(e.g. forward_grad)")
        ->capture_default_str();
  }

  int run(const CLI::App &cmd) const {
    const RunFiles io = runFilesOf(cmd, flags);
    // The device first: a missing GPU is the error to report, before any
    // file is read.
    auto [desc, engine] = openEngine(flags.engine.device.open(cmd), io.bundle);
    flags.engine.weights.bind(engine);
    Executable &exe = engine.executable(executable);
    const NamedTensors in =
        io.inputs.empty()
            ? randomTokenBatch(*desc, required(cmd, flags.batch, "--batch"),
                               required(cmd, flags.seq, "--seq"))
                  .inputs()
            : readExecutableInputs(exe, SafeTensorsFile::open(io.inputs));
    const ForwardTiming t =
        timeForward(engine, executable, in, flags.repeat.value_or(0));
    if (!io.out.empty())
      writeSafeTensors(io.out, t.outputs,
                       {{"producer", "hybrid-run forward"},
                        {"bundle", io.bundle},
                        {"weights", flags.engine.weights.label()}});
    return report(*desc, engine, t);
  }

  int report(const BundleDesc &desc, const Engine &engine,
             const ForwardTiming &t) const {
    std::string tokens = "no batch", rate, mean, resident;
    const Shape &shape = t.batchShape;
    if (shape.size() >= 2)
      tokens =
          std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + " tokens";
    else if (!shape.empty())
      tokens = std::to_string(shape[0]) + " rows";
    auto perSecond = [](double n) {
      return ", " + std::to_string(static_cast<long long>(n)) + " tokens/s";
    };
    if (t.tokensPerSecond() > 0)
      rate = perSecond(t.tokensPerSecond());
    if (flags.repeat)
      mean = " (best of " + std::to_string(t.calls) + "; mean " +
             std::to_string(t.meanMs).substr(0, 7) + " ms)";
    if (t.residentMs > 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "; device-resident %.2f ms", t.residentMs);
      resident = buf;
      if (t.residentTokensPerSecond() > 0)
        resident += perSecond(t.residentTokensPerSecond());
    }
    const WeightStore &w = engine.weights();
    std::fprintf(
        stderr, "hybrid-run: forward %s%s: %s params (%s), %s, %.2f ms%s%s%s\n",
        modelNameOf(desc).c_str(), onDevice(engine.device()).c_str(),
        humanCount(static_cast<double>(w.totalElements())).c_str(),
        humanBytes(static_cast<double>(w.totalBytes())).c_str(), tokens.c_str(),
        t.bestMs, mean.c_str(), rate.c_str(), resident.c_str());
    return 0;
  }
};
Subcommand addForward(CLI::App &root) { return subcommand<Forward>(root); }

struct Generate {
  static constexpr const char *kName = "generate";
  GenerateConfig config;
  RunFlags flags;
  std::string promptName = "input_ids";
  std::optional<float> temperature, topP;
  std::optional<int64_t> topK;
  bool greedy = false, noCudaGraph = false, checkLogprobs = false;
  std::optional<double> logprobsAtol;

  void declare(CLI::App &cmd) {
    describe(cmd,
             "Generates tokens with the bundle's prefill and decode "
             "executables (KV cache, sampling on the device)",
             "--prompt holds int64 prompt ids [B,P] and, optionally, "
             "attention_mask [B,P]\n(0 = left padding); --out gets int64 "
             "tokens [B,N], float32 logprobs [B,N]\nand int64 lengths [B]. "
             "Greedy unless --temperature, --top-k or --top-p is\ngiven. On "
             "a GPU the decode step is captured once as a CUDA graph and\n"
             "replayed. --repeat R: the best of R timed calls, each phase.");
    flags.addTo(cmd, "--prompt", "--prompt-len");
    cmd.add_option("--prompt-name", promptName, "the prompt ids' tensor")
        ->capture_default_str();
    // Integers with their defaults (GenerateConfig's), shown in --help.
    for (auto [flag, value, min, help] :
         {std::tuple<const char *, int64_t *, int64_t, const char *>{
              "--max-new-tokens", &config.maxNewTokens, 1,
              "new tokens per row"},
          {"--min-new-tokens", &config.minNewTokens, 0,
           "EOS is banned before this many"},
          {"--eos", &config.eosTokenId, -1, "end-of-sequence id (-1: none)"},
          {"--pad", &config.padTokenId, 0, "what finished rows emit"},
          {"--max-out-tokens", &config.maxOutTokens, 0,
           "KV-cache capacity; 0: 512, or the model's position limit when "
           "smaller, or what the call needs when larger"}})
      cmd.add_option(flag, *value, help)
          ->transform(integerAtLeast(min))
          ->capture_default_str();
    cmd.add_option("--seed", config.seed, "the sampler's seed")
        ->transform(integerAtLeast(0))
        ->capture_default_str();
    cmd.add_flag("--greedy", greedy, "argmax (the default)");
    cmd.add_option("--temperature", temperature, "sample at temperature T")
        ->transform(nonNegativeNumber());
    cmd.add_option("--top-k", topK, "sample among the K likeliest")
        ->transform(integerAtLeast(0));
    cmd.add_option("--top-p", topP, "sample within probability mass P")
        ->transform(nonNegativeNumber());
    cmd.add_flag("--no-cuda-graph", noCudaGraph,
                 "run the decode step kernel by kernel, not as a CUDA graph");
    cmd.add_flag("--check-logprobs", checkLogprobs,
                 "also run @logprobs (a bundle compiled with --train) on "
                 "prompt + answer and print the largest difference from "
                 "generation's log-probs (greedy or temperature 1); --out "
                 "gets them as training_logprobs");
    cmd.add_option("--logprobs-atol", logprobsAtol,
                   "with --check-logprobs: exit 1 when the largest "
                   "difference exceeds this (0: the same bits)")
        ->transform(nonNegativeNumber());
  }

  int run(const CLI::App &cmd) const {
    GenerateConfig c = config;
    const bool sampling = temperature || topK || topP;
    if (greedy && sampling)
      usageError(cmd, "--greedy and --temperature/--top-k/--top-p exclude "
                      "each other");
    c.greedy = !sampling;
    c.temperature = temperature.value_or(1.0f);
    c.topK = topK.value_or(0);
    c.topP = topP.value_or(1.0f);
    c.cudaGraph = !noCudaGraph;
    if (logprobsAtol && !checkLogprobs)
      usageError(cmd, "--logprobs-atol needs --check-logprobs");
    if (checkLogprobs && flags.repeat)
      usageError(cmd, "--check-logprobs and --repeat exclude each other");
    // The check's result is its line; --out is optional with it.
    RunFlags f = flags;
    if (checkLogprobs && !f.out)
      f.out = "";
    const RunFiles io = runFilesOf(cmd, f);

    auto [desc, engine] = openEngine(flags.engine.device.open(cmd), io.bundle);
    flags.engine.weights.bind(engine);
    const TokenBatch prompts =
        io.inputs.empty()
            ? randomTokenBatch(*desc, flags.batch.value_or(1),
                               flags.seq.value_or(1))
            : readTokenBatch(SafeTensorsFile::open(io.inputs), promptName,
                             "the prompt ids, int64 [batch, prompt]");
    if (checkLogprobs)
      return compareLogprobs(engine, prompts, c, io);
    const GenerateTiming t =
        timeGenerate(engine, prompts, c, flags.repeat.value_or(0));
    const GenerateResult &r = t.result;
    if (!io.out.empty())
      writeSafeTensors(io.out,
                       {{"tokens", r.tokens},
                        {"logprobs", r.logprobs},
                        {"lengths", r.lengths}},
                       {{"producer", "hybrid-run generate"},
                        {"bundle", io.bundle},
                        {"weights", flags.engine.weights.label()}});
    const std::string graph =
        r.decodeGraphOperations
            ? "; decode graph of " + std::to_string(r.decodeGraphOperations) +
                  " operations"
            : "";
    const std::string best =
        t.repeat ? " (best of " + std::to_string(t.repeat) + ")" : "";
    std::fprintf(stderr,
                 "hybrid-run: generate %s: %lldx%lld prompt, %lld new tokens: "
                 "prefill %.2f ms, decode %.3f ms/step, %.0f tokens/s; end to "
                 "end %.2f ms, %.0f tokens/s; peak %.2f GiB%s%s\n",
                 modelNameOf(*desc).c_str(), static_cast<long long>(t.batch),
                 static_cast<long long>(t.promptLen),
                 static_cast<long long>(r.steps), r.prefillMs,
                 t.decodeMsPerToken(), t.decodeTokensPerSecond(), t.totalMs(),
                 t.endToEndTokensPerSecond(), t.peakGiB, graph.c_str(),
                 best.c_str());
    return 0;
  }

  /// --check-logprobs: one line on stdout; 1 past --logprobs-atol.
  int compareLogprobs(Engine &engine, const TokenBatch &prompts,
                      const GenerateConfig &c, const RunFiles &io) const {
    const LogprobParity p = compareGenerationLogprobs(engine, prompts, c);
    const GenerateResult &r = p.generated;
    if (!io.out.empty())
      writeSafeTensors(io.out,
                       {{"tokens", r.tokens},
                        {"logprobs", r.logprobs},
                        {"lengths", r.lengths},
                        {"training_logprobs", p.trainingLogprobs}},
                       {{"producer", "hybrid-run generate --check-logprobs"},
                        {"bundle", io.bundle},
                        {"weights", flags.engine.weights.label()}});
    const bool pass = !logprobsAtol || p.maxAbsDiff <= *logprobsAtol;
    std::string verdict;
    if (logprobsAtol) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " (%s %g)", pass ? "within" : "over",
                    *logprobsAtol);
      verdict = buf;
    }
    std::printf("logprobs of generation vs @logprobs%s: %lld tokens, max "
                "|diff| %.9g, %lld differ in bits%s\n",
                onDevice(engine.device()).c_str(),
                static_cast<long long>(p.compared), p.maxAbsDiff,
                static_cast<long long>(p.differing), verdict.c_str());
    return pass ? 0 : 1;
  }
};
Subcommand addGenerate(CLI::App &root) { return subcommand<Generate>(root); }

} // namespace hybrid::run
