// hybrid-run: runs a bundle's forward pass on a device (cpu or cuda), compares
// tensors of two safetensors files (the parity tests' check), and describes
// bundles. Errors are one line on stderr: exit 1, or 2 for usage errors.
#include "hybrid/Bundle.h"
#include "hybrid/Devices.h"
#include "hybrid/Engine.h"
#include "hybrid/Escape.h"
#include "hybrid/FileIdentity.h"
#include "hybrid/OnnxInitializers.h"
#include "hybrid/SafeTensors.h"
#include "hybrid/TrainConfig.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

using namespace hybrid;

namespace {

const char *kUsage =
    "usage:\n"
    "  hybrid-run forward BUNDLE --weights W --inputs IN.safetensors\n"
    "                     --out OUT.safetensors [--device D] [--threads N]\n"
    "                     [--allow-extra NAME ...] [--executable NAME]\n"
    "  hybrid-run forward BUNDLE --random-weights SEED --batch B --seq T\n"
    "                     [--repeat N] [--device D] [--threads N]\n"
    "      Runs the bundle's \"forward\" executable on device D: cpu (the\n"
    "      default; --threads N kernel threads), cuda or cuda:N. W is a\n"
    "      .safetensors file, a folder holding model.safetensors (or a\n"
    "      sharded model.safetensors.index.json), or an .onnx model whose\n"
    "      initializers are the weights (inline or external data beside it).\n"
    "      Every input the executable declares (e.g. int64 input_ids\n"
    "      [B,T]) is read from IN by name; other tensors in IN are\n"
    "      ignored. All outputs (e.g. float32 logits [B,T,V]) are\n"
    "      written to OUT. --allow-extra names a checkpoint tensor that is\n"
    "      not a parameter (tied weights, buffers). --executable runs\n"
    "      another of the bundle's executables the same way (e.g.\n"
    "      forward_grad, made by hg-autodiff).\n"
    "      The second form measures speed without files: deterministic\n"
    "      random weights, random input_ids [B,T]; --repeat runs N timed\n"
    "      calls after one warm-up and reports the best and the mean, and\n"
    "      the best of N device-resident calls (enqueue on a stream and\n"
    "      wait; inputs and outputs stay on the device).\n"
    "  hybrid-run generate BUNDLE --weights W --prompt IN.safetensors\n"
    "                     --out OUT.safetensors [--prompt-name NAME]\n"
    "                     [--max-new-tokens N] [--min-new-tokens M]\n"
    "                     [--greedy | --temperature T [--top-k K] [--top-p "
    "P]]\n"
    "                     [--seed S] [--eos ID] [--pad ID]\n"
    "                     [--max-out-tokens C] [--no-cuda-graph]\n"
    "                     [--device D] [--threads N]\n"
    "  hybrid-run generate BUNDLE --random-weights SEED --batch B\n"
    "                     --prompt-len P [--max-new-tokens N] [--repeat R]\n"
    "                     ...\n"
    "      Generates with the bundle's prefill and decode executables (KV\n"
    "      cache; sampling on the device). Reads int64 prompt ids [B,P]\n"
    "      (tensor NAME, default input_ids) and, when the file has it, int64\n"
    "      attention_mask [B,P] (1 = token, 0 = left padding); writes int64\n"
    "      tokens [B,N], float32 logprobs [B,N] (log-softmax of the\n"
    "      temperature-scaled logits at each chosen token) and int64\n"
    "      lengths [B]. Greedy unless --temperature is given; defaults:\n"
    "      16 new tokens, no EOS, pad 0, seed 0; --max-out-tokens (the KV\n"
    "      capacity: prompt + new tokens must fit) is 512, or the model's\n"
    "      position limit when smaller, or what the call needs when\n"
    "      larger. On a GPU the decode step is captured once as a CUDA\n"
    "      graph and replayed (--no-cuda-graph runs it kernel by kernel).\n"
    "      The second form\n"
    "      times prefill and decode on random weights and prompts; --repeat\n"
    "      R reports the best of R calls after a warm-up.\n"
    "  hybrid-run train-step BUNDLE --weights W --inputs IN.safetensors\n"
    "                     --out OUT.safetensors [--optimizer adamw|sgd]\n"
    "                     [--lr LR] [--betas B1,B2] [--eps E]\n"
    "                     [--momentum M] [--dampening D] [--nesterov 0|1]\n"
    "                     [--weight-decay WD] [--device D] [--threads N]\n"
    "      One causal-LM training step (a bundle compiled with hybridc\n"
    "      --train): loss of input_ids (labels = inputs, shifted as HF\n"
    "      does; attention_mask from IN when present), gradients, the\n"
    "      bundle's update: AdamW (defaults: lr 1e-3, betas 0.9,0.999, eps\n"
    "      1e-8, weight decay 0.01) or SGD (lr 1e-3, momentum, dampening,\n"
    "      weight decay 0, no nesterov). Writes loss [1], grad.<name> per\n"
    "      parameter and logits_after (forward on the same inputs after\n"
    "      the step); bf16/f16 bundles also opt.master.<name> (the f32\n"
    "      masters after the step).\n"
    "  hybrid-run train-step BUNDLE --random-weights SEED --batch B --seq T\n"
    "                     [--repeat N] [--peak-flops F] [--device D]\n"
    "                     [--threads N] [optimizer flags as above]\n"
    "      Times training steps without files: deterministic random\n"
    "      weights, random input_ids [B,T], one warm-up step, then N timed\n"
    "      steps (default 3) of the bundle's train_step (forward, backward\n"
    "      and the update), each writing the batch to the device and\n"
    "      reading the loss back. Prints the median and best step time,\n"
    "      tokens/s, the model FLOPs of a step (6 x trainable parameters x\n"
    "      tokens, plus attention's 12 x layers x width x T per token when\n"
    "      the forward pass shows them), achieved FLOP/s, MFU against F\n"
    "      FLOP/s (default 989.4e12, the H200's dense bf16 peak), the loss\n"
    "      of the first and last step, and the peak of device memory in\n"
    "      use (the allocator's high-water mark).\n"
    "  hybrid-run backward BUNDLE --weights W --inputs IN.safetensors\n"
    "                     --out OUT.safetensors [--device D] [--threads N]\n"
    "                     [--allow-extra NAME ...]\n"
    "      The backward pass of a loss computed outside the model (a bundle\n"
    "      compiled with hybridc --train; Engine::backward): reads int64\n"
    "      input_ids [B,T] (and attention_mask) and float32 grad_logits\n"
    "      [B,T,V], the loss's gradient w.r.t. forward's logits; writes\n"
    "      grad.<name> (float32) per trainable parameter: the gradient of\n"
    "      sum(logits * grad_logits), as step() would read it. The forward\n"
    "      pass is recomputed (no activations are kept between calls).\n"
    "  hybrid-run train BUNDLE --weights W --config DS_CONFIG.json\n"
    "                     --data TOKENS.safetensors --steps N [--save DIR]\n"
    "                     [--resume DIR] [--device D] [--threads N]\n"
    "      N optimizer steps of causal-LM training (a bundle compiled with\n"
    "      hybridc --train) over TOKENS' input_ids [sequences, seq] (and\n"
    "      attention_mask), micro-batches taken in order and cycling, as a\n"
    "      DeepSpeed config says: batch sizes and gradient accumulation,\n"
    "      AdamW's or SGD's params, gradient_clipping, WarmupLR /\n"
    "      WarmupDecayLR / WarmupCosineLR, bf16 or fp16 (dynamic loss\n"
    "      scaling: an overflowing step is skipped and logged with the\n"
    "      scale's change), each checked against the bundle.\n"
    "      Logs loss, lr, gradient norm, ms and tokens/s per step\n"
    "      (steps_per_print); --save writes DIR/model.safetensors (HF names)\n"
    "      and DIR/optimizer.safetensors (moments, masters, loss scale,\n"
    "      step count); --resume\n"
    "      DIR (instead of --weights) continues such a run N more steps,\n"
    "      as if it had not stopped.\n"
    "  hybrid-run ppo-step BUNDLE --random-weights SEED [--batch B]\n"
    "                     [--prompt-len P] [--new-tokens N]\n"
    "                     [--micro-batch M] [--repeat R] [--seed S]\n"
    "                     [--lr LR] [--release-cache] [--no-cuda-graph]\n"
    "                     [--device D] [--threads N]\n"
    "      Times PPO-shaped steps on random weights (a bundle compiled with\n"
    "      hybridc --train, generation kept): eval(), B random prompts of\n"
    "      P tokens, N sampled new tokens each (temperature 1, no top-k /\n"
    "      top-p, no early stop; seed S + step), train(), causal-LM\n"
    "      forward + backward over the B x (P + N) sequences in\n"
    "      micro-batches of M (gradients accumulated) and one optimizer\n"
    "      step (the bundle's AdamW with torch's defaults, lr 1e-6).\n"
    "      Defaults: the anchor's 32, 256, 256, 8, R 1. One warm-up step,\n"
    "      then R timed ones; prints the median step (of an even R, the\n"
    "      slower middle one) and its phases, each timed between device\n"
    "      synchronisations (generate, train, the eval()/train()\n"
    "      switches), the most bytes the switches of one\n"
    "      step allocated and copied, generated tokens/s, the loss of the\n"
    "      first and last step and the peak of device memory in use.\n"
    "      --release-cache lets the KV cache go when generation ends (it is\n"
    "      taken again, zero-filled, by the next generation).\n"
    "  hybrid-run compare A.safetensors B.safetensors [--name N ...]\n"
    "                     [--atol X | --rtol-max R]\n"
    "      Prints max |a-b| per tensor (the --name ones, else every name in\n"
    "      both files; --name NA=NB compares A's NA with B's NB); exits 1 if\n"
    "      any exceeds X (default 1e-3) or if shapes differ.\n"
    "  hybrid-run info BUNDLE\n"
    "      Prints the bundle's model, every parameter (name, dtype, shape),\n"
    "      its states, and per executable: symbols with their limits,\n"
    "      inputs and outputs, parameter and state access, workspace size\n"
    "      and command count.\n"
    "Errors: one line on stderr; exit 1, or 2 for usage errors.\n";

/// A command-line mistake: exit 2.
struct UsageError {
  std::string message;
};

/// Positional arguments and flags of one subcommand.
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> flags;

