// hybrid-run's command line over CLI11: shared flags, checks and errors.
//
// The subcommands' flag groups (bundle, weights, device; the batch's files
// or the random shape to time), the value checks every flag uses, and
// CLI11's parse errors as one line in the tool's words.
#pragma once

#include "hybrid/Device.h"
#include "hybrid/Engine.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hybrid::run {

/// A command-line mistake: exit 2, one line.
struct UsageError {
  std::string message;
};

/// One subcommand: its CLI11 app and what runs it once argv is parsed
/// (returning the exit code).
struct Subcommand {
  CLI::App *app = nullptr;
  std::function<int()> run;
};

/// The subcommand Options describes, added to `root`: its name (kName),
/// its help and flags (`void declare(CLI::App &)`) and what runs it (`int
/// run(const CLI::App &) const`, given the subcommand to name in usage
/// errors).
template <typename Options> Subcommand subcommand(CLI::App &root) {
  auto options = std::make_shared<Options>();
  CLI::App *cmd = root.add_subcommand(Options::kName);
  options->declare(*cmd);
  return {cmd, [options, cmd] { return options->run(*cmd); }};
}

/// A tool's whole main over CLI11 (hybrid-run, hybrid-rlhf): --help shows
/// `description`, --version "<tool> <runtime version>"; the subcommands
/// `adds` make, in --help's order, one per call (`<tool> help [SUBCOMMAND]`
/// is --help); runs the parsed one. Every error is one line "<tool>:
/// error: ..." on stderr: exit 1, or 2 for usage errors.
int runTool(int argc, char **argv, const std::string &tool,
            const char *description,
            const std::vector<Subcommand (*)(CLI::App &)> &adds);

// The subcommands, in the order --help lists them (Inference.cpp,
// Training.cpp, Inspection.cpp).
Subcommand addForward(CLI::App &root);
Subcommand addGenerate(CLI::App &root);
Subcommand addTrainStep(CLI::App &root);
Subcommand addBackward(CLI::App &root);
Subcommand addTrain(CLI::App &root);
Subcommand addPpoStep(CLI::App &root);
Subcommand addCompare(CLI::App &root);
Subcommand addInfo(CLI::App &root);

//===----------------------------------------------------------------------===//
// Value checks: CLI11 transforms that reject a bad value with "<flag> wants
// ..., got '<value>'" and leave the accepted one in a form CLI11 converts
// as meant (decimal, so "010" is ten).
//===----------------------------------------------------------------------===//

/// An integer from 1 to 4096 (batch sizes, lengths, counts, threads).
CLI::Validator positiveCount();
/// An integer >= min.
CLI::Validator integerAtLeast(int64_t min);
/// A finite number >= 0.
CLI::Validator nonNegativeNumber();
/// A seed: a number >= 0, truncated to an integer.
CLI::Validator seedNumber();

/// CLI11's parse error `e` of `root`'s command line as one line: unknown
/// flags and subcommands, stray arguments, flags without a value or given
/// twice, bad values.
std::string usageMessage(const CLI::ParseError &e, CLI::App &root);

/// Names the subcommand in usage errors: "<cmd>: <what>".
[[noreturn]] void usageError(const CLI::App &cmd, const std::string &what);
/// `value` when given, else a usage error "<cmd>: missing <flag>".
template <typename T>
const T &required(const CLI::App &cmd, const std::optional<T> &value,
                  const char *flag) {
  if (!value)
    usageError(cmd, std::string("missing ") + flag);
  return *value;
}

//===----------------------------------------------------------------------===//
// Flags several subcommands share.
//===----------------------------------------------------------------------===//

/// The BUNDLE argument.
struct BundleArgument {
  std::string path;
  void addTo(CLI::App &cmd);
  /// The path; a usage error when none was given.
  const std::string &get(const CLI::App &cmd) const;
};

/// --device and --threads: where the bundle runs.
struct DeviceFlags {
  std::string device = "cpu";
  std::optional<int> threads;
  void addTo(CLI::App &cmd);
  /// The device, opened; names `cmd` in usage errors.
  std::shared_ptr<Device> open(const CLI::App &cmd) const;
};

/// --weights (and --random-weights where a subcommand times random ones),
/// --allow-extra, --weights-prefix and --zero-missing: what the engine's
/// weights come from.
struct WeightFlags {
  std::optional<std::string> path;
  std::optional<uint64_t> randomSeed;
  std::vector<std::string> allowExtra;
  std::optional<std::string> prefix;
  std::vector<std::string> zeroMissing;
  std::optional<std::string> adapters;
  std::optional<uint64_t> loraSeed;
  void addTo(CLI::App &cmd, bool random);
  std::set<std::string> allowed() const {
    return {allowExtra.begin(), allowExtra.end()};
  }
  /// The weights' path, or "random weights (seed N)".
  std::string label() const;
  /// Binds the weights the flags name.
  void bind(Engine &engine) const;
};

/// The flags of a subcommand that runs a bundle: BUNDLE, its weights and
/// the device.
struct EngineFlags {
  BundleArgument bundle;
  WeightFlags weights;
  DeviceFlags device;
  void addTo(CLI::App &cmd, bool randomWeights);
};

/// Refuses an --out that names a file the command reads (writing it would
/// replace that input): the bundle, the inputs, or the weights (a folder's
/// model.safetensors and index, a sharded checkpoint's shards, an ONNX
/// model's external data).
void checkOutputIsNoInput(const CLI::App &cmd, const std::string &out,
                          const std::string &bundle, const std::string &weights,
                          const std::string &inputs);

/// What forward, generate and train-step take besides the engine's flags:
/// a file holding the batch (--inputs, or --prompt) and one for the
/// results (--out); or, to time them, the shape of random tokens (--batch,
/// --seq or --prompt-len) and how many timed calls follow a warm-up
/// (--repeat).
struct RunFlags {
  EngineFlags engine;
  const char *inputsFlag = "--inputs", *seqFlag = "--seq";
  std::optional<std::string> inputs, out;
  std::optional<int64_t> batch, seq;
  std::optional<int> repeat;

  void addTo(CLI::App &cmd, const char *inputsFlag, const char *seqFlag);
  /// Whether a shape was given: the command times random tokens.
  bool shapeGiven() const { return batch || seq; }
};

/// The files of a RunFlags command: the bundle, the inputs ("" when it
/// times random tokens) and the output ("" when none).
struct RunFiles {
  std::string bundle, inputs, out;
};
/// Checks that the flags pick one form (files, or a shape and random
/// weights) and give every file it needs, and that the output is no input.
RunFiles runFilesOf(const CLI::App &cmd, const RunFlags &flags);

/// Sets the help `cmd` shows: its one-line summary and what follows the
/// flags.
void describe(CLI::App &cmd, const char *summary, const char *details = "");

/// The bundle at `path` and an engine for it on `device`.
struct OpenedEngine {
  std::shared_ptr<const BundleDesc> bundle;
  Engine engine;
};
OpenedEngine openEngine(std::shared_ptr<Device> device,
                        const std::string &path);

//===----------------------------------------------------------------------===//
// Report formatting.
//===----------------------------------------------------------------------===//

std::string humanCount(double n); ///< 124.44M
std::string humanBytes(double n); ///< 474.70 MiB
/// The model's name as a report line shows it.
std::string modelNameOf(const BundleDesc &bundle);
/// " on cuda:0", or "" on the CPU.
std::string onDevice(const Device &device);

} // namespace hybrid::run
