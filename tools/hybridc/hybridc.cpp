// hybridc: compiles a model (ONNX file, HF config folder or MLIR module) into
// a .hyb bundle. A thin main: llvm::cl parses the command line, and
// compiler/Pipeline/Compile.h does the work.
#include "Options.h"
#include "compiler/InitAll.h"
#include "compiler/Pipeline/Compile.h"
#include "compiler/Version.h"
#include "frontends/hf/HfImporter.h"
#include "frontends/onnx/OnnxImporter.h"
#include "hybrid/Bundle.h"
#include "hybrid/Escape.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <optional>
#include <string>

namespace {

using namespace hybridc::tool;
using hybridc::CompileOptions;
using hybridc::Phase;

cl::SubCommand
    supportedCommand("supported",
                     "The ONNX ops and HuggingFace model types hybridc takes");
cl::extrahelp modelHelp(R"(
MODEL is an .onnx file, a folder holding a HuggingFace config.json, or a
module in MLIR text (.mlir): hg (e.g. edited --compile-to=hg output) is
compiled from its start, hrt is serialised (planned first if it has no
memory plan yet). Every option of compile takes its value as --name VALUE
or --name=VALUE.
)");

// The options of `hybridc compile`.
cl::list<std::string> models(cl::Positional, cl::desc("MODEL"), inCompile);
cl::opt<std::string> output("o", cl::desc("Write the bundle to FILE"),
                            cl::value_desc("FILE"), inCompile);
cl::opt<Phase, false, NamedValueParser<Phase>> compileTo(
    "compile-to", cl::desc("Stop after PHASE and print its result"),
    cl::value_desc("PHASE"),
    cl::values(clEnumValN(Phase::Import, "import", "the frontend's hg"),
               clEnumValN(Phase::Hg, "hg", "after fusion"),
               clEnumValN(Phase::Hrt, "hrt", "lowered, memory planned"),
               clEnumValN(Phase::Bundle, "bundle",
                          "a summary of every command")),
    inCompile);
cl::opt<Phase, false, NamedValueParser<Phase>>
    emit("emit", cl::desc("The same as --compile-to (hg, hrt or bundle)"),
         cl::value_desc("PHASE"),
         cl::values(clEnumValN(Phase::Hg, "hg", ""),
                    clEnumValN(Phase::Hrt, "hrt", ""),
                    clEnumValN(Phase::Bundle, "bundle", "")),
         inCompile);
cl::opt<std::string> dtype(
    "dtype",
    cl::desc("Float type of an HF config model's weights and activations: "
             "float32, bfloat16 or float16 (default: the config's "
             "torch_dtype)"),
    cl::value_desc("TYPE"), inCompile);
cl::opt<CompileOptions::Head, false, NamedValueParser<CompileOptions::Head>>
    head("head",
         cl::desc("What an HF config model ends in (default causal-lm); "
                  "value: DeepSpeed-Chat's critic / reward model, the base "
                  "model (AutoModel's parameter names) and v_head.weight "
                  "[1, hidden], @forward returning values [batch, seq] and "
                  "scores [batch] (the value at each row's last token); no "
                  "@prefill/@decode, and --train adds @backward from "
                  "grad_values and @step"),
         cl::value_desc("HEAD"),
         cl::values(clEnumValN(CompileOptions::Head::CausalLm, "causal-lm",
                               "the LM head: logits"),
                    clEnumValN(CompileOptions::Head::Value, "value",
                               "v_head: values and scores")),
         inCompile);
cl::opt<bool> noFuse("no-fuse",
                     cl::desc("Skip the fusion passes (canonicalise only; "
                              "also hrt-group-linears and "
                              "hrt-fold-kv-appends)"),
                     inCompile);
cl::opt<bool> normPrologues(
    "norm-prologues",
    cl::desc("Fold @decode's layer/rms norms into the linears they feed "
             "(hg-fuse-norm-prologues; fewer launches, measured slower)"),
    inCompile);
// Each value is a flag of its own, registered where the option is when
// cl::values comes: inCompile first.
cl::opt<CompileOptions::Generation> generation(
    inCompile,
    cl::desc("KV-cache generation (@prefill, @decode) of a language model; "
             "by default added when the model can decode one token at a "
             "time, else a warning says why not:"),
    cl::values(clEnumValN(CompileOptions::Generation::On, "generate",
                          "require it"),
               clEnumValN(CompileOptions::Generation::Off, "no-generate",
                          "compile @forward only")),
    cl::init(CompileOptions::Generation::Auto));
cl::opt<bool>
    train("train",
          cl::desc("Also the training executables of a language model: "
                   "@forward_loss (HF's causal-LM loss), @forward_loss_grad, "
                   "@train_step, @forward_backward and @step (accumulation), "
                   "@backward (a custom loss's gradient w.r.t. the logits)"),
          inCompile);
cl::opt<CompileOptions::Optimizer, false,
        NamedValueParser<CompileOptions::Optimizer>>
    optimizer("optimizer",
              cl::desc("The training update; bf16/f16 weights train through "
                       "f32 master copies, f16 with dynamic loss scaling"),
              cl::value_desc("NAME"),
              cl::values(clEnumValN(CompileOptions::Optimizer::AdamW, "adamw",
                                    "AdamW (default)"),
                         clEnumValN(CompileOptions::Optimizer::Sgd, "sgd",
                                    "SGD with momentum")),
              inCompile);
cl::opt<Count> zeroStage(
    "zero-stage",
    cl::desc("ZeRO stage for data parallelism (default 0): 0 all-reduces "
             "gradients, 1 also shards the optimizer state, 2 the "
             "gradients, 3 the parameters (gathered before each use)"),
    cl::value_desc("N"), Range{0, 3, "0, 1, 2 or 3"},
    cl::init(Count{CompileOptions().zeroStage}), inCompile);
cl::opt<Count> worldSize(
    "world-size",
    cl::desc("Ranks the bundle runs on (default 1: no collectives); the "
             "runtime runs world size 1"),
    cl::value_desc("W"),
    Range{1, int64_t(1) << 20, "a number of ranks from 1 to 2^20"},
    cl::init(Count{CompileOptions().worldSize}), inCompile);
cl::opt<Count> prefetchBucketSize(
    "prefetch-bucket-size",
    cl::desc("Stage 3: parameter elements gathered ahead of use (default "
             "5e7, DeepSpeed's stage3_prefetch_bucket_size)"),
    cl::value_desc("N"),
    Range{0, int64_t(1) << 62, "a number of elements >= 0"},
    cl::init(Count{CompileOptions().prefetchBucketSize}), inCompile);
cl::opt<Count> maxReuseDistance(
    "max-reuse-distance",
    cl::desc("Stage 3: keep a gathered parameter for a use within N "
             "elements of other parameters (default 1e9, DeepSpeed's "
             "stage3_max_reuse_distance)"),
    cl::value_desc("N"),
    Range{0, int64_t(1) << 62, "a number of elements >= 0"},
    cl::init(Count{CompileOptions().maxReuseDistance}), inCompile);
cl::opt<bool> quiet("quiet", cl::desc("No summary line (also -q)"), inCompile);
cl::alias quietShort("q", cl::desc("Alias for --quiet"), cl::aliasopt(quiet));

int usageError(const std::string &msg) {
  std::fprintf(stderr, "hybridc: error: %s (try 'hybridc --help')\n",
               hybrid::escapeControlCharacters(msg).c_str());
  return 2;
}

int fail(const std::string &msg) {
  std::fprintf(stderr, "hybridc: error: %s\n",
               hybrid::escapeControlCharacters(msg).c_str());
  return 1;
}

/// llvm::cl's first error line as one of hybridc's: "hybridc: Unknown
/// command line argument '--x'.  Try: '...'" -> "unknown command line
/// argument '--x'".
std::string clError(llvm::StringRef errors, llvm::StringRef program) {
  llvm::StringRef line = errors.split('\n').first;
  line.consume_front(program);
  line.consume_front(": ");
  std::string msg = line.split(".  Try:").first.str();
  if (!msg.empty())
    msg[0] = static_cast<char>(std::tolower(msg[0]));
  return msg;
}

/// Parses argv; an exit status when hybridc is done (a usage error), else
/// nullopt. --help and --version exit inside.
std::optional<int> parseArguments(int argc, char **argv) {
  cl::HideUnrelatedOptions(compileCategory());
  cl::HideUnrelatedOptions(compileCategory(), compileCommand());
  cl::HideUnrelatedOptions(compileCategory(), supportedCommand);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "hybridc " << hybridc::kVersion << "\n";
  });
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "hybridc: compiles a model into a .hyb bundle of training and "
          "inference executables\n",
          &errorStream)) {
    // llvm::cl prints a missing value's error itself (one line).
    if (!parseError().empty())
      return usageError(parseError());
    if (!errors.empty())
      return usageError(clError(errors, llvm::sys::path::filename(argv[0])));
    return 2;
  }
  if (!compileCommand() && !supportedCommand)
    return usageError("no command given");
  if (supportedCommand)
    return std::nullopt;
  if (models.empty())
    return usageError("no MODEL given");
  if (models.size() > 1)
    return usageError("unexpected argument '" + models[1] + "'");
  if (dtype.getNumOccurrences() && dtype.empty())
    return usageError("--dtype needs a type (float32, bfloat16, float16)");
  if (optimizer.getNumOccurrences() && !train)
    return usageError("--optimizer applies to --train");
  if (std::optional<std::string> error = rlhfOptionsError(train))
    return usageError(*error);
  if (std::optional<std::string> error = loraOptionsError(train))
    return usageError(*error);
  if (!compileTo.getNumOccurrences() && !emit.getNumOccurrences() &&
      output.empty())
    return usageError("no output file given (-o OUT.hyb)");
  return std::nullopt;
}

