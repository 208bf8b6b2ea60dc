// hybridc: compiles a model (ONNX file or HF config folder) into a .hyb bundle.
#include "compiler/InitAll.h"
#include "compiler/Pipeline/Pipeline.h"
#include "frontends/hf/HfImporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "hybrid/Bundle.h"
#include "hybrid/Escape.h"
#include "hybrid/FileIdentity.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr const char *kUsage =
    "usage: hybridc compile MODEL -o OUT.hyb [options]\n"
    "       hybridc compile MODEL --compile-to=PHASE\n"
    "       hybridc supported      (ONNX ops and HF model types it takes)\n"
    "       hybridc --help | --version\n"
    "\n"
    "MODEL is an .onnx file, a folder holding a HuggingFace config.json, or\n"
    "a module in MLIR text (.mlir): hg (e.g. edited --compile-to=hg output)\n"
    "is compiled from its start, hrt is serialised (planned first if it has\n"
    "no memory plan yet).\n"
    "\n"
    "phases: import (the frontend's hg), hg (after fusion), hrt (lowered,\n"
    "memory planned), bundle (the command lists).\n"
    "\n"
    "options:\n"
    "  -o FILE                write the bundle to FILE\n"
    "  --compile-to=PHASE     stop after PHASE and print its result\n"
    "                         (bundle: a summary of every command)\n"
    "  --emit=PHASE           the same (hg, hrt or bundle)\n"
    "  --dtype=TYPE           float type of an HF config model's weights and\n"
    "                         activations: float32, bfloat16 or float16\n"
    "                         (default: the config's torch_dtype)\n"
    "  --no-fuse              skip the fusion passes (canonicalise only;\n"
    "                         also hrt-group-linears and\n"
    "                         hrt-fold-kv-appends)\n"
    "  --norm-prologues       fold @decode's layer/rms norms into the\n"
    "                         linears they feed (hg-fuse-norm-prologues;\n"
    "                         fewer launches, measured slower for now)\n"
    "  --generate             require @prefill/@decode (KV-cache generation)\n"
    "                         for a language model; by default they are\n"
    "                         added when the model can decode one token at a\n"
    "                         time, else a warning says why not\n"
    "  --no-generate          compile @forward only (no @prefill/@decode)\n"
    "  --train                also the training executables of a language\n"
    "                         model: @forward_loss (HF's causal-LM loss),\n"
    "                         @forward_loss_grad, @train_step (AdamW),\n"
    "                         @forward_backward and @step (accumulation),\n"
    "                         @backward (a custom loss's gradient w.r.t.\n"
    "                         the logits into the same accumulators)\n"
    "  --optimizer=NAME       the training update: adamw (default) or sgd\n"
    "                         (with momentum); bf16/f16 weights train\n"
    "                         through f32 master copies, f16 with dynamic\n"
    "                         loss scaling\n"
    "  --zero-stage N         ZeRO stage for data parallelism (default 0):\n"
    "                         0 all-reduces gradients, 1 also shards the\n"
    "                         optimizer state, 2 the gradients, 3 the\n"
    "                         parameters (gathered before each use)\n"
    "  --world-size W         ranks the bundle runs on (default 1: no\n"
    "                         collectives); the runtime runs world size 1\n"
    "  --prefetch-bucket-size N\n"
    "                         stage 3: parameter elements gathered ahead of\n"
    "                         use (default 5e7, DeepSpeed's\n"
    "                         stage3_prefetch_bucket_size)\n"
    "  --max-reuse-distance N stage 3: keep a gathered parameter for a use\n"
    "                         within N elements of other parameters (default\n"
    "                         1e9, DeepSpeed's stage3_max_reuse_distance)\n"
    "  -q, --quiet            no summary line\n";

int usageError(const std::string &msg) {
  std::fprintf(stderr, "hybridc: error: %s (try 'hybridc --help')\n",
               hybrid::escapeControlCharacters(msg).c_str());
  return 2;
}

/// Error diagnostics printed so far: a phase that fails after reporting
/// its errors needs no line of its own (every error is one line).
int diagnosticErrors = 0;