  std::optional<std::string> single(const std::string &flag) const {
    auto it = flags.find(flag);
    if (it == flags.end())
      return std::nullopt;
    if (it->second.size() > 1)
      throw UsageError{flag + " given more than once"};
    return it->second[0];
  }
  std::string required(const std::string &flag, const std::string &cmd) const {
    std::optional<std::string> v = single(flag);
    if (!v)
      throw UsageError{cmd + ": missing " + flag};
    return *v;
  }
};

/// Splits argv into positionals and `--flag value` / `--flag=value` pairs,
/// accepting only `known` flags (all of which take a value).
Args parseArgs(const std::string &cmd, int argc, char **argv, int first,
               const std::set<std::string> &known) {
  Args args;
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 1 && a[0] == '-') {
      std::string flag = a, value;
      bool hasValue = false;
      if (size_t eq = a.find('='); eq != std::string::npos) {
        flag = a.substr(0, eq);
        value = a.substr(eq + 1);
        hasValue = true;
      }
      if (!known.count(flag))
        throw UsageError{cmd + ": unknown flag '" + flag + "'"};
      if (!hasValue) {
        if (i + 1 >= argc)
          throw UsageError{cmd + ": " + flag + " needs a value"};
        value = argv[++i];
      }
      args.flags[flag].push_back(value);
    } else {
      args.positional.push_back(a);
    }
  }
  return args;
}

/// argv without the flags in `known` that take no value (--greedy), which
/// go to `found`; what is left goes to parseArgs.
std::vector<char *> takeSwitches(int argc, char **argv,
                                 const std::set<std::string> &known,
                                 std::set<std::string> &found) {
  std::vector<char *> rest;
  for (int i = 0; i < argc; ++i) {
    if (known.count(argv[i]))
      found.insert(argv[i]);
    else
      rest.push_back(argv[i]);
  }
  return rest;
}

void expectPositional(const Args &args, size_t n, const std::string &cmd,
                      const char *what) {
  if (args.positional.size() < n)
    throw UsageError{cmd + ": expected " + what};
  if (args.positional.size() > n)
    throw UsageError{cmd + ": unexpected argument '" + args.positional[n] +
                     "'"};
}

long parsePositiveInt(const std::string &s, const std::string &flag) {
  char *end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v < 1 || v > 4096)
    throw UsageError{flag + " wants a positive integer, got '" + s + "'"};
  return v;
}

double parseNonNegative(const std::string &s, const std::string &flag) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || errno || !std::isfinite(v) || v < 0)
    throw UsageError{flag + " wants a non-negative number, got '" + s + "'"};
  return v;
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
  if (n >= 1024.0 * 1024 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f GiB", n / (1024.0 * 1024 * 1024));
  else if (n >= 1024.0 * 1024)
    std::snprintf(buf, sizeof buf, "%.2f MiB", n / (1024.0 * 1024));
  else if (n >= 1024.0)
    std::snprintf(buf, sizeof buf, "%.1f KiB", n / 1024.0);
  else
    std::snprintf(buf, sizeof buf, "%.0f B", n);
  return buf;
}

/// A default value as a message shows it: "1", "0.5".
std::string formatValue(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string symShape(const SymShape &shape,
                     const std::vector<std::string> &symbols) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? "," : "") + shape[d].str(symbols);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// forward
//===----------------------------------------------------------------------===//

/// Random token ids [batch, seq] for a bundle whose forward takes input_ids;
/// ids are drawn below the vocabulary size read off the logits output.
NamedTensors syntheticInputs(const BundleDesc &bundle, int64_t batch,
                             int64_t seq) {
  const ExecutableDesc *fwd = nullptr;
  for (const ExecutableDesc &e : bundle.executables)
    if (e.name == "forward")
      fwd = &e;
  bool onlyIds =
      fwd && !fwd->inputs.empty() && fwd->inputs[0].name == "input_ids" &&
      std::all_of(fwd->inputs.begin() + 1, fwd->inputs.end(),
                  [](const PortDesc &p) { return p.defaultValue.has_value(); });
  if (!onlyIds)
    throw Error("--batch/--seq need a forward that takes input_ids and "
                "otherwise only inputs with defaults");
  int64_t vocab = 2;
  for (const PortDesc &p : fwd->outputs)
    if (p.name == "logits")
      if (auto v = fwd->buffers[p.buffer].shape.back().constant())
        vocab = *v;
  HostTensor ids = HostTensor::allocate(DType::I64, {batch, seq});
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < batch * seq; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    ids.as<int64_t>()[i] = static_cast<int64_t>((state >> 33) % vocab);
  }
  return {{"input_ids", ids}};
}

