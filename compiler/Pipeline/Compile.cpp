// hybridc compile as a library call (see Compile.h): the phases in order,
// with the checks between them that need the module.
#include "compiler/Pipeline/Compile.h"

#include "hybrid/FileIdentity.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>

namespace hybridc {

char CompileError::ID;

namespace {

llvm::Error usageError(const llvm::Twine &message) {
  return llvm::make_error<CompileError>(CompileError::Kind::Usage,
                                        message.str());
}

llvm::Error failure(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
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

} // namespace

llvm::Expected<CompileResult>
compile(mlir::MLIRContext &context, const CompileRequest &request,
        llvm::function_ref<void(const llvm::Twine &)> warn) {
  const CompileOptions &options = request.options;
  // Counted on the way to the caller's handler: a phase that fails after
  // reporting its errors needs no message of its own.
  int errors = 0;
  mlir::ScopedDiagnosticHandler count(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error)
      ++errors;
    return mlir::failure();
  });
  auto phaseFailed = [&](llvm::Error e) -> llvm::Error {
    if (!errors)
      return e;
    return llvm::make_error<CompileError>(CompileError::Kind::Diagnosed,
                                          llvm::toString(std::move(e)));
  };

  CompileResult result;
  std::vector<std::string> inputFiles;
  auto module = importModel(context, request.model, options, &inputFiles);
  if (!module)
    return phaseFailed(module.takeError());
  result.module = std::move(*module);
  mlir::ModuleOp op = result.module.get();
  // Writing the bundle over the model (or its external data) would destroy
  // it; compare by file identity, so other spellings and symlinks count.
  for (const std::string &input : inputFiles)
    if (!request.output.empty() && hybrid::isSameFile(input, request.output))
      return usageError("-o " + request.output +
                        " is the model being compiled (" + input +
                        "); choose another output file");
  bool hrtInput = isHrtModule(op);
  if (hrtInput && request.last < Phase::Hrt)
    return usageError(request.model + " is an hrt module: it can only go on "
                                      "to the hrt or bundle phase");
  if (hrtInput && options.worldSize != 1)
    return usageError("--world-size applies to a model; " + request.model +
                      " is an hrt module (partition it with hybridc-opt "
                      "--hrt-zero-partition)");
  if (!hrtInput) {
    if (request.last == Phase::Import)
      return std::move(result);
    if (llvm::Error e = runHgPipeline(op, options))
      return phaseFailed(std::move(e));
    if (request.last == Phase::Hg)
      return std::move(result);
    // The order of buildCompilePipeline. The head is the module's: an .mlir
    // input of a value model has one too.
    const bool valueModel = isValueModel(op);
    if (options.train) {
      if (!isLanguageModel(op) && !valueModel)
        return failure("--train: @forward is neither a language model (int64 "
                       "input_ids [batch, seq] -> logits [batch, seq, "
                       "vocab]) nor a value model (-> values [batch, seq])");
      if (options.reward && !valueModel)
        return failure("--reward: @forward is not a value model (compile "
                       "with --head value)");
      CompileOptions train = options;
      train.head = valueModel ? CompileOptions::Head::Value
                              : CompileOptions::Head::CausalLm;
      if (llvm::Error e = runTrainPipeline(op, train))
        return phaseFailed(std::move(e));
    }
    using Generation = CompileOptions::Generation;
    if (valueModel && options.generation == Generation::On)
      return failure("--generate: a value model (--head value) has no logits "
                     "to generate from");
    if (options.generation != Generation::Off && !valueModel) {
      bool languageModel = isLanguageModel(op);
      if (!languageModel && options.generation == Generation::On)
        return failure("--generate: @forward is not a language model (int64 "
                       "input_ids [batch, seq] -> logits [batch, seq, "
                       "vocab])");
      std::string declined;
      if (languageModel)
        if (llvm::Error e = runGenerationPipeline(
                op, options,
                options.generation == Generation::Auto ? &declined : nullptr))
          return phaseFailed(std::move(e));
      if (!declined.empty())
        warn("no prefill/decode executables (the bundle has forward only; "
             "--generate makes this an error, --no-generate skips the "
             "attempt): " +
             declined);
    }
  }
  if (llvm::Error e = runHrtPipeline(op, options))
    return phaseFailed(std::move(e));
  if (request.last == Phase::Hrt)
    return std::move(result);
  auto bundle = lowerToBundle(op);
  if (!bundle)
    return bundle.takeError();
  result.bundle = std::move(*bundle);
  return std::move(result);
}

std::string summarizeBundle(const hybrid::BundleDesc &bundle) {
  size_t paramBytes = 0;
  for (const auto &p : bundle.params)
    paramBytes += hybrid::numElements(p.shape) * hybrid::dtypeSize(p.dtype);
  std::string summary = bundle.model + ": " +
                        std::to_string(bundle.params.size()) + " parameters (" +
                        formatBytes(static_cast<double>(paramBytes)) + ")";
  if (bundle.worldSize > 1)
    summary += ", ZeRO stage " + std::to_string(bundle.zeroStage) + " over " +
               std::to_string(bundle.worldSize) + " ranks";
  for (const auto &exe : bundle.executables)
    summary += ", " + exe.name + ": " + std::to_string(exe.commands.size()) +
               " commands, workspace " + exe.workspaceBytes.str(exe.symbols) +
               " bytes";
  return summary;
}

} // namespace hybridc
