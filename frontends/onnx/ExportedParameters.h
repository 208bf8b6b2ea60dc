// Parameter identity in models exported by torch.onnx (dynamo=True): which
// PyTorch parameter each use of an initializer really reads, recovered from
// the exporter's metadata, so that training updates what PyTorch would.
#pragma once

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
} // namespace onnx

namespace hybridc::onnx {

/// One parameter of the import: an argument of @forward the runtime binds
/// from the initializer `source` (which equals `name` unless the exporter
/// merged several parameters into one initializer), or, when `source` is
/// empty, a bias the exporter dropped for being zero: zeros of `shape`.
struct ExportedParameter {
  std::string name;
  std::string source;
  std::vector<int64_t> shape; ///< only for a dropped bias
};

/// What attributeExportedParameters found and changed.
struct ExportedParameterTable {
  /// In order of first use.
  std::vector<ExportedParameter> params;
  /// Value names the graph now reads that must be defined as constants
  /// from an initializer's data (the key), when that initializer is also
  /// a parameter under its own name: alias -> initializer.
  llvm::StringMap<std::string> constantAliases;
  /// PARAMETER targets the graph's nodes name but that no initializer
  /// holds any more and that could not be restored (the exporter's
  /// optimizer folded them away): they are not trained.
  std::vector<std::string> foldedAway;
};

/// The exporter's metadata, when present:
///  * the graph's metadata_props "pkg.torch.export.ExportedProgram.
///    graph_signature" lists every placeholder of the exported program,
///    "p_m_x_weight: PARAMETER target='m.x.weight'" (also BUFFER,
///    CONSTANT_TENSOR, USER_INPUT);
///  * each node's metadata_props "pkg.torch.onnx.fx_node" is the text of
///    the FX node it was lowered from, naming the placeholders that node
///    reads ("... layer_norm.default](args = (%x, [64], %p_m_ln_2_weight,
///    %p_m_ln_2_bias, 1e-05, False) ...");
///  * a value_info's metadata_props "pkg.onnxscript.optimizer.folded_from"
///    lists what a constant-folded initializer was computed from.
///
/// The exporter names a parameter's initializer by its target, but merges
/// initializers of equal value (every LayerNorm's ones and zeros become one)
/// and may fold a parameter into a new initializer (a transposed weight,
/// named val_N, folded from the parameter alone). For every node input that
/// reads a float initializer with more than `maxConstantElements` elements
/// (what the importer would make a parameter), this decides what the use
/// reads, matching the ONNX nodes lowered from one FX node (same fx_node
/// text) against the placeholders that FX node names:
///  1. an initializer that is a placeholder's own (named by its target, or
///     folded from that target alone) binds to it;
///  2. the remaining initializer uses pair, in input order, with the
///     remaining placeholders in argument order, leaving out placeholders
///     whose own initializer exists elsewhere; the counts must agree
///     (ONNX keeps aten's operand order: LayerNormalization(X, Scale, B)
///     for layer_norm(x, shape, weight, bias)), except that an FX node with
///     no placeholder left reads initializers folded from no parameter as
///     the computed constants they are (Llama's rotary table).
/// A parameter the exporter dropped is restored where that is certain: a
/// Gemm without C, lowered from an aten.addmm / aten.linear FX node whose
/// one placeholder left without a tensor is a PARAMETER, computed
/// bias + A*B with a bias of zeros (that is why the optimizer dropped it);
/// the bias becomes C again, a parameter of zeros of shape [N] (a linear
/// layer's bias; PyTorch trains it, so the import must). Other parameters
/// left without a tensor are listed in `foldedAway`.
///
/// A use bound to a PARAMETER reads the parameter named by its target
/// (source: the initializer read); one folded from a parameter alone stays
/// the parameter of that initializer's name: the parameter transformed,
/// which the metadata does not name; torch.onnx folds the Transpose of a
/// linear weight, and AdamW, elementwise, trains a permutation of the
/// elements as PyTorch trains the original (a fold that scaled them would
/// not). A use bound to anything else (a buffer, a constant), or an
/// initializer folded from no parameter, reads a constant. Node inputs
/// are renamed to the parameter (or constant alias) they read. Tied
/// parameters stay one: the exporter already reads one placeholder for
/// both uses.
///
/// Returns std::nullopt, changing nothing, when the model has no graph
/// signature (another exporter: every such initializer is a parameter, as
/// before). Errors (nothing changed) say which node and initializer the
/// metadata leaves ambiguous or contradicts. `warn` receives one-line
/// notes (uses without fx_node metadata, which read their initializer's
/// own parameter; a parameter read as itself and folded, which trains as
/// two tensors); `foldedAway` is for the caller to report.
llvm::Expected<std::optional<ExportedParameterTable>>
attributeExportedParameters(
    ::onnx::ModelProto &model, int64_t maxConstantElements,
    const std::function<void(const std::string &)> &warn);

} // namespace hybridc::onnx