/// Refuses an --out that names a file the command reads (writing it would
/// replace that input). A weights folder counts its model.safetensors and
/// index; a sharded checkpoint every .safetensors file beside its index.
void checkOutputIsNoInput(const std::string &out, const std::string &bundle,
                          const std::string &weights,
                          const std::string &inputs) {
  auto refuse = [&](const char *what, const std::string &input) {
    throw UsageError{"forward: --out " + out + " is the " + what + " (" +
                     input + "); choose another output file"};
  };
  if (isSameFile(out, bundle))
    refuse("bundle", bundle);
  if (!inputs.empty() && isSameFile(out, inputs))
    refuse("inputs", inputs);
  if (weights.empty())
    return;
  // An ONNX model's external data files (only an existing file can be
  // replaced, so the model is read only then).
  if (weights.size() > 5 &&
      weights.compare(weights.size() - 5, 5, ".onnx") == 0 &&
      isSameFile(out, out)) {
    OnnxInitializers onnx = OnnxInitializers::read(weights);
    for (const std::string &data : onnx.dataFiles())
      if (isSameFile(out, data))
        refuse("weights", data);
  }
  std::string folderIndex = weights + "/model.safetensors.index.json";
  for (const std::string &w :
       {weights, weights + "/model.safetensors", folderIndex})
    if (isSameFile(out, w))
      refuse("weights", w);
  auto endsWith = [](const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  auto folderOf = [](const std::string &path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string(".")
                                      : path.substr(0, slash + 1);
  };
  std::string index = endsWith(weights, ".json") ? weights : folderIndex;
  struct stat st;
  if (endsWith(out, ".safetensors") && ::stat(out.c_str(), &st) == 0 &&
      ::stat(index.c_str(), &st) == 0 &&
      isSameFile(folderOf(out), folderOf(index)))
    refuse("weights", "a shard beside " + index);
}

/// The --allow-extra names (checkpoint tensors that are no parameter).
std::set<std::string> allowedExtraOf(Args &args) {
  std::set<std::string> names;
  if (args.flags.count("--allow-extra"))
    names.insert(args.flags["--allow-extra"].begin(),
                 args.flags["--allow-extra"].end());
  return names;
}

/// The device --device names (cpu by default) with --threads kernel
/// threads (cpu only), opened; usage errors name the subcommand `cmd`.
std::shared_ptr<Device> deviceOf(Args &args, const std::string &cmd) {
  const std::string name = args.single("--device").value_or("cpu");
  if (!isDeviceName(name))
    throw UsageError{cmd + ": --device wants cpu, cuda or cuda:N, got '" +
                     name + "'"};
  DeviceOptions options;
  if (auto t = args.single("--threads")) {
    options.cpuThreads = static_cast<int>(parsePositiveInt(*t, "--threads"));
    if (name != "cpu")
      throw UsageError{cmd + ": --threads applies to --device cpu only"};
  }
  return openDevice(name, options);
}

/// A training subcommand's bundle and engine on deviceOf(args, cmd); the
/// bundle must hold `executable`, else "<bundle>: no <missing> (compile the
/// model with hybridc --train)".
struct TrainingEngine {
  std::shared_ptr<const BundleDesc> bundle;
  Engine engine;
};
TrainingEngine openEngine(Args &args, const std::string &cmd,
                          const std::string &bundlePath) {
  std::shared_ptr<Device> device = deviceOf(args, cmd);
  auto bundle = std::make_shared<const BundleDesc>(readBundle(bundlePath));
  Engine engine = Engine::create(bundle, device);
  return {std::move(bundle), std::move(engine)};
}
TrainingEngine openForTraining(Args &args, const std::string &cmd,
                               const std::string &bundlePath,
                               const char *executable, const char *missing) {
  TrainingEngine opened = openEngine(args, cmd, bundlePath);
  if (!opened.engine.hasExecutable(executable))
    throw Error(bundlePath + ": no " + missing +
                " (compile the model with hybridc --train)");
  return opened;
}

/// The model's name as a report line shows it.
std::string modelNameOf(const BundleDesc &bundle) {
  return bundle.model.empty() ? "(unnamed model)"
                              : escapeControlCharacters(bundle.model);
}

/// The device allocator's high-water mark so far, in GiB.
double peakGiB(const Device &device) {
  return static_cast<double>(device.memoryStats().peakBytes) /
         (1024.0 * 1024.0 * 1024.0);
}

int runForward(int argc, char **argv) {
  Args args = parseArgs("forward", argc, argv, 2,
                        {"--weights", "--inputs", "--out", "--threads",
                         "--allow-extra", "--random-weights", "--batch",
                         "--seq", "--repeat", "--device", "--executable"});
  expectPositional(args, 1, "forward", "a BUNDLE");
  std::optional<std::string> randomSeed = args.single("--random-weights");
  if (randomSeed && args.single("--weights"))
    throw UsageError{"forward: give --weights or --random-weights, not both"};
  std::string weightsPath = randomSeed
                                ? "random weights (seed " + *randomSeed + ")"
                                : args.required("--weights", "forward");
  bool synthetic = args.single("--batch") || args.single("--seq");
  if (synthetic && args.single("--inputs"))
    throw UsageError{"forward: give --inputs or --batch/--seq, not both"};
  std::string inputsPath =
      synthetic ? "" : args.required("--inputs", "forward");
  std::string outPath = synthetic ? args.single("--out").value_or("")
                                  : args.required("--out", "forward");
  if (!outPath.empty())
    checkOutputIsNoInput(outPath, args.positional[0],
                         randomSeed ? "" : weightsPath, inputsPath);
  // --repeat N (timing): a warm-up call, then N timed ones.
  int repeat = 1;
  const bool timed = args.single("--repeat").has_value();
  if (timed)
    repeat = static_cast<int>(
        parsePositiveInt(*args.single("--repeat"), "--repeat"));
  const std::set<std::string> allowedExtra = allowedExtraOf(args);

  const std::string &bundlePath = args.positional[0];
  // The device first: a missing GPU is the error to report, before any
  // file is read.
  std::shared_ptr<Device> device = deviceOf(args, "forward");
  auto bundle = std::make_shared<const BundleDesc>(readBundle(bundlePath));
  Engine engine = Engine::create(bundle, device);
  if (randomSeed)
    engine.initRandom(static_cast<uint64_t>(
        parseNonNegative(*randomSeed, "--random-weights")));
  else
    engine.loadWeights(weightsPath, allowedExtra);
  const std::string exeName = args.single("--executable").value_or("forward");
  Executable &forward = engine.executable(exeName);

  NamedTensors inputs;
  if (synthetic)
    inputs = syntheticInputs(
        *bundle,
        parsePositiveInt(args.required("--batch", "forward"), "--batch"),
        parsePositiveInt(args.required("--seq", "forward"), "--seq"));
  std::optional<SafeTensorsFile> in;
  if (!synthetic)
    in = SafeTensorsFile::open(inputsPath);
  for (size_t i = 0; !synthetic && i < forward.inputNames().size(); ++i) {
    const std::string &name = forward.inputNames()[i];
    const SafeTensorsEntry *e = in->find(name);
    if (!e && forward.desc().inputs[i].defaultValue)
      continue; // omitted: filled with its default (e.g. a mask of ones)
    if (!e)
      throw Error(inputsPath + ": no tensor '" + name + "' (the bundle's " +
                  exeName + " takes " + forward.describeInput(i) + ")");
    std::optional<DType> dt = toDType(e->dtype);
    if (!dt)
      throw Error(inputsPath + ": tensor '" + name + "' is " +
                  safeTensorsDTypeName(e->dtype) + "; " + exeName + " takes " +
                  forward.describeInput(i));
    inputs.emplace(name, in->toHost(*e, *dt));
  }

  // With --repeat, one untimed warm-up call (workspace allocation, page
  // faults), then the best of N timed calls; the mean is printed too.
  NamedTensors outputs;
  double ms = 0, totalMs = 0;
  for (int r = 0; r < repeat + (timed ? 1 : 0); ++r) {
    auto start = std::chrono::steady_clock::now();
    outputs = forward.run(inputs);
    double t = std::chrono::duration<double, std::milli>(
                   std::chrono::steady_clock::now() - start)
                   .count();
    if (timed && r == 0) {
      device->resetProfile(); // the table covers timed calls only
      continue;
    }
    ms = (ms == 0 || t < ms) ? t : ms;
    totalMs += t;
  }
  // The same call without the host edge (inputs written before the clock
  // starts, outputs left on the device): what the executable itself costs.
  double residentMs = 0;
  if (timed) {
    Executable &exe = forward;
    const NamedTensors all = exe.withDefaults(inputs);
    std::unique_ptr<Stream> stream = device->createStream();
    for (int r = 0; r < repeat; ++r) {
      // The plan may reuse an input's slot once it is read: write it again.
      for (size_t i = 0; i < exe.inputNames().size(); ++i) {
        const HostTensor &t = all.at(exe.inputNames()[i]);
        device->copyHostToDevice(exe.input(i).data, t.data(), t.bytes(),
                                 *stream);
      }
      device->synchronize(*stream);
      auto start = std::chrono::steady_clock::now();
      exe.enqueue(*stream);
      device->synchronize(*stream);
      double t = std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      residentMs = (residentMs == 0 || t < residentMs) ? t : residentMs;
    }
  }
  if (!outPath.empty())
    writeSafeTensors(outPath, outputs,
                     {{"producer", "hybrid-run forward"},
                      {"bundle", bundlePath},
                      {"weights", weightsPath}});

  std::string tokens;
  double tokensPerS = 0;
  auto ids = inputs.find("input_ids");
  const HostTensor &first = ids != inputs.end() ? ids->second
                            : inputs.empty()    ? HostTensor()
                                                : inputs.begin()->second;
  if (first.shape().size() >= 2) {
    tokens = std::to_string(first.shape()[0]) + "x" +
             std::to_string(first.shape()[1]) + " tokens";
    tokensPerS = first.shape()[0] * first.shape()[1] / (ms / 1000);
  } else if (!first.shape().empty()) {
    tokens = std::to_string(first.shape()[0]) + " rows";
  }
  std::string model = bundle->model.empty()
                          ? "(unnamed model)"
                          : escapeControlCharacters(bundle->model);
  std::string params =
      humanCount(static_cast<double>(engine.weights().totalElements()));
  std::string bytes =
      humanBytes(static_cast<double>(engine.weights().totalBytes()));
  std::string rate =
      tokensPerS > 0
          ? ", " + std::to_string(static_cast<long long>(tokensPerS)) +
                " tokens/s"
          : "";
  std::string mean = timed ? " (best of " + std::to_string(repeat) + "; mean " +
                                 std::to_string(totalMs / repeat).substr(0, 7) +
                                 " ms)"
                           : "";
  std::string on = device->name() == "cpu" ? "" : " on " + device->name();
  std::string resident;
  if (residentMs > 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "; device-resident %.2f ms", residentMs);
    resident = buf;
    if (tokensPerS > 0)
      resident +=
          ", " +
          std::to_string(static_cast<long long>(
              first.shape()[0] * first.shape()[1] / (residentMs / 1000))) +
          " tokens/s";
  }
  std::fprintf(stderr,
               "hybrid-run: forward %s%s: %s params (%s), %s, %.2f ms%s%s%s\n",
               model.c_str(), on.c_str(), params.c_str(), bytes.c_str(),
               tokens.empty() ? "no batch" : tokens.c_str(), ms, mean.c_str(),
               rate.c_str(), resident.c_str());
  return 0;
}

//===----------------------------------------------------------------------===//
// generate
//===----------------------------------------------------------------------===//

