// hybrid-run's shared flags, value checks and parse-error wording.
#include "CommandLine.h"

#include "hybrid/Bundle.h"
#include "hybrid/Devices.h"
#include "hybrid/Escape.h"
#include "hybrid/FileIdentity.h"
#include "hybrid/OnnxInitializers.h"
#include "hybrid/RuntimeVersion.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <sys/stat.h>

namespace hybrid::run {

namespace {

std::optional<long long> parseInteger(const std::string &s) {
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno)
    return std::nullopt;
  return v;
}

std::optional<double> parseNumber(const std::string &s) {
  char *end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || errno || !std::isfinite(v))
    return std::nullopt;
  return v;
}

/// A transform that replaces an accepted value with what `accept` makes of
/// it and rejects the others: "wants <wants>, got '<value>'" (usageMessage
/// puts the flag in front).
CLI::Validator valueCheck(
    const std::string &description, const std::string &wants,
    std::function<std::optional<std::string>(const std::string &)> accept) {
  return CLI::Validator(
      [wants, accept](std::string &value) -> std::string {
        std::optional<std::string> accepted = accept(value);
        if (!accepted)
          return "wants " + wants + ", got '" + value + "'";
        value = *accepted;
        return "";
      },
      description);
}

} // namespace

CLI::Validator positiveCount() {
  return valueCheck(
      "1..4096", "an integer from 1 to 4096", [](const std::string &s) {
        std::optional<long long> v = parseInteger(s);
        return v && *v >= 1 && *v <= 4096 ? std::optional(std::to_string(*v))
                                          : std::nullopt;
      });
}

CLI::Validator integerAtLeast(int64_t min) {
  return valueCheck(">=" + std::to_string(min),
                    "an integer >= " + std::to_string(min),
                    [min](const std::string &s) {
                      std::optional<long long> v = parseInteger(s);
                      return v && *v >= min ? std::optional(std::to_string(*v))
                                            : std::nullopt;
                    });
}

CLI::Validator nonNegativeNumber() {
  return valueCheck(">=0", "a non-negative number", [](const std::string &s) {
    std::optional<double> v = parseNumber(s);
    return v && *v >= 0 ? std::optional(s) : std::nullopt;
  });
}

CLI::Validator seedNumber() {
  return valueCheck(">=0", "a non-negative number", [](const std::string &s) {
    std::optional<double> v = parseNumber(s);
    if (!v || *v < 0 || *v >= 18446744073709551616.0)
      return std::optional<std::string>();
    return std::optional(std::to_string(static_cast<uint64_t>(*v)));
  });
}

namespace {

int failLine(const std::string &tool, int code, const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", tool.c_str(),
               escapeControlCharacters(message).c_str());
  return code;
}

/// Parses argv and runs the subcommand it names.
int parseAndRun(int argc, char **argv, const std::string &tool,
                const char *description,
                const std::vector<Subcommand (*)(CLI::App &)> &adds) {
  CLI::App app(description, tool);
  app.set_version_flag("--version", tool + " " + runtimeVersion());
  // One subcommand per call, and after it, names of other subcommands are
  // values (--executable forward), not subcommands.
  app.require_subcommand(0, 1);
  // A flag that takes one value takes it once: a repeated --weights is a
  // mistake, not an override.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  std::vector<Subcommand> commands;
  for (auto add : adds)
    commands.push_back(add(app));

  // `<tool> help [SUBCOMMAND]`, as --help.
  if (argc >= 2 && std::strcmp(argv[1], "help") == 0) {
    const CLI::App *shown = &app;
    for (const Subcommand &c : commands)
      if (argc >= 3 && c.app->get_name() == argv[2])
        shown = c.app;
    std::cout << (shown == &app ? app.help() : shown->help(app.get_name()));
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success &e) { // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    return failLine(tool, 2, usageMessage(e, app));
  }
  for (const Subcommand &c : commands)
    if (c.app->parsed())
      return c.run();
  std::string names;
  for (const Subcommand &c : commands)
    names += (names.empty() ? "" : ", ") + c.app->get_name();
  return failLine(tool, 2,
                  "no subcommand (" + names + "; see '" + tool + " --help')");
}

} // namespace

int runTool(int argc, char **argv, const std::string &tool,
            const char *description,
            const std::vector<Subcommand (*)(CLI::App &)> &adds) {
  try {
    return parseAndRun(argc, argv, tool, description, adds);
  } catch (const UsageError &e) {
    return failLine(tool, 2, e.message);
  } catch (const std::bad_alloc &) {
    return failLine(tool, 1, "out of memory");
  } catch (const std::exception &e) {
    return failLine(tool, 1, e.what());
  } catch (...) {
    return failLine(tool, 1, "unexpected failure");
  }
}

