// What several ONNX conversions read from a node alike: an axis normalised
// against a rank, inputs of a required element kind, and the `axes` list
// that moved from an attribute to an input between opsets.
#pragma once

#include "frontends/onnx/GenericNode.h"
#include "frontends/onnx/GraphImporter.h"
#include "frontends/onnx/TensorValue.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace hybridc::onnx {

/// `axis` in [-rank, rank) as an index in [0, rank); an error naming the
/// node when it is out of range.
llvm::Expected<int64_t> normalizeAxis(const GenericNode &node, int64_t axis,
                                      int64_t rank);
/// The `axis` attribute (`defaultAxis` when absent), normalised against
/// `rank`.
llvm::Expected<int64_t> readAxis(const GenericNode &node, int64_t defaultAxis,
                                 int64_t rank);

/// Input `i`, which must be a float tensor.
llvm::Expected<const TensorValue *>
floatInput(GraphImporter &imp, const GenericNode &node, size_t i);
/// Input `i`, which must not be a bool tensor; `what` names the operation
/// in the error ("<what> of a bool tensor is not supported").
llvm::Expected<const TensorValue *> numericInput(GraphImporter &imp,
                                                 const GenericNode &node,
                                                 size_t i,
                                                 llvm::StringRef what);

/// Constant axes from the `axes` attribute before opset `inputSince`, from
/// input 1 (none when it is omitted) from that opset on.
llvm::Expected<std::vector<int64_t>>
axesOf(GraphImporter &imp, const GenericNode &node, int64_t inputSince);

} // namespace hybridc::onnx
