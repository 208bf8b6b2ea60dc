// The versioned table of ONNX-to-hg conversions: (op type, since-version)
// -> handler. A model at opset N uses, for each op, the handler registered
// with the newest since-version <= N; an op (or an opset older than any
// registered version) without one is unsupported.
#pragma once

#include "frontends/onnx/GenericNode.h"
#include "frontends/onnx/GraphImporter.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"

#include <map>
#include <string>
#include <vector>

namespace hybridc::onnx {

/// Converts one node: reads its inputs from the importer, emits hg (or
/// folds), and defines its outputs. Version differences within a family
/// are handled inside the handler via node.opset().
using ConversionFn = llvm::Error (*)(GraphImporter &, const GenericNode &);

class ConversionTable {
public:
  /// Registers `fn` for `opType` from `sinceVersion` on.
  void add(llvm::StringRef opType, int sinceVersion, ConversionFn fn);
  /// Registers `fn` for each listed since-version.
  void add(llvm::StringRef opType, std::initializer_list<int> sinceVersions,
           ConversionFn fn);
  /// The handler for `opType` at `opset`, or null.
  ConversionFn lookup(llvm::StringRef opType, int64_t opset) const;
  /// Sorted op types with at least one handler.
  std::vector<std::string> opTypes() const;

  /// The table with every conversion of the frontend, built once.
  static const ConversionTable &get();

private:
  llvm::StringMap<std::map<int, ConversionFn>> handlers_;
};

// One registration function per op family (one .cpp each).
void registerElementwiseConversions(ConversionTable &table);
void registerShapeConversions(ConversionTable &table);
void registerTensorConversions(ConversionTable &table);
void registerNnConversions(ConversionTable &table);

} // namespace hybridc::onnx