int runGenerate(int argc, char **argv) {
  std::set<std::string> switches;
  std::vector<char *> rest =
      takeSwitches(argc, argv, {"--greedy", "--no-cuda-graph"}, switches);
  const bool greedyFlag = switches.count("--greedy"),
             noGraph = switches.count("--no-cuda-graph");
  Args args = parseArgs("generate", static_cast<int>(rest.size()), rest.data(),
                        2, {"--weights",
                            "--prompt",
                            "--prompt-name",
                            "--out",
                            "--max-new-tokens",
                            "--min-new-tokens",
                            "--temperature",
                            "--top-k",
                            "--top-p",
                            "--seed",
                            "--eos",
                            "--pad",
                            "--max-out-tokens",
                            "--threads",
                            "--allow-extra",
                            "--random-weights",
                            "--batch",
                            "--prompt-len",
                            "--device",
                            "--repeat"});
  expectPositional(args, 1, "generate", "a BUNDLE");
  auto integer = [&](const char *flag, int64_t dflt, int64_t min) {
    std::optional<std::string> v = args.single(flag);
    if (!v)
      return dflt;
    char *end = nullptr;
    errno = 0;
    long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end || errno || x < min)
      throw UsageError{std::string("generate: ") + flag +
                       " wants an integer >= " + std::to_string(min) +
                       ", got '" + *v + "'"};
    return static_cast<int64_t>(x);
  };
  auto real = [&](const char *flag, double dflt) {
    std::optional<std::string> v = args.single(flag);
    return v ? parseNonNegative(*v, flag) : dflt;
  };
  GenerateConfig config;
  config.maxNewTokens = integer("--max-new-tokens", 16, 1);
  config.minNewTokens = integer("--min-new-tokens", 0, 0);
  config.eosTokenId = integer("--eos", -1, -1);
  config.padTokenId = integer("--pad", 0, 0);
  config.seed = static_cast<uint64_t>(integer("--seed", 0, 0));
  config.maxOutTokens = integer("--max-out-tokens", 0, 0);
  config.cudaGraph = !noGraph;
  bool sampling = args.single("--temperature") || args.single("--top-k") ||
                  args.single("--top-p");
  if (greedyFlag && sampling)
    throw UsageError{"generate: --greedy and --temperature/--top-k/--top-p "
                     "exclude each other"};
  config.greedy = !sampling;
  config.temperature = static_cast<float>(real("--temperature", 1.0));
  config.topK = integer("--top-k", 0, 0);
  config.topP = static_cast<float>(real("--top-p", 1.0));

  std::optional<std::string> randomSeed = args.single("--random-weights");
  bool synthetic = args.single("--batch") || args.single("--prompt-len");
  if (randomSeed && args.single("--weights"))
    throw UsageError{"generate: give --weights or --random-weights, not both"};
  if (synthetic && args.single("--prompt"))
    throw UsageError{"generate: give --prompt or --batch/--prompt-len, not "
                     "both"};
  std::string weightsPath = randomSeed
                                ? "random weights (seed " + *randomSeed + ")"
                                : args.required("--weights", "generate");
  std::string promptPath =
      synthetic ? "" : args.required("--prompt", "generate");
  std::string outPath = synthetic ? args.single("--out").value_or("")
                                  : args.required("--out", "generate");
  const std::string &bundlePath = args.positional[0];
  if (!outPath.empty())
    checkOutputIsNoInput(outPath, bundlePath, randomSeed ? "" : weightsPath,
                         promptPath);
  const std::set<std::string> allowedExtra = allowedExtraOf(args);

  std::shared_ptr<Device> device = deviceOf(args, "generate");
  auto bundle = std::make_shared<const BundleDesc>(readBundle(bundlePath));
  Engine engine = Engine::create(bundle, device);
  if (randomSeed)
    engine.initRandom(static_cast<uint64_t>(
        parseNonNegative(*randomSeed, "--random-weights")));
  else
    engine.loadWeights(weightsPath, allowedExtra);

  HostTensor ids, mask;
  bool haveMask = false;
  if (synthetic) {
    int64_t batch = integer("--batch", 1, 1),
            len = integer("--prompt-len", 1, 1);
    NamedTensors in = syntheticInputs(*bundle, batch, len);
    ids = in.at("input_ids");
  } else {
    SafeTensorsFile in = SafeTensorsFile::open(promptPath);
    std::string name = args.single("--prompt-name").value_or("input_ids");
    const SafeTensorsEntry *e = in.find(name);
    if (!e)
      throw Error(promptPath + ": no tensor '" + name +
                  "' (the prompt ids, int64 [batch, prompt])");
    if (e->dtype != SafeTensorsDType::I64 && e->dtype != SafeTensorsDType::I32)
      throw Error(promptPath + ": tensor '" + name + "' is " +
                  safeTensorsDTypeName(e->dtype) +
                  "; the prompt ids are int64 [batch, prompt]");
    ids = in.toHost(*e, DType::I64);
    if (const SafeTensorsEntry *m = in.find("attention_mask")) {
      if (m->dtype != SafeTensorsDType::I64 &&
          m->dtype != SafeTensorsDType::I32)
        throw Error(promptPath + ": attention_mask is " +
                    safeTensorsDTypeName(m->dtype) +
                    "; it must be int64 [batch, prompt]");
      mask = in.toHost(*m, DType::I64);
      haveMask = true;
    }
  }
  // --repeat R (timing): the first call is a warm-up (GEMM tuning, the
  // decode graph's capture), then the best of R more.
  const int64_t repeat = integer("--repeat", 1, 1);
  const bool timed = args.single("--repeat").has_value();
  GenerateResult r = engine.generate(ids, haveMask ? &mask : nullptr, config);
  if (timed) {
    engine.device().resetProfile(); // the table covers timed calls only
    double bestPrefill = 0, bestDecode = 0;
    for (int64_t i = 0; i < repeat; ++i) {
      GenerateResult again =
          engine.generate(ids, haveMask ? &mask : nullptr, config);
      if (i == 0 || again.prefillMs < bestPrefill)
        bestPrefill = again.prefillMs;
      if (i == 0 || again.decodeMs < bestDecode)
        bestDecode = again.decodeMs;
    }
    r.prefillMs = bestPrefill;
    r.decodeMs = bestDecode;
  }
  if (!outPath.empty())
    writeSafeTensors(outPath,
                     {{"tokens", r.tokens},
                      {"logprobs", r.logprobs},
                      {"lengths", r.lengths}},
                     {{"producer", "hybrid-run generate"},
                      {"bundle", bundlePath},
                      {"weights", weightsPath}});
  const int64_t batch = ids.shape()[0];
  const double perToken = r.steps > 1 ? r.decodeMs / (r.steps - 1) : 0;
  const double tps =
      r.decodeMs > 0 ? batch * (r.steps - 1) / (r.decodeMs / 1000) : 0;
  // End to end as HF's generate() is timed: every new token of the batch
  // (the first comes from the prefill) over prefill + decode.
  const double totalMs = r.prefillMs + r.decodeMs;
  const double endToEnd = totalMs > 0 ? batch * r.steps / (totalMs / 1000) : 0;
  std::fprintf(
      stderr,
      "hybrid-run: generate %s: %lldx%lld prompt, %lld new tokens: "
      "prefill %.2f ms, decode %.3f ms/step, %.0f tokens/s; end to end "
      "%.2f ms, %.0f tokens/s; peak %.2f GiB%s%s\n",
      modelNameOf(*bundle).c_str(), static_cast<long long>(batch),
      static_cast<long long>(ids.shape()[1]), static_cast<long long>(r.steps),
      r.prefillMs, perToken, tps, totalMs, endToEnd, peakGiB(engine.device()),
      r.decodeGraphOperations
          ? ("; decode graph of " + std::to_string(r.decodeGraphOperations) +
             " operations")
                .c_str()
          : "",
      timed ? (" (best of " + std::to_string(repeat) + ")").c_str() : "");
  return 0;
}

//===----------------------------------------------------------------------===//
// compare
//===----------------------------------------------------------------------===//

std::vector<double> asDoubles(const SafeTensorsFile &f,
                              const SafeTensorsEntry &e) {
  std::vector<double> out(static_cast<size_t>(e.numel()));
  switch (e.dtype) {
  case SafeTensorsDType::F32:
  case SafeTensorsDType::F16:
  case SafeTensorsDType::BF16: {
    std::vector<float> v = f.toF32(e);
    out.assign(v.begin(), v.end());
    break;
  }
  case SafeTensorsDType::I64:
  case SafeTensorsDType::I32: {
    std::vector<int64_t> v(out.size());
    f.convertInto(e, DType::I64, v.data());
    for (size_t i = 0; i < v.size(); ++i)
      out[i] = static_cast<double>(v[i]);
    break;
  }
  case SafeTensorsDType::BOOL:
  case SafeTensorsDType::U8:
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = e.data[i];
    break;
  }
  return out;
}

int runCompare(int argc, char **argv) {
  Args args =
      parseArgs("compare", argc, argv, 2, {"--name", "--atol", "--rtol-max"});
  expectPositional(args, 2, "compare", "two safetensors files A and B");
  double atol = 1e-3;
  std::optional<double> rtolMax;
  if (auto a = args.single("--atol"))
    atol = parseNonNegative(*a, "--atol");
  if (auto r = args.single("--rtol-max")) {
    if (args.single("--atol"))
      throw UsageError{"compare: give --atol or --rtol-max, not both"};
    rtolMax = parseNonNegative(*r, "--rtol-max");
  }
  SafeTensorsFile a = SafeTensorsFile::open(args.positional[0]);
  SafeTensorsFile b = SafeTensorsFile::open(args.positional[1]);

  std::vector<std::string> names;
  if (args.flags.count("--name")) {
    names = args.flags["--name"];
  } else {
    for (const SafeTensorsEntry &e : a.entries())
      if (b.find(e.name))
        names.push_back(e.name);
    std::sort(names.begin(), names.end());
    if (names.empty())
      throw Error(a.path() + " and " + b.path() + " have no tensor in common");
  }

  size_t failed = 0;
  for (const std::string &name : names) {
    // NAME, or A_NAME=B_NAME for tensors named differently in the two.
    const size_t eq = name.find('=');
    const SafeTensorsEntry &ea = a.get(name.substr(0, eq));
    const SafeTensorsEntry &eb =
        b.get(eq == std::string::npos ? name : name.substr(eq + 1));
    if (ea.shape != eb.shape) {
      std::printf("%s: shape %s vs %s  FAIL\n", name.c_str(),
                  shapeToString(ea.shape).c_str(),
                  shapeToString(eb.shape).c_str());
      ++failed;
      continue;
    }
    std::vector<double> va = asDoubles(a, ea), vb = asDoubles(b, eb);
    double maxDiff = 0, maxRef = 0;
    for (double v : vb)
      if (std::isfinite(v))
        maxRef = std::max(maxRef, std::fabs(v));
    double bound = rtolMax ? *rtolMax * maxRef : atol;
    for (size_t i = 0; i < va.size(); ++i) {
      bool na = std::isnan(va[i]), nb = std::isnan(vb[i]);
      double d = na || nb         ? (na && nb ? 0 : INFINITY)
                 : va[i] == vb[i] ? 0 // equal infinities
                                  : std::fabs(va[i] - vb[i]);
      if (!(d <= maxDiff))
        maxDiff = d;
    }
    bool pass = maxDiff <= bound;
    failed += !pass;
    if (rtolMax)
      std::printf("%s: max |a-b| = %.6g = %.3g of max |b| %.6g over %s "
                  "(rtol-max %g)  %s\n",
                  name.c_str(), maxDiff, maxRef > 0 ? maxDiff / maxRef : 0.0,
                  maxRef, shapeToString(ea.shape).c_str(), *rtolMax,
                  pass ? "ok" : "FAIL");
    else
      std::printf("%s: max |a-b| = %.6g over %s (atol %g)  %s\n", name.c_str(),
                  maxDiff, shapeToString(ea.shape).c_str(), atol,
                  pass ? "ok" : "FAIL");
  }
  if (failed)
    // Not a crash but a failed check: one error line like every failure.
    std::fprintf(stderr,
                 "hybrid-run: error: compare: %zu of %zu tensors differ "
                 "(%s %g)\n",
                 failed, names.size(), rtolMax ? "rtol-max" : "atol",
                 rtolMax ? *rtolMax : atol);
  return failed ? 1 : 0;
}

//===----------------------------------------------------------------------===//
// info
//===----------------------------------------------------------------------===//