int printSupported() {
  std::printf("ONNX ops (default domain):");
  for (const std::string &op : hybridc::onnx::supportedOnnxOps())
    std::printf(" %s", op.c_str());
  std::printf("\nHF model_type:");
  for (llvm::StringRef t : hybridc::hf::supportedModelTypes())
    std::printf(" %s", t.str().c_str());
  std::printf("\n");
  return 0;
}

hybridc::CompileRequest compileRequest() {
  hybridc::CompileRequest request;
  request.model = models[0];
  request.output = output;
  // The later of --compile-to and --emit.
  if (compileTo.getNumOccurrences() || emit.getNumOccurrences())
    request.last = compileTo.getPosition() > emit.getPosition()
                       ? compileTo.getValue()
                       : emit.getValue();
  CompileOptions &options = request.options;
  options.fuse = !noFuse;
  options.generation = generation;
  options.train = train;
  options.optimizer = optimizer;
  applyRlhfOptions(options);
  applyLoraOptions(options);
  options.zeroStage = zeroStage.getValue().value;
  options.worldSize = worldSize.getValue().value;
  options.prefetchBucketSize = prefetchBucketSize.getValue().value;
  options.maxReuseDistance = maxReuseDistance.getValue().value;
  options.dtype = dtype;
  options.head = head;
  options.normPrologues = normPrologues;
  return request;
}