int fail(const std::string &msg) {
  std::fprintf(stderr, "hybridc: error: %s\n",
               hybrid::escapeControlCharacters(msg).c_str());
  return 1;
}

/// A failed phase: its own line only when no diagnostic said why.
int failPhase(llvm::Error e) {
  std::string msg = llvm::toString(std::move(e));
  return diagnosticErrors ? 1 : fail(msg);
}

/// `text` as a whole number in [min, max] (digits only, or an exponent
/// form like 5e7 with an integral value).
std::optional<int64_t> parseCount(const std::string &text, int64_t min,
                                  int64_t max) {
  if (text.empty() || text.size() > 20)
    return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    if (text.size() > 18)
      return std::nullopt;
    int64_t v = std::stoll(text);
    return v >= min && v <= max ? std::optional<int64_t>(v) : std::nullopt;
  }
  if (text.find_first_not_of("0123456789.eE+") != std::string::npos)
    return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (*end || !(v >= static_cast<double>(min)) ||
      !(v <= static_cast<double>(max)) || v != static_cast<int64_t>(v))
    return std::nullopt;
  return static_cast<int64_t>(v);
}

std::string formatBytes(double b) {
  const char *units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", b, units[u]);
  return buf;
}

int runHybridc(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty())
    return usageError("no command given");
  if (args[0] == "--help" || args[0] == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "--version") {
    std::puts("hybridc 0.1.0");
    return 0;
  }
  if (args[0] == "supported") {
    std::printf("ONNX ops (default domain):");
    for (const std::string &op : hybridc::onnx::supportedOnnxOps())
      std::printf(" %s", op.c_str());
    std::printf("\nHF model_type:");
    for (llvm::StringRef t : hybridc::hf::supportedModelTypes())
      std::printf(" %s", t.str().c_str());
    std::printf("\n");
    return 0;
  }
  if (args[0] != "compile")
    return usageError("unknown command '" + args[0] + "'");

  std::string model, out;
  hybridc::Phase stopAfter = hybridc::Phase::Bundle;
  bool printResult = false, quiet = false, optimizerGiven = false;
  hybridc::CompileOptions options;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string &a = args[i];
    // `--name VALUE` or `--name=VALUE`; an empty string when VALUE is
    // missing (the option's check reports it).
    auto valueOf = [&](const std::string &name) -> std::optional<std::string> {
      if (a == name)
        return i + 1 < args.size() ? args[++i] : std::string();
      if (a.rfind(name + "=", 0) == 0)
        return a.substr(name.size() + 1);
      return std::nullopt;
    };
    auto missing = [&](const std::string &name) {
      return usageError(name + " needs a value");
    };
    auto phaseOf = [&](const std::string &v, hybridc::Phase &p) {
      std::optional<hybridc::Phase> phase = hybridc::parsePhase(v);
      if (phase)
        p = *phase;
      return phase.has_value();
    };
    // Options that take a count in [lo, hi].
    struct CountOption {
      const char *name;
      int64_t lo, hi;
      const char *expected;
      int64_t *dest;
    };
    const CountOption counts[] = {
        {"--zero-stage", 0, 3, "0, 1, 2 or 3", &options.zeroStage},
        {"--world-size", 1, int64_t(1) << 20,
         "a number of ranks from 1 to 2^20", &options.worldSize},
        {"--prefetch-bucket-size", 0, int64_t(1) << 62,
         "a number of elements >= 0", &options.prefetchBucketSize},
        {"--max-reuse-distance", 0, int64_t(1) << 62,
         "a number of elements >= 0", &options.maxReuseDistance}};
    const CountOption *count = nullptr;
    std::optional<std::string> countValue;
    for (const CountOption &c : counts)
      if ((countValue = valueOf(c.name))) {
        count = &c;
        break;
      }
    if (count) {
      if (countValue->empty())
        return missing(count->name);
      std::optional<int64_t> n = parseCount(*countValue, count->lo, count->hi);
      if (!n)
        return usageError(std::string(count->name) + " must be " +
                          count->expected + ", got '" + *countValue + "'");
      *count->dest = *n;
      continue;
    }
    if (a == "-o") {
      if (i + 1 >= args.size())
        return usageError("-o needs a file name");
      out = args[++i];
    } else if (a.rfind("--emit=", 0) == 0) {
      if (!phaseOf(a.substr(7), stopAfter) ||
          stopAfter == hybridc::Phase::Import)
        return usageError("unknown --emit value '" + a.substr(7) +
                          "' (expected hg, hrt or bundle)");
      printResult = true;
    } else if (a.rfind("--compile-to=", 0) == 0) {
      if (!phaseOf(a.substr(13), stopAfter))
        return usageError("unknown phase '" + a.substr(13) +
                          "' (expected import, hg, hrt or bundle)");
      printResult = true;
    } else if (a.rfind("--dtype=", 0) == 0) {
      options.dtype = a.substr(8);
      if (options.dtype.empty())
        return usageError("--dtype needs a type (float32, bfloat16, float16)");
    } else if (a == "--no-generate") {
      options.generation = hybridc::CompileOptions::Generation::Off;
    } else if (a == "--generate") {
      options.generation = hybridc::CompileOptions::Generation::On;
    } else if (a == "--train") {
      options.train = true;
    } else if (a.rfind("--optimizer=", 0) == 0) {
      const std::string name = a.substr(12);
      if (name == "adamw")
        options.optimizer = hybridc::CompileOptions::Optimizer::AdamW;
      else if (name == "sgd")
        options.optimizer = hybridc::CompileOptions::Optimizer::Sgd;
      else
        return usageError("unknown --optimizer '" + name +
                          "' (expected adamw or sgd)");
      optimizerGiven = true;
    } else if (a == "--no-fuse") {
      options.fuse = false;
    } else if (a == "--norm-prologues") {
      options.normPrologues = true;
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'");
    } else if (model.empty()) {
      model = a;
    } else {
      return usageError("unexpected argument '" + a + "'");
    }
  }
  if (model.empty())
    return usageError("no MODEL given");
  if (optimizerGiven && !options.train)
    return usageError("--optimizer applies to --train");
  if (!printResult && out.empty())
    return usageError("no output file given (-o OUT.hyb)");

  mlir::DialectRegistry registry;
  hybridc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // One line per diagnostic: "hybridc: warning: <location>: <message>".
  mlir::ScopedDiagnosticHandler diagnostics(&context, [](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++diagnosticErrors;
    const char *sev =
        d.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
        : d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
                                                               : "note";
    std::string loc;
    llvm::raw_string_ostream os(loc);
    d.getLocation().print(os);
    std::fprintf(stderr, "hybridc: %s: %s: %s\n", sev,
                 hybrid::escapeControlCharacters(os.str()).c_str(),
                 hybrid::escapeControlCharacters(d.str()).c_str());
    return mlir::success();
  });

  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> inputFiles;
  auto module = hybridc::importModel(context, model, options, &inputFiles);
  if (!module)
    return failPhase(module.takeError());
  // Writing the bundle over the model (or its external data) would destroy
  // it; compare by file identity, so other spellings and symlinks count.
  for (const std::string &input : inputFiles)
    if (!out.empty() && hybrid::isSameFile(input, out))
      return usageError("-o " + out + " is the model being compiled (" + input +
                        "); choose another output file");
  bool hrtInput = hybridc::isHrtModule(module->get());
  if (hrtInput && stopAfter < hybridc::Phase::Hrt)
    return usageError(model + " is an hrt module: it can only go on to the "
                              "hrt or bundle phase");
  if (hrtInput && options.worldSize != 1)
    return usageError("--world-size applies to a model; " + model +
                      " is an hrt module (partition it with hybridc-opt "
                      "--hrt-zero-partition)");
  if (!hrtInput) {
    if (stopAfter == hybridc::Phase::Import) {
      module->get().print(llvm::outs());
      return 0;
    }
    if (llvm::Error e = hybridc::runHgPipeline(module->get(), options))
      return failPhase(std::move(e));
    if (stopAfter == hybridc::Phase::Hg) {
      module->get().print(llvm::outs());
      return 0;
    }
  }
  if (!hrtInput && options.train) {
    if (!hybridc::isLanguageModel(module->get()))
      return fail("--train: @forward is not a language model (int64 "
                  "input_ids [batch, seq] -> logits [batch, seq, vocab])");
    if (llvm::Error e = hybridc::runTrainPipeline(module->get(), options))
      return failPhase(std::move(e));
  }
  using Generation = hybridc::CompileOptions::Generation;
  if (!hrtInput && options.generation != Generation::Off) {
    bool languageModel = hybridc::isLanguageModel(module->get());
    if (!languageModel && options.generation == Generation::On)
      return fail("--generate: @forward is not a language model (int64 "
                  "input_ids [batch, seq] -> logits [batch, seq, vocab])");
    std::string declined;
    if (languageModel)
      if (llvm::Error e = hybridc::runGenerationPipeline(
              module->get(), options,
              options.generation == Generation::Auto ? &declined : nullptr))
        return failPhase(std::move(e));
    if (!declined.empty())
      std::fprintf(stderr,
                   "hybridc: warning: no prefill/decode executables (the "
                   "bundle has forward only; --generate makes this an "
                   "error, --no-generate skips the attempt): %s\n",
                   hybrid::escapeControlCharacters(declined).c_str());
  }
  if (llvm::Error e = hybridc::runHrtPipeline(module->get(), options))
    return failPhase(std::move(e));
  if (stopAfter == hybridc::Phase::Hrt) {
    module->get().print(llvm::outs());
    return 0;
  }
  auto bundle = hybridc::lowerToBundle(module->get());
  if (!bundle)
    return fail(llvm::toString(bundle.takeError()));

  size_t paramBytes = 0;
  for (const auto &p : bundle->params)
    paramBytes += hybrid::numElements(p.shape) * hybrid::dtypeSize(p.dtype);
  std::string summary =
      bundle->model + ": " + std::to_string(bundle->params.size()) +
      " parameters (" + formatBytes(static_cast<double>(paramBytes)) + ")";
  if (bundle->worldSize > 1)
    summary += ", ZeRO stage " + std::to_string(bundle->zeroStage) + " over " +
               std::to_string(bundle->worldSize) + " ranks";
  for (const auto &exe : bundle->executables)
    summary += ", " + exe.name + ": " + std::to_string(exe.commands.size()) +
               " commands, workspace " + exe.workspaceBytes.str(exe.symbols) +
               " bytes";
  summary = hybrid::escapeControlCharacters(summary);
  if (printResult) {
    std::printf("%s\n", summary.c_str());
    for (const auto &exe : bundle->executables)
      for (const auto &cmd : exe.commands)
        std::printf("  %s %s\n", hybrid::opName(cmd.op).c_str(),
                    hybrid::escapeControlCharacters(cmd.loc).c_str());
    if (out.empty())
      return 0;
  }
  try {
    hybrid::writeBundle(*bundle, out);
  } catch (const hybrid::Error &e) {
    return fail(e.what());
  }
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!quiet)
    std::fprintf(stderr, "hybridc: compiled %s in %.0f ms -> %s\n",
                 summary.c_str(), ms,
                 hybrid::escapeControlCharacters(out).c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  // Whatever the input, the user sees one error line, never an abort: running
  // out of memory on a huge model is a std::bad_alloc from deep inside, and
  // an op a pass builds wrongly is an LLVM fatal error (a compiler bug, but
  // still one line and exit status 1, after the diagnostics that led to it).
  llvm::install_fatal_error_handler(
      [](void *, const char *reason, bool) {
        std::fprintf(stderr, "hybridc: error: internal error: %s\n",
                     hybrid::escapeControlCharacters(reason).c_str());
        std::fflush(stderr);
        std::_Exit(1);
      },
      nullptr);
  try {
    return runHybridc(argc, argv);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  } catch (...) {
    return fail("unexpected failure");
  }
}