int runInfo(int argc, char **argv) {
  Args args = parseArgs("info", argc, argv, 2, {});
  expectPositional(args, 1, "info", "a BUNDLE");
  const std::string &path = args.positional[0];
  BundleDesc b = readBundle(path);
  int64_t elements = 0, bytes = 0, constBytes = 0;
  for (const ParamDesc &p : b.params) {
    elements += numElements(p.shape);
    bytes += numElements(p.shape) * static_cast<int64_t>(dtypeSize(p.dtype));
  }
  for (const ConstantDesc &c : b.constants)
    constBytes += static_cast<int64_t>(c.data.size());
  std::printf("bundle: %s (format version %u)\n", path.c_str(),
              kBundleFormatVersion);
  std::printf("producer: %s\n", b.producer.c_str());
  std::printf("model: %s\n", b.model.c_str());
  std::printf("source: %s\n", b.source.c_str());
  if (b.worldSize != 1)
    std::printf("world size: %d (ZeRO stage %d)\n", b.worldSize, b.zeroStage);
  std::printf("params: %zu (%s elements, %s)\n", b.params.size(),
              humanCount(static_cast<double>(elements)).c_str(),
              humanBytes(static_cast<double>(bytes)).c_str());
  auto shardText = [](const std::optional<ShardDesc> &s) {
    return s ? ", shard of " + std::to_string(s->shardElements()) +
                   " elements per rank"
             : std::string();
  };
  for (const ParamDesc &p : b.params)
    std::printf("  param %s: %s %s%s%s%s\n", p.name.c_str(), dtypeName(p.dtype),
                shapeToString(p.shape).c_str(),
                p.layout.empty() ? "" : (" layout " + p.layout).c_str(),
                shardText(p.shard).c_str(),
                p.onnxZeros ? ", zeros (in no ONNX initializer)"
                : p.source.empty()
                    ? ""
                    : (", from initializer " + p.source).c_str());
  std::printf("constants: %zu (%s)\n", b.constants.size(),
              humanBytes(static_cast<double>(constBytes)).c_str());
  if (!b.tied.empty()) {
    std::string tied;
    for (const std::string &t : b.tied)
      tied += (tied.empty() ? "" : ", ") + t;
    std::printf("tied: %s\n", tied.c_str());
  }
  std::printf("states: %zu\n", b.states.size());
  for (const StateDesc &st : b.states)
    std::printf(
        "  state %s: %s%s\n", st.name.c_str(), dtypeName(st.dtype),
        st.shard ? (" " + shapeToString(st.shard->shape) + shardText(st.shard))
                       .c_str()
                 : "");
  for (const ExecutableDesc &e : b.executables) {
    std::string syms;
    for (size_t i = 0; i < e.symbols.size(); ++i) {
      syms += (syms.empty() ? "" : ", ") + e.symbols[i];
      if (e.symbolMax[i] > 0)
        syms += " <= " + std::to_string(e.symbolMax[i]);
    }
    std::printf("executable %s:\n", e.name.c_str());
    std::printf("  symbols: %s\n", syms.empty() ? "(none)" : syms.c_str());
    for (const PortDesc &p : e.inputs) {
      const BufferDesc &buf = e.buffers[p.buffer];
      std::printf(
          "  input %s: %s %s%s\n", p.name.c_str(), dtypeName(buf.dtype),
          symShape(buf.shape, e.symbols).c_str(),
          p.defaultValue
              ? (" (default " + formatValue(*p.defaultValue) + ")").c_str()
              : "");
    }
    for (const PortDesc &p : e.outputs) {
      const BufferDesc &buf = e.buffers[p.buffer];
      std::printf("  output %s: %s %s\n", p.name.c_str(), dtypeName(buf.dtype),
                  symShape(buf.shape, e.symbols).c_str());
    }
    std::printf("  params: %s\n", accessName(e.paramAccess));
    if (e.states.empty())
      std::printf("  states: (none)\n");
    for (const StateUse &u : e.states) {
      // The shape this executable sees the state with (symbols its own).
      std::string shape;
      for (const BufferDesc &buf : e.buffers)
        if (buf.kind == BufferKind::State && buf.index == u.state) {
          shape = " " + symShape(buf.shape, e.symbols);
          break;
        }
      std::printf("  state %s: %s%s, %s\n", b.states[u.state].name.c_str(),
                  dtypeName(b.states[u.state].dtype), shape.c_str(),
                  accessName(u.access));
    }
    if (!e.communicators.empty()) {
      std::string comms;
      for (const std::string &c : e.communicators)
        comms += (comms.empty() ? "" : ", ") + c;
      std::printf("  communicators: %s\n", comms.c_str());
    }
    std::printf("  buffers: %zu, commands: %zu, streams: %d, events: %d\n",
                e.buffers.size(), e.commands.size(), e.numStreams, e.numEvents);
    std::printf("  workspace: %s bytes (alignment %lld)\n",
                e.workspaceBytes.str(e.symbols).c_str(),
                static_cast<long long>(e.workspaceAlignment));
  }
  return 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// train-step
//===----------------------------------------------------------------------===//

/// State `name` of `engine`, copied to the host.
HostTensor hostCopy(Engine &engine, const std::string &name) {
  DeviceTensor t = engine.state(name);
  HostTensor host = HostTensor::allocate(t.dtype, t.shape);
  Device &device = engine.device();
  device.copyDeviceToHost(host.data(), t.data, t.bytes(),
                          device.defaultStream());
  device.synchronize(device.defaultStream());
  return host;
}

/// input_ids and, when the file has it, attention_mask, from `in` (read
/// from `path`).
NamedTensors tokenBatch(const SafeTensorsFile &in, const std::string &path) {
  NamedTensors batch;
  for (const char *name : {"input_ids", "attention_mask"}) {
    const SafeTensorsEntry *e = in.find(name);
    if (!e && std::string(name) == "attention_mask")
      continue;
    if (!e)
      throw Error(path + ": no tensor 'input_ids' (int64 [batch, seq])");
    if (e->dtype != SafeTensorsDType::I64 && e->dtype != SafeTensorsDType::I32)
      throw Error(path + ": " + name + " is " + safeTensorsDTypeName(e->dtype) +
                  "; it must be int64 [batch, seq]");
    batch[name] = in.toHost(*e, DType::I64);
  }
  return batch;
}

/// What `train-step --random-weights` times.
struct TrainTiming {
  uint64_t seed = 0;
  int64_t batch = 1, seq = 2;
  int repeat = 3;
  double peakFlops = 989.4e12; // H200 SXM, dense bf16
};

TrainTiming trainTimingOf(Args &args) {
  TrainTiming t;
  t.seed = static_cast<uint64_t>(
      parseNonNegative(*args.single("--random-weights"), "--random-weights"));
  t.batch = parsePositiveInt(args.required("--batch", "train-step"), "--batch");
  const std::string seq = args.required("--seq", "train-step");
  t.seq = parsePositiveInt(seq, "--seq");
  if (t.seq < 2)
    throw UsageError{"train-step: --seq must be at least 2 (the loss "
                     "predicts token t + 1 from token t), got '" +
                     seq + "'"};
  if (auto r = args.single("--repeat"))
    t.repeat = static_cast<int>(parsePositiveInt(*r, "--repeat"));
  if (auto p = args.single("--peak-flops")) {
    t.peakFlops = parseNonNegative(*p, "--peak-flops");
    if (t.peakFlops == 0)
      throw UsageError{"--peak-flops wants a positive number of FLOP/s, "
                       "got '" +
                       *p + "'"};
  }
  return t;
}

/// The model FLOPs of one training step. Dense: 6 x trainable parameters x
/// tokens (2 forward, 4 backward per parameter and token; embeddings
/// included and a tied LM head counted once, as its GEMM). Attention's
/// scores and weighted sum: 12 x layers x width x seq per token (PaLM's
/// count, no causal halving), layers and width (heads x head size) read off
/// @forward's attention commands; 0 when it has none.
struct StepFlops {
  int64_t trainable = 0, layers = 0, width = 0;
  double dense = 0, attention = 0;
  double total() const { return dense + attention; }
};

StepFlops stepFlopsOf(const BundleDesc &bundle, const Executable &step,
                      int64_t batch, int64_t seq) {
  StepFlops f;
  // Trainable: the parameters @train_step returns a gradient for.
  const std::vector<std::string> &outs = step.outputNames();
  const std::set<std::string> grads(outs.begin(), outs.end());
  for (const ParamDesc &p : bundle.params)
    if (grads.count("grad." + p.name))
      f.trainable += numElements(p.shape);
  for (const ExecutableDesc &e : bundle.executables) {
    if (e.name != "forward")
      continue;
    for (const CommandDesc &c : e.commands) {
      if (!std::holds_alternative<ops::Attention>(c.op) || c.operands.empty())
        continue;
      // The query: [batch, heads, seq, head size].
      const SymShape &q = e.buffers.at(c.operands[0]).shape;
      if (q.size() != 4 || !q[1].constant() || !q[3].constant())
        continue;
      ++f.layers;
      f.width = std::max(f.width, *q[1].constant() * *q[3].constant());
    }
  }
  const double tokens = static_cast<double>(batch) * seq;
  f.dense = 6.0 * static_cast<double>(f.trainable) * tokens;
  f.attention = 12.0 * static_cast<double>(f.layers) * f.width * seq * tokens;
  return f;
}

/// The timing form of train-step: one warm-up step (GEMM plans, first
/// allocations), then t.repeat timed ones of @train_step on the device.
/// Each writes the batch (and the hyperparameters) to the device, runs the
/// step and reads the loss back, as a training loop does; the gradients
/// stay on the device.
int timeTrainSteps(const BundleDesc &bundle, Engine &engine,
                   const TrainTiming &t, const NamedTensors &hyper) {
  engine.initRandom(t.seed);
  engine.initOptimizer();
  NamedTensors inputs = syntheticInputs(bundle, t.batch, t.seq);
  for (const auto &[name, v] : hyper)
    inputs[name] = v;
  Executable &step = engine.executable("train_step");
  const NamedTensors all = step.withDefaults(inputs);
  std::vector<Shape> shapes;
  for (const std::string &name : step.inputNames())
    shapes.push_back(all.at(name).shape());
  step.bindShapes(shapes);
  const size_t lossPort = step.outputIndex("loss");
  if (step.output(lossPort).dtype != DType::F32)
    throw Error("train_step's loss is not f32");
  Device &device = engine.device();
  std::unique_ptr<Stream> stream = device.createStream();
  auto once = [&](float &loss) {
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < step.inputNames().size(); ++i) {
      const HostTensor &in = all.at(step.inputNames()[i]);
      device.copyHostToDevice(step.input(i).data, in.data(), in.bytes(),
                              *stream);
    }
    step.enqueue(*stream);
    device.copyDeviceToHost(&loss, step.output(lossPort).data, sizeof loss,
                            *stream);
    device.synchronize(*stream);
    return std::chrono::duration<double, std::milli>(
               std::chrono::steady_clock::now() - start)
        .count();
  };
  float firstLoss = 0, loss = 0;
  once(firstLoss);
  device.resetProfile(); // the table covers timed steps only
  std::vector<double> ms;
  for (int r = 0; r < t.repeat; ++r)
    ms.push_back(once(loss));
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median =
      n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;

  const StepFlops flops = stepFlopsOf(bundle, step, t.batch, t.seq);
  const double tokens = static_cast<double>(t.batch) * t.seq;
  const double achieved = flops.total() / (median / 1000);
  char attention[96];
  if (flops.layers)
    std::snprintf(attention, sizeof attention,
                  "attention %.4g over %lld layers x %lld", flops.attention,
                  static_cast<long long>(flops.layers),
                  static_cast<long long>(flops.width));
  else
    std::snprintf(attention, sizeof attention,
                  "attention 0: no attention in forward");
  const std::string model = modelNameOf(bundle);
  const std::string on = device.name() == "cpu" ? "" : " on " + device.name();
  std::fprintf(stderr,
               "hybrid-run: train-step %s%s: %s trainable params, %lldx%lld "
               "tokens: step %.2f ms (median of %d; best %.2f ms), %.0f "
               "tokens/s; model %.4g FLOP/step (6N %.4g + %s), %.4g FLOP/s, "
               "MFU %.4g of %.4g FLOP/s; loss %.4f -> %.4f; peak %.4g GiB\n",
               model.c_str(), on.c_str(),
               humanCount(static_cast<double>(flops.trainable)).c_str(),
               static_cast<long long>(t.batch), static_cast<long long>(t.seq),
               median, t.repeat, sorted.front(), tokens / (median / 1000),
               flops.total(), flops.dense, attention, achieved,
               achieved / t.peakFlops, t.peakFlops,
               static_cast<double>(firstLoss), static_cast<double>(loss),
               peakGiB(device));
  return 0;
}