std::string usageMessage(const CLI::ParseError &e, CLI::App &root) {
  const std::vector<CLI::App *> chosen = root.get_subcommands();
  CLI::App *cmd = chosen.empty() ? nullptr : chosen.front();
  const std::string prefix = cmd ? cmd->get_name() + ": " : "";
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError *>(&e)) {
    const std::vector<std::string> extra =
        cmd ? cmd->remaining() : root.remaining();
    if (!extra.empty()) {
      const std::string &first = extra.front();
      if (first.size() > 1 && first[0] == '-')
        return prefix + "unknown flag '" + first.substr(0, first.find('=')) +
               "'";
      if (!cmd) {
        std::string names;
        for (const CLI::App *sub :
             root.get_subcommands([](CLI::App *) { return true; }))
          names += (names.empty() ? "" : ", ") + sub->get_name();
        return "unknown subcommand '" + first + "' (" + names + "; see '" +
               root.get_name() + " --help')";
      }
      return prefix + "unexpected argument '" + first + "'";
    }
  }
  if (dynamic_cast<const CLI::ArgumentMismatch *>(&e) && cmd) {
    // CLI11 names the option first: "--out: 1 required TEXT missing".
    const std::string flag = what.substr(0, what.find(':'));
    if (const CLI::Option *opt = cmd->get_option_no_throw(flag)) {
      const bool once =
          opt->get_multi_option_policy() == CLI::MultiOptionPolicy::Throw;
      return prefix + flag +
             (once && opt->count() > 1 ? " given more than once"
                                       : " needs a value");
    }
  }
  if (dynamic_cast<const CLI::ValidationError *>(&e)) {
    // "--batch: wants ..." from our checks reads "--batch wants ...".
    std::string line = what;
    if (size_t colon = line.find(": wants "); colon != std::string::npos)
      return line.erase(colon, 1);
  }
  return prefix + what;
}

void usageError(const CLI::App &cmd, const std::string &what) {
  throw UsageError{cmd.get_name() + ": " + what};
}

void BundleArgument::addTo(CLI::App &cmd) {
  cmd.add_option("BUNDLE", path, "a bundle compiled by hybridc (.hyb)");
}

const std::string &BundleArgument::get(const CLI::App &cmd) const {
  if (path.empty())
    usageError(cmd, "expected a BUNDLE");
  return path;
}

void DeviceFlags::addTo(CLI::App &cmd) {
  cmd.add_option("--device", device, "cpu, cuda or cuda:N")
      ->capture_default_str();
  cmd.add_option("--threads", threads, "CPU kernel threads (--device cpu)")
      ->transform(positiveCount());
}

std::shared_ptr<Device> DeviceFlags::open(const CLI::App &cmd) const {
  if (!isDeviceName(device))
    usageError(cmd, "--device wants cpu, cuda or cuda:N, got '" + device + "'");
  DeviceOptions options;
  if (threads) {
    if (device != "cpu")
      usageError(cmd, "--threads applies to --device cpu only");
    options.cpuThreads = *threads;
  }
  return openDevice(device, options);
}

