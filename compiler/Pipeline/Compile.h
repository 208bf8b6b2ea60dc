// hybridc compile as a library call: a model in, its module after any phase
// or its bundle out. The CLI is a thin parser over this.
#pragma once

#include "compiler/Pipeline/Pipeline.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>

namespace hybridc {

/// A failure that is more than its message (other failures of compile()
/// are plain string errors).
class CompileError : public llvm::ErrorInfo<CompileError> {
public:
  enum class Kind {
    /// A mistake in the request rather than in the model: an input that
    /// cannot go on to the phase asked for, an output file that is the
    /// model. hybridc reports it as a usage error.
    Usage,
    /// A phase failed after error diagnostics said why: the message adds
    /// nothing for the user.
    Diagnosed,
  };
  static char ID;
  CompileError(Kind kind, std::string message)
      : kind_(kind), message_(std::move(message)) {}
  Kind kind() const { return kind_; }
  void log(llvm::raw_ostream &os) const override { os << message_; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

private:
  Kind kind_;
  std::string message_;
};

struct CompileRequest {
  /// An .onnx file, a HuggingFace folder or config.json, or an .mlir module
  /// (hg, or hrt to serialise): see importModel.
  std::string model;
  CompileOptions options;
  /// The phase to stop after.
  Phase last = Phase::Bundle;
  /// The bundle file the caller will write, if any: refused when it is a
  /// file the import reads.
  std::string output;
};

struct CompileResult {
  /// The module after `last` (for Bundle: the planned hrt module).
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// When `last` is Bundle.
  std::optional<hybrid::BundleDesc> bundle;
};

/// Imports the model and runs the phases up to `request.last`: hg, then the
/// training lowering (options.train), the generation lowering (by
/// options.generation; in Auto mode a model it cannot take is no error, and
/// `warn` says why), hrt and the bundle. Diagnostics go to the context's
/// handler; see CompileError for the failures that are more than a
/// message.
llvm::Expected<CompileResult>
compile(mlir::MLIRContext &context, const CompileRequest &request,
        llvm::function_ref<void(const llvm::Twine &)> warn);

/// One line: the model, its parameters and their size, the ZeRO layout,
/// and each executable's commands and workspace.
std::string summarizeBundle(const hybrid::BundleDesc &bundle);

} // namespace hybridc