int runTrainStep(int argc, char **argv) {
  Args args = parseArgs("train-step", argc, argv, 2,
                        {"--weights", "--inputs", "--out", "--optimizer",
                         "--lr", "--betas", "--eps", "--weight-decay",
                         "--momentum", "--dampening", "--nesterov", "--threads",
                         "--allow-extra", "--device", "--random-weights",
                         "--batch", "--seq", "--repeat", "--peak-flops"});
  expectPositional(args, 1, "train-step", "a BUNDLE");
  const std::string &bundlePath = args.positional[0];
  // The timing form: random weights and tokens, no files.
  const bool timing = args.single("--random-weights") ||
                      args.single("--batch") || args.single("--seq") ||
                      args.single("--repeat") || args.single("--peak-flops");
  if (timing) {
    if (!args.single("--random-weights"))
      throw UsageError{"train-step: --batch, --seq, --repeat and --peak-flops "
                       "time random weights: give --random-weights SEED"};
    for (const char *flag : {"--weights", "--inputs", "--out", "--allow-extra"})
      if (args.flags.count(flag))
        throw UsageError{std::string("train-step: ") + flag +
                         " and --random-weights exclude each other (the "
                         "timing reads and writes no files)"};
  }
  const std::string weightsPath =
      timing ? "" : args.required("--weights", "train-step");
  const std::string inputsPath =
      timing ? "" : args.required("--inputs", "train-step");
  const std::string outPath =
      timing ? "" : args.required("--out", "train-step");
  if (!timing)
    checkOutputIsNoInput(outPath, bundlePath, weightsPath, inputsPath);
  const std::optional<std::string> optimizer = args.single("--optimizer");
  if (optimizer && *optimizer != "adamw" && *optimizer != "sgd")
    throw UsageError{"train-step: --optimizer '" + *optimizer +
                     "' is not supported (adamw, sgd)"};
  const bool sgd = optimizer && *optimizer == "sgd";
  for (const char *flag : sgd ? std::vector<const char *>{"--betas", "--eps"}
                              : std::vector<const char *>{
                                    "--momentum", "--dampening", "--nesterov"})
    if (args.single(flag))
      throw UsageError{std::string("train-step: ") + flag +
                       (sgd ? " is AdamW's" : " is SGD's (--optimizer sgd)")};
  // Hyperparameters the executable takes as inputs; omitted ones keep its
  // defaults (torch.optim.AdamW's, lr 1e-3; torch.optim.SGD's).
  NamedTensors hyper;
  auto scalar = [&](const char *name, double v) {
    hyper[name] = HostTensor::fromVector<float>({1}, {static_cast<float>(v)});
  };
  if (auto v = args.single("--lr"))
    scalar("lr", parseNonNegative(*v, "--lr"));
  if (auto v = args.single("--eps"))
    scalar("eps", parseNonNegative(*v, "--eps"));
  if (auto v = args.single("--weight-decay"))
    scalar("weight_decay", parseNonNegative(*v, "--weight-decay"));
  if (auto v = args.single("--momentum"))
    scalar("momentum", parseNonNegative(*v, "--momentum"));
  if (auto v = args.single("--dampening"))
    scalar("dampening", parseNonNegative(*v, "--dampening"));
  if (auto v = args.single("--nesterov")) {
    if (*v != "0" && *v != "1")
      throw UsageError{"train-step: --nesterov wants 0 or 1, got '" + *v + "'"};
    scalar("nesterov", *v == "1" ? 1 : 0);
  }
  if (auto v = args.single("--betas")) {
    size_t comma = v->find(',');
    if (comma == std::string::npos)
      throw UsageError{"train-step: --betas wants B1,B2, got '" + *v + "'"};
    double b1 = parseNonNegative(v->substr(0, comma), "--betas");
    double b2 = parseNonNegative(v->substr(comma + 1), "--betas");
    if (b1 >= 1 || b2 >= 1)
      throw UsageError{"train-step: --betas must be below 1, got '" + *v + "'"};
    scalar("beta1", b1);
    scalar("beta2", b2);
  }
  const std::set<std::string> allowedExtra = allowedExtraOf(args);
  std::optional<TrainTiming> timed;
  if (timing)
    timed = trainTimingOf(args);

  auto [bundle, engine] = openForTraining(
      args, "train-step", bundlePath, "train_step", "train_step executable");
  const Optimizer compiled = trainPlanOf(*bundle).optimizer;
  if (optimizer && (compiled == Optimizer::Sgd) != sgd)
    throw Error(bundlePath + ": compiled for " +
                (compiled == Optimizer::Sgd ? "SGD" : "AdamW") +
                ", not --optimizer " + *optimizer);
  if (timed)
    return timeTrainSteps(*bundle, engine, *timed, hyper);
  engine.loadWeights(weightsPath, allowedExtra);
  // bf16 / f16 weights: their f32 masters, and the f16 loss scale.
  engine.initOptimizer();
  NamedTensors batch =
      tokenBatch(SafeTensorsFile::open(inputsPath), inputsPath);
  Executable &step = engine.executable("train_step");
  NamedTensors inputs = batch;
  for (auto &[name, t] : hyper)
    inputs[name] = t;
  auto start = std::chrono::steady_clock::now();
  NamedTensors out = step.run(step.withDefaults(inputs));
  const double stepMs = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  // The logits after the step, on the same weights the step wrote.
  NamedTensors after =
      engine.forward(engine.executable("forward").withDefaults(batch));
  out["logits_after"] = after.at("logits");
  for (size_t i = 0; i < engine.states().size(); ++i) {
    const std::string &name = engine.states().desc(i).name;
    if (name.rfind("opt.master.", 0) == 0)
      out[name] = hostCopy(engine, name);
  }
  writeSafeTensors(outPath, out,
                   {{"producer", "hybrid-run train-step"},
                    {"bundle", bundlePath},
                    {"weights", weightsPath}});
  std::fprintf(stderr, "hybrid-run: train-step: loss %.6f, %.2f ms\n",
               static_cast<double>(out.at("loss").as<float>()[0]), stepMs);
  return 0;
}

//===----------------------------------------------------------------------===//
// backward
//===----------------------------------------------------------------------===//