int runCompile() {
  hybridc::CompileRequest request = compileRequest();
  bool printResult = compileTo.getNumOccurrences() || emit.getNumOccurrences();
  mlir::DialectRegistry registry;
  hybridc::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  context.loadAllAvailableDialects();
  // One line per diagnostic: "hybridc: warning: <location>: <message>".
  mlir::ScopedDiagnosticHandler diagnostics(&context, [](mlir::Diagnostic &d) {
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
  auto compiled =
      hybridc::compile(context, request, [](const llvm::Twine &warning) {
        std::fprintf(stderr, "hybridc: warning: %s\n",
                     hybrid::escapeControlCharacters(warning.str()).c_str());
      });
  if (!compiled) {
    int status = 1;
    llvm::handleAllErrors(
        compiled.takeError(),
        [&](const hybridc::CompileError &e) {
          if (e.kind() == hybridc::CompileError::Kind::Usage)
            status = usageError(e.message());
        },
        [&](const llvm::ErrorInfoBase &e) { status = fail(e.message()); });
    return status;
  }
  if (!compiled->bundle) {
    // --compile-to=import|hg|hrt: the module's text, into -o when given.
    if (request.output.empty()) {
      compiled->module->print(llvm::outs());
      return 0;
    }
    std::error_code ec;
    llvm::raw_fd_ostream file(request.output, ec);
    if (ec)
      return fail(request.output + ": cannot write: " + ec.message());
    compiled->module->print(file);
    file.close();
    if (file.has_error())
      return fail(request.output + ": cannot write: " + file.error().message());
    return 0;
  }
  const hybrid::BundleDesc &bundle = *compiled->bundle;
  std::string summary =
      hybrid::escapeControlCharacters(hybridc::summarizeBundle(bundle));
  if (printResult) {
    std::printf("%s\n", summary.c_str());
    for (const auto &exe : bundle.executables)
      for (const auto &cmd : exe.commands)
        std::printf("  %s %s\n", hybrid::opName(cmd.op).c_str(),
                    hybrid::escapeControlCharacters(cmd.loc).c_str());
    if (request.output.empty())
      return 0;
  }
  try {
    hybrid::writeBundle(bundle, request.output);
  } catch (const hybrid::Error &e) {
    return fail(e.what());
  }
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (!quiet)
    std::fprintf(stderr, "hybridc: compiled %s in %.0f ms -> %s\n",
                 summary.c_str(), ms,
                 hybrid::escapeControlCharacters(request.output).c_str());
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
    if (std::optional<int> status = parseArguments(argc, argv))
      return *status;
    return supportedCommand ? printSupported() : runCompile();
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &e) {
    return fail(e.what());
  } catch (...) {
    return fail("unexpected failure");
  }
}