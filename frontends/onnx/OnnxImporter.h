// ONNX frontend: imports an .onnx model into an hg module (@forward).
#pragma once

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace hybridc::onnx {

struct OnnxImportOptions {
  /// Float initializers with more elements than this become parameters
  /// (function arguments tagged hg.param with the initializer name); smaller
  /// ones and all integer/bool initializers are folded in as constants.
  int64_t maxConstantElements = 1;
  /// When set, receives the external data files the import read (ONNX
  /// external data, beside the model).
  std::vector<std::string> *externalDataFiles = nullptr;
  /// The model is compiled for training: warn (MLIR warnings at the file's
  /// location) about parameters that will not train as they did in
  /// PyTorch (see attributeExportedParameters).
  bool training = false;
};

/// Reads `path` and builds `func.func @forward` in hg. A model exported by
/// torch.onnx (dynamo=True) gets its parameters from the exporter's
/// metadata (ExportedParameters.h): one per PyTorch parameter, named by its
/// target, even where the exporter merged equal initializers; buffers and
/// folded constants are constants. The module's "hg.param_sources"
/// dictionary then maps each parameter whose initializer has another name
/// to that initializer. Without that metadata every float initializer of
/// more than maxConstantElements elements is a parameter: the importer
/// cannot tell merged parameters from tied ones, and says nothing. Errors
/// (unreadable or corrupt file, unsupported op with its type, node name and
/// opset) come back as one-line llvm::Error messages; nothing aborts. Tensors
/// saved as external data are read from their files beside the model
/// (constants) or left for the runtime to bind (parameters), after checking
/// every reference as the runtime does (hybrid/OnnxExternalData.h).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef path,
                const OnnxImportOptions &options = {});

/// The ONNX op types (default domain) the conversion table handles, sorted.
/// The ONNX node-test runner runs every node test made only of these ops.
std::vector<std::string> supportedOnnxOps();

} // namespace hybridc::onnx