int runBackward(int argc, char **argv) {
  Args args = parseArgs("backward", argc, argv, 2,
                        {"--weights", "--inputs", "--out", "--threads",
                         "--allow-extra", "--device"});
  expectPositional(args, 1, "backward", "a BUNDLE");
  const std::string weightsPath = args.required("--weights", "backward");
  const std::string inputsPath = args.required("--inputs", "backward");
  const std::string outPath = args.required("--out", "backward");
  const std::string &bundlePath = args.positional[0];
  checkOutputIsNoInput(outPath, bundlePath, weightsPath, inputsPath);
  const std::set<std::string> allowedExtra = allowedExtraOf(args);

  auto [bundle, engine] = openForTraining(args, "backward", bundlePath,
                                          "backward", "backward executable");
  engine.loadWeights(weightsPath, allowedExtra);
  SafeTensorsFile in = SafeTensorsFile::open(inputsPath);
  NamedTensors batch = tokenBatch(in, inputsPath);
  const SafeTensorsEntry *g = in.find("grad_logits");
  if (!g)
    throw Error(inputsPath +
                ": no tensor 'grad_logits' (float32 [batch, seq, vocab])");
  if (g->dtype != SafeTensorsDType::F32)
    throw Error(inputsPath + ": grad_logits is " +
                safeTensorsDTypeName(g->dtype) +
                "; it must be float32 [batch, seq, vocab]");
  const HostTensor gradLogits = in.toHost(*g, DType::F32);
  const auto mask = batch.find("attention_mask");
  auto start = std::chrono::steady_clock::now();
  engine.backward(batch.at("input_ids"), gradLogits,
                  mask == batch.end() ? nullptr : &mask->second);
  const double ms = std::chrono::duration<double, std::milli>(
                        std::chrono::steady_clock::now() - start)
                        .count();
  // The accumulators hold this one call's gradients (f32; with an f16
  // bundle, times the loss scale, as step() expects them).
  NamedTensors out;
  const std::string prefix = "opt.grad.";
  for (size_t i = 0; i < engine.states().size(); ++i) {
    const std::string &name = engine.states().desc(i).name;
    if (name.rfind(prefix, 0) == 0)
      out["grad." + name.substr(prefix.size())] = hostCopy(engine, name);
  }
  writeSafeTensors(outPath, out,
                   {{"producer", "hybrid-run backward"},
                    {"bundle", bundlePath},
                    {"weights", weightsPath}});
  std::fprintf(stderr, "hybrid-run: backward: %zu gradients, %.2f ms\n",
               out.size(), ms);
  return 0;
}

//===----------------------------------------------------------------------===//
// train
//===----------------------------------------------------------------------===//

/// Rows [first, first + n) of a [rows, ...] tensor, wrapping around.
HostTensor rowsOf(const HostTensor &t, int64_t first, int64_t n) {
  Shape shape = t.shape();
  const int64_t rows = shape[0];
  shape[0] = n;
  HostTensor out = HostTensor::allocate(t.dtype(), shape);
  const size_t rowBytes = t.bytes() / static_cast<size_t>(rows);
  for (int64_t r = 0; r < n; ++r)
    std::memcpy(static_cast<uint8_t *>(out.data()) + r * rowBytes,
                static_cast<const uint8_t *>(t.data()) +
                    ((first + r) % rows) * rowBytes,
                rowBytes);
  return out;
}

