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
};

/// Reads `path` and builds `func.func @forward` in hg. Errors (unreadable or
/// corrupt file, unsupported op with its type, node name and opset) come
/// back as one-line llvm::Error messages; nothing aborts. Tensors saved as
/// external data are read from their files beside the model (constants) or
/// left for the runtime to bind (parameters), after checking every
/// reference as the runtime does (hybrid/OnnxExternalData.h).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef path,
                const OnnxImportOptions &options = {});

/// The ONNX op types (default domain) the conversion table handles, sorted.
/// The ONNX node-test runner runs every node test made only of these ops.
std::vector<std::string> supportedOnnxOps();

} // namespace hybridc::onnx
