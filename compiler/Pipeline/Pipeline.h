// The compilation pipeline as a list of named phases:
//   import  -> the hg module as the frontend built it
//   hg      -> after canonicalisation and fusion (what both lowerings start
//   from) bundle  -> the lowered executables and parameter table
// Tools can stop after any phase to print its result.
#pragma once

#include "hybrid/BundleDesc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace hybridc {

enum class Phase { Import, Hg, Bundle };

struct CompileOptions {
  bool fuse = true; ///< run the fusion passes (off: only canonicalise)
};

/// Imports `path`: an .onnx file, a folder (or config.json) of a HuggingFace
/// model, or an hg module in MLIR text (.mlir). `inputFiles`, when given,
/// receives the files the import read (the model file or config.json, and
/// ONNX external data files), which an output must not replace.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importModel(mlir::MLIRContext &context, const std::string &path,
            std::vector<std::string> *inputFiles = nullptr);

/// Canonicalises and fuses the hg module in place.
llvm::Error runHgPipeline(mlir::ModuleOp module, const CompileOptions &options);

/// Lowers every function of the module to an executable of one bundle.
llvm::Expected<hybrid::BundleDesc> lowerToBundle(mlir::ModuleOp module);

} // namespace hybridc