int runTrain(int argc, char **argv) {
  Args args = parseArgs("train", argc, argv, 2,
                        {"--weights", "--config", "--data", "--steps", "--save",
                         "--resume", "--threads", "--allow-extra", "--device"});
  expectPositional(args, 1, "train", "a BUNDLE");
  const std::string &bundlePath = args.positional[0];
  const std::string resumeDir = args.single("--resume").value_or("");
  if (!resumeDir.empty() && args.single("--weights"))
    throw UsageError{"train: give --weights or --resume, not both"};
  const std::string weightsPath = resumeDir.empty()
                                      ? args.required("--weights", "train")
                                      : resumeDir + "/model.safetensors";
  const std::string configPath = args.required("--config", "train");
  const std::string dataPath = args.required("--data", "train");
  const int64_t steps =
      parsePositiveInt(args.required("--steps", "train"), "--steps");
  const std::string saveDir = args.single("--save").value_or("");

  // The configuration first: its mistakes are the cheapest to report.
  std::ifstream configFile(configPath);
  if (!configFile)
    throw Error(configPath + ": cannot read the configuration");
  std::stringstream text;
  text << configFile.rdbuf();
  std::vector<std::string> unknown;
  TrainConfig config;
  try {
    config = parseTrainConfig(text.str(), &unknown);
  } catch (const Error &e) {
    throw Error(configPath + ": " + e.what());
  }
  for (const std::string &key : unknown)
    std::fprintf(stderr,
                 "hybrid-run: warning: %s: unknown key '%s' (ignored)\n",
                 configPath.c_str(), escapeControlCharacters(key).c_str());
  if (config.zeroStage > 0)
    std::fprintf(stderr,
                 "hybrid-run: zero_optimization.stage %lld on one rank: "
                 "nothing to partition, trained as stage 0\n",
                 static_cast<long long>(config.zeroStage));
  SafeTensorsFile data = SafeTensorsFile::open(dataPath);
  const SafeTensorsEntry *ids = data.find("input_ids");
  if (!ids ||
      (ids->dtype != SafeTensorsDType::I64 &&
       ids->dtype != SafeTensorsDType::I32) ||
      ids->shape.size() != 2)
    throw Error(dataPath + ": needs input_ids, int64 [sequences, seq]");
  HostTensor tokens = data.toHost(*ids, DType::I64);
  std::optional<HostTensor> mask;
  if (const SafeTensorsEntry *m = data.find("attention_mask"))
    mask = data.toHost(*m, DType::I64);
  const int64_t sequences = tokens.shape()[0], seq = tokens.shape()[1];
  if (sequences < config.microBatchSize)
    throw Error(dataPath + ": " + std::to_string(sequences) +
                " sequences, fewer than one micro-batch (" +
                std::to_string(config.microBatchSize) + ")");

  auto [bundle, engine] = openForTraining(
      args, "train", bundlePath, "forward_backward", "training executables");
  try {
    checkTrainConfig(config, trainPlanOf(*bundle));
  } catch (const Error &e) {
    throw Error(configPath + ": " + e.what() + " (" + bundlePath + ")");
  }
  engine.loadWeights(weightsPath, allowedExtraOf(args));
  // Resuming: the optimizer's state as saved; the schedule continues from
  // its step count (steps applied) and the data from the steps run, so the
  // run goes on as if never stopped.
  int64_t first = 0, applied = 0;
  if (resumeDir.empty()) {
    engine.initOptimizer(config.optimizer.lossScale);
  } else {
    const std::string path = resumeDir + "/optimizer.safetensors";
    SafeTensorsFile saved = SafeTensorsFile::open(path);
    for (const SafeTensorsEntry &e : saved.entries()) {
      const std::string &name = e.name;
      if (!engine.states().find(name))
        throw Error(path + ": state '" + name + "' is not this bundle's");
      HostTensor host = saved.toHost(
          e, engine.states().desc(*engine.states().find(name)).dtype);
      engine.allocateState(name, host.shape());
      DeviceTensor t = engine.state(name);
      Device &device = engine.device();
      device.copyHostToDevice(t.data, host.data(), host.bytes(),
                              device.defaultStream());
      device.synchronize(device.defaultStream());
      if (name == "opt.step")
        applied = static_cast<int64_t>(host.as<float>()[0]);
    }
    // Skipped steps (fp16 overflows) ran without counting as applied.
    first = applied;
    if (auto it = saved.metadata().find("global_steps");
        it != saved.metadata().end()) {
      char *end = nullptr;
      const long long n = std::strtoll(it->second.c_str(), &end, 10);
      if (it->second.empty() || *end || n < applied)
        throw Error(path + ": global_steps '" +
                    escapeControlCharacters(it->second) +
                    "' is not a step count of at least opt.step (" +
                    std::to_string(applied) + ")");
      first = n;
    }
  }

  // The next sequence, cycling through the data (where step `first` takes
  // it up).
  int64_t next = first * config.trainBatchSize % sequences;
  for (int64_t step = first; step < first + steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    double loss = 0;
    for (int64_t k = 0; k < config.gradientAccumulationSteps; ++k) {
      HostTensor batch = rowsOf(tokens, next, config.microBatchSize);
      HostTensor batchMask;
      if (mask)
        batchMask = rowsOf(*mask, next, config.microBatchSize);
      next = (next + config.microBatchSize) % sequences;
      loss += engine.forwardBackward(batch, mask ? &batchMask : nullptr);
    }
    // As DeepSpeed, a skipped step does not advance the schedule.
    StepConfig optimizer = config.optimizer;
    optimizer.lr = static_cast<float>(
        learningRate(config.scheduler, config.optimizer.lr, applied));
    StepResult r = engine.step(optimizer);
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    const long long shown = step + 1, last = first + steps;
    if (r.overflow) {
      // DeepSpeed's "OVERFLOW! Skipping step. Attempted loss scale: ..."
      char change[128];
      const LossScaleConfig &l = config.optimizer.lossScale;
      if (!l.dynamic)
        std::snprintf(change, sizeof change, "static loss scale %.0f",
                      r.lossScale);
      else if (r.nextLossScale < r.lossScale)
        std::snprintf(change, sizeof change, "loss scale %.0f -> %.0f",
                      r.lossScale, r.nextLossScale);
      else
        std::snprintf(change, sizeof change,
                      "loss scale %.0f kept, hysteresis %lld -> %lld",
                      r.lossScale, static_cast<long long>(r.hysteresisLeft + 1),
                      static_cast<long long>(r.hysteresisLeft));
      std::fprintf(stderr,
                   "hybrid-run: train step %lld/%lld: overflow: skipped "
                   "step, %s\n",
                   shown, last, change);
      continue;
    }
    ++applied;
    if (shown % config.stepsPerPrint == 0 || step == first || shown == last) {
      char scale[48] = "";
      if (r.lossScale > 0)
        std::snprintf(scale, sizeof scale, ", loss scale %.0f", r.lossScale);
      std::fprintf(stderr,
                   "hybrid-run: train step %lld/%lld: loss %.6f, lr %.3g, "
                   "grad norm %.4g%s, %.1f ms, %.0f tokens/s\n",
                   shown, last, loss / config.gradientAccumulationSteps,
                   optimizer.lr, r.gradNorm, scale, ms,
                   config.trainBatchSize * seq / (ms / 1000));
    }
  }
  if (!saveDir.empty()) {
    ::mkdir(saveDir.c_str(), 0755);
    engine.weights().saveSafeTensors(saveDir + "/model.safetensors");
    // The optimizer's state (moments, masters, loss scale, step count),
    // for resuming.
    NamedTensors state;
    for (size_t i = 0; i < engine.states().size(); ++i) {
      const std::string &name = engine.states().desc(i).name;
      if (name.rfind("opt.", 0) != 0 || name.rfind("opt.grad.", 0) == 0 ||
          !engine.states().allocated(name))
        continue;
      state[name] = hostCopy(engine, name);
    }
    writeSafeTensors(saveDir + "/optimizer.safetensors", state,
                     {{"producer", "hybrid-run train"},
                      {"global_steps", std::to_string(first + steps)}});
    std::fprintf(stderr,
                 "hybrid-run: saved %s/model.safetensors and "
                 "%s/optimizer.safetensors\n",
                 saveDir.c_str(), saveDir.c_str());
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// ppo-step
//===----------------------------------------------------------------------===//

/// The largest value `symbol` may take in executable `exe` of `bundle`; 0
/// when it is unbounded or absent.
int64_t symbolLimitOf(const BundleDesc &bundle, const std::string &exe,
                      const std::string &symbol) {
  for (const ExecutableDesc &e : bundle.executables)
    if (e.name == exe)
      for (size_t i = 0; i < e.symbols.size(); ++i)
        if (e.symbols[i] == symbol)
          return e.symbolMax[i];
  return 0;
}

/// What one PPO-shaped step cost, phase by phase (each between device
/// synchronisations).
struct PpoStepCost {
  PhaseCost total, generate, train, switches; // switches: eval() + train()
  int64_t newTokens = 0;                      // per row
  float loss = 0;                             // mean over the micro-batches
};

int runPpoStep(int argc, char **argv) {
  std::set<std::string> switches;
  std::vector<char *> rest = takeSwitches(
      argc, argv, {"--release-cache", "--no-cuda-graph"}, switches);
  Args args = parseArgs(
      "ppo-step", static_cast<int>(rest.size()), rest.data(), 2,
      {"--random-weights", "--batch", "--prompt-len", "--new-tokens",
       "--micro-batch", "--repeat", "--seed", "--lr", "--device", "--threads"});
  expectPositional(args, 1, "ppo-step", "a BUNDLE");
  const std::string &bundlePath = args.positional[0];
  if (!args.single("--random-weights"))
    throw UsageError{"ppo-step: times random weights: give --random-weights "
                     "SEED"};
  const uint64_t weightSeed = static_cast<uint64_t>(
      parseNonNegative(*args.single("--random-weights"), "--random-weights"));
  auto count = [&](const char *flag, long dflt) {
    std::optional<std::string> v = args.single(flag);
    return static_cast<int64_t>(v ? parsePositiveInt(*v, flag) : dflt);
  };
  // The anchor's shape (../shared/bench/anchor_ppo_step_h200.py).
  const int64_t batch = count("--batch", 32),
                prompt = count("--prompt-len", 256),
                newTokens = count("--new-tokens", 256),
                microBatch = count("--micro-batch", 8),
                repeat = count("--repeat", 1);
  if (batch % microBatch != 0)
    throw UsageError{"ppo-step: --batch " + std::to_string(batch) +
                     " is not a multiple of --micro-batch " +
                     std::to_string(microBatch)};
  const uint64_t sampleSeed = static_cast<uint64_t>(
      parseNonNegative(args.single("--seed").value_or("0"), "--seed"));
  const double lr =
      parseNonNegative(args.single("--lr").value_or("1e-6"), "--lr");
  const bool releaseCache = switches.count("--release-cache");

  auto [bundle, engine] = openEngine(args, "ppo-step", bundlePath);
  std::vector<std::string> missing;
  if (!engine.hasExecutable("prefill") || !engine.hasExecutable("decode"))
    missing.push_back("prefill/decode executables (compile the model without "
                      "--no-generate)");
  if (!engine.hasExecutable("forward_backward") ||
      !engine.hasExecutable("step"))
    missing.push_back("training executables (compile the model with hybridc "
                      "--train)");
  if (!missing.empty())
    throw Error(bundlePath + ": no " + missing[0] +
                (missing.size() > 1 ? " and no " + missing[1] : ""));
  // The sequences must fit the model's positions: the KV cache's and the
  // training pass's.
  const int64_t positions = prompt + newTokens;
  for (auto [exe, symbol] :
       {std::pair<const char *, const char *>{"prefill", "cap"},
        {"forward_backward", "seq"}}) {
    const int64_t limit = symbolLimitOf(*bundle, exe, symbol);
    if (limit > 0 && positions > limit)
      throw Error("ppo-step: --prompt-len " + std::to_string(prompt) +
                  " + --new-tokens " + std::to_string(newTokens) + " = " +
                  std::to_string(positions) + " positions; the model has " +
                  std::to_string(limit) + " (" + bundlePath + ")");
  }

  engine.initRandom(weightSeed);
  engine.initOptimizer();
  // The latency line every eval() writes is not this command's output.
  engine.setLog([](const std::string &) {});
  const HostTensor prompts =
      syntheticInputs(*bundle, batch, prompt).at("input_ids");
  GenerateConfig sampling;
  sampling.greedy = false; // temperature 1, no top-k / top-p
  sampling.maxNewTokens = sampling.minNewTokens = newTokens;
  sampling.eosTokenId = -1; // no early stop
  sampling.cudaGraph = !switches.count("--no-cuda-graph");
  sampling.releaseInferenceCache = releaseCache;
  StepConfig optimizer;
  optimizer.optimizer = trainPlanOf(*bundle).optimizer;
  optimizer.lr = static_cast<float>(lr);
  Device &device = engine.device();

  // eval(), generate, the [batch, prompt + new] sequences, train(), the
  // micro-batches' forward + backward, one optimizer step.
  auto ppoStep = [&](uint64_t seed) {
    PpoStepCost c;
    c.total = measurePhase(device, [&] {
      c.switches += measurePhase(device, [&] { engine.eval(); });
      GenerateResult generated;
      c.generate = measurePhase(device, [&] {
        sampling.seed = seed;
        generated = engine.generate(prompts, nullptr, sampling);
      });
      c.newTokens = generated.steps;
      const HostTensor sequences = concatColumns(prompts, generated.tokens);
      c.switches += measurePhase(device, [&] { engine.train(); });
      c.train = measurePhase(device, [&] {
        double loss = 0;
        for (int64_t first = 0; first < batch; first += microBatch)
          loss += engine.forwardBackward(rowsOf(sequences, first, microBatch));
        engine.step(optimizer);
        c.loss = static_cast<float>(loss / (batch / microBatch));
      });
    });
    return c;
  };
  // A warm-up step (GEMM plans, the decode graph's capture, first
  // allocations), then the timed ones, each sampling anew.
  std::vector<PpoStepCost> steps;
  for (int64_t i = 0; i <= repeat; ++i) {
    steps.push_back(ppoStep(sampleSeed + static_cast<uint64_t>(i)));
    if (i == 0) // the table covers timed steps only
      engine.device().resetProfile();
  }
  uint64_t switchBytes = 0;
  for (const PpoStepCost &c : steps)
    switchBytes = std::max(switchBytes,
                           c.switches.bytesAllocated + c.switches.bytesCopied);
  std::vector<PpoStepCost> timed(steps.begin() + 1, steps.end());
  std::sort(timed.begin(), timed.end(),
            [](const PpoStepCost &a, const PpoStepCost &b) {
              return a.total.seconds < b.total.seconds;
            });
  const PpoStepCost &median = timed[timed.size() / 2];
  const std::string on = device.name() == "cpu" ? "" : " on " + device.name();
  std::fprintf(
      stderr,
      "hybrid-run: ppo-step %s%s: batch %lld, prompt %lld, new %lld, "
      "micro-batch %lld: step %.3f s (generate %.3f s, train %.3f s, switch "
      "%.3f ms, switch bytes %llu); generate %.0f tok/s; loss %.4f -> %.4f; "
      "peak %.3f GiB (median of %lld steps%s)\n",
      modelNameOf(*bundle).c_str(), on.c_str(), static_cast<long long>(batch),
      static_cast<long long>(prompt), static_cast<long long>(median.newTokens),
      static_cast<long long>(microBatch), median.total.seconds,
      median.generate.seconds, median.train.seconds,
      median.switches.seconds * 1000,
      static_cast<unsigned long long>(switchBytes),
      static_cast<double>(batch * median.newTokens) / median.generate.seconds,
      static_cast<double>(steps.front().loss),
      static_cast<double>(steps.back().loss), peakGiB(device),
      static_cast<long long>(repeat),
      releaseCache ? ", KV cache released for training" : "");
  return 0;
}

int main(int argc, char **argv) {
  try {
    if (argc < 2)
      throw UsageError{"no subcommand (forward, generate, train-step, "
                       "backward, train, ppo-step, compare or info; "
                       "see 'hybrid-run --help')"};
    std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    for (int i = 2; i < argc; ++i)
      if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      }
    if (cmd == "forward")
      return runForward(argc, argv);
    if (cmd == "generate")
      return runGenerate(argc, argv);
    if (cmd == "train-step")
      return runTrainStep(argc, argv);
    if (cmd == "train")
      return runTrain(argc, argv);
    if (cmd == "ppo-step")
      return runPpoStep(argc, argv);
    if (cmd == "backward")
      return runBackward(argc, argv);
    if (cmd == "compare")
      return runCompare(argc, argv);
    if (cmd == "info")
      return runInfo(argc, argv);
    throw UsageError{"unknown subcommand '" + cmd +
                     "' (forward, generate, train-step, backward, train, "
                     "ppo-step, compare or info; see 'hybrid-run --help')"};
  } catch (const UsageError &e) {
    std::fprintf(stderr, "hybrid-run: error: %s\n",
                 escapeControlCharacters(e.message).c_str());
    return 2;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "hybrid-run: error: out of memory\n");
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "hybrid-run: error: %s\n",
                 escapeControlCharacters(e.what()).c_str());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "hybrid-run: error: unexpected failure\n");
    return 1;
  }
}