void WeightFlags::addTo(CLI::App &cmd, bool random) {
  cmd.add_option("--weights", path,
                 "safetensors file or folder (model.safetensors or a sharded "
                 "index), or an .onnx model's initializers");
  if (random)
    cmd.add_option("--random-weights", randomSeed,
                   "deterministic random weights from this seed instead")
        ->transform(seedNumber());
  cmd.add_option("--allow-extra", allowExtra,
                 "a checkpoint tensor that is no parameter (tied weights, "
                 "buffers); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1);
  cmd.add_option("--weights-prefix", prefix,
                 "read only the checkpoint's tensors named PREFIX..., "
                 "without it (one model of several in a file: critic.)");
  cmd.add_option("--zero-missing", zeroMissing,
                 "a parameter the checkpoint may lack, which then starts at "
                 "zero (a fresh v_head.weight on a causal LM's trunk); "
                 "repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1);
  cmd.add_option("--adapters", adapters,
                 "a bundle with LoRA: its adapters from this PEFT folder "
                 "(adapter_config.json, adapter_model.safetensors)");
  cmd.add_option("--lora-seed", loraSeed,
                 "a bundle with LoRA: start the adapters as PEFT does (A "
                 "uniform in +-1/sqrt(in), B 0) from this seed (default 0 "
                 "for those the weights lack)")
      ->transform(seedNumber());
}

std::string WeightFlags::label() const {
  return randomSeed
             ? "random weights (seed " + std::to_string(*randomSeed) + ")"
             : path.value_or("");
}

void WeightFlags::bind(Engine &engine) const {
  if ((adapters || loraSeed) && !engine.bundle().lora.enabled())
    throw UsageError{"--adapters and --lora-seed apply to a bundle compiled "
                     "with --lora-dim"};
  if (adapters && loraSeed)
    throw UsageError{"give --adapters or --lora-seed, not both"};
  if (randomSeed) {
    if (prefix || !zeroMissing.empty())
      throw UsageError{"--weights-prefix and --zero-missing apply to "
                       "--weights, not --random-weights"};
    engine.initRandom(*randomSeed);
  } else {
    CheckpointBinding binding;
    binding.prefix = prefix.value_or("");
    binding.allowedExtra = allowed();
    binding.zeroIfMissing = {zeroMissing.begin(), zeroMissing.end()};
    engine.loadWeights(*path, binding);
  }
  if (adapters)
    engine.loadAdapters(*adapters);
  if (loraSeed)
    engine.initAdapters(*loraSeed);
}

void EngineFlags::addTo(CLI::App &cmd, bool randomWeights) {
  bundle.addTo(cmd);
  weights.addTo(cmd, randomWeights);
  device.addTo(cmd);
}

void checkOutputIsNoInput(const CLI::App &cmd, const std::string &out,
                          const std::string &bundle, const std::string &weights,
                          const std::string &inputs) {
  auto refuse = [&](const char *what, const std::string &input) {
    usageError(cmd, "--out " + out + " is the " + what + " (" + input +
                        "); choose another output file");
  };
  if (isSameFile(out, bundle))
    refuse("bundle", bundle);
  if (!inputs.empty() && isSameFile(out, inputs))
    refuse("inputs", inputs);
  if (weights.empty())
    return;
  auto endsWith = [](const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // An ONNX model's external data files (only an existing file can be
  // replaced, so the model is read only then).
  if (endsWith(weights, ".onnx") && isSameFile(out, out)) {
    OnnxInitializers onnx = OnnxInitializers::read(weights);
    for (const std::string &data : onnx.dataFiles())
      if (isSameFile(out, data))
        refuse("weights", data);
  }
  const std::string folderIndex = weights + "/model.safetensors.index.json";
  for (const std::string &w :
       {weights, weights + "/model.safetensors", folderIndex})
    if (isSameFile(out, w))
      refuse("weights", w);
  auto folderOf = [](const std::string &path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".")
                                      : path.substr(0, slash + 1);
  };
  const std::string index = endsWith(weights, ".json") ? weights : folderIndex;
  struct stat st;
  if (endsWith(out, ".safetensors") && ::stat(out.c_str(), &st) == 0 &&
      ::stat(index.c_str(), &st) == 0 &&
      isSameFile(folderOf(out), folderOf(index)))
    refuse("weights", "a shard beside " + index);
}

void RunFlags::addTo(CLI::App &cmd, const char *inputsName,
                     const char *seqName) {
  engine.addTo(cmd, /*randomWeights=*/true);
  inputsFlag = inputsName;
  seqFlag = seqName;
  cmd.add_option(inputsFlag, inputs, "safetensors file holding the batch");
  cmd.add_option("--out", out, "safetensors file for the results");
  cmd.add_option("--batch", batch, "rows of random tokens (timing)")
      ->transform(positiveCount());
  cmd.add_option(seqFlag, seq, "their length (timing)")
      ->transform(positiveCount());
  cmd.add_option("--repeat", repeat, "timed runs after a warm-up")
      ->transform(positiveCount());
}

RunFiles runFilesOf(const CLI::App &cmd, const RunFlags &flags) {
  const WeightFlags &weights = flags.engine.weights;
  const bool timed = flags.shapeGiven();
  RunFiles files{flags.engine.bundle.get(cmd), "", ""};
  if (weights.randomSeed && weights.path)
    usageError(cmd, "give --weights or --random-weights, not both");
  if (timed && flags.inputs)
    usageError(cmd, std::string("give ") + flags.inputsFlag + " or --batch/" +
                        flags.seqFlag + ", not both");
  if (!weights.randomSeed)
    required(cmd, weights.path, "--weights");
  if (!timed)
    files.inputs = required(cmd, flags.inputs, flags.inputsFlag);
  files.out =
      timed ? flags.out.value_or("") : required(cmd, flags.out, "--out");
  if (!files.out.empty())
    checkOutputIsNoInput(cmd, files.out, files.bundle,
                         weights.path.value_or(""), files.inputs);
  return files;
}

void describe(CLI::App &cmd, const char *summary, const char *details) {
  cmd.description(summary);
  cmd.footer(details);
}

OpenedEngine openEngine(std::shared_ptr<Device> device,
                        const std::string &path) {
  auto bundle = std::make_shared<const BundleDesc>(readBundle(path));
  Engine engine = Engine::create(bundle, std::move(device));
  return {std::move(bundle), std::move(engine)};
}

std::string humanCount(double n) {
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else if (n >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

std::string humanBytes(double n) {
  char buf[32];
  const double kib = 1024.0, mib = kib * 1024, gib = mib * 1024;
  if (n >= gib)
    std::snprintf(buf, sizeof buf, "%.2f GiB", n / gib);
  else if (n >= mib)
    std::snprintf(buf, sizeof buf, "%.2f MiB", n / mib);
  else if (n >= kib)
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / kib);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", n);
  return buf;
}

std::string modelNameOf(const BundleDesc &bundle) {
  return bundle.model.empty() ? "(unnamed model)"
                              : escapeControlCharacters(bundle.model);
}

std::string onDevice(const Device &device) {
  return device.name() == "cpu" ? "" : " on " + device.name();
}

} // namespace hybrid::run
