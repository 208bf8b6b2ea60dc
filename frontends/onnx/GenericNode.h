// A generic, op-agnostic view of one ONNX node: its type, name, opset,
// value names and typed attribute access. Conversions read nodes only
// through it.
#pragma once

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnx {
class NodeProto;
class AttributeProto;
class TensorProto;
} // namespace onnx

namespace hybridc::onnx {

class GenericNode {
public:
  /// `name` is the node's name, or a made-up one when the model has none;
  /// `opset` is the model's opset for the node's domain.
  GenericNode(const ::onnx::NodeProto &proto, std::string name, int64_t opset);

  llvm::StringRef opType() const;
  llvm::StringRef domain() const;
  llvm::StringRef name() const { return name_; }
  int64_t opset() const { return opset_; }

  /// Input and output names; an empty name is an omitted optional value.
  size_t numInputs() const;
  llvm::StringRef input(size_t i) const;
  bool hasInput(size_t i) const { return i < numInputs() && !input(i).empty(); }
  size_t numOutputs() const;
  llvm::StringRef output(size_t i) const;
  bool hasOutput(size_t i) const {
    return i < numOutputs() && !output(i).empty();
  }

  bool hasAttr(llvm::StringRef attr) const { return find(attr) != nullptr; }
  /// Typed attribute reads: `out` gets the attribute's value, or `dflt`
  /// when the node does not carry it; a wrong attribute type is an error.
  llvm::Error getInt(llvm::StringRef attr, int64_t dflt, int64_t &out) const;
  llvm::Error getFloat(llvm::StringRef attr, double dflt, double &out) const;
  llvm::Error getString(llvm::StringRef attr, llvm::StringRef dflt,
                        std::string &out) const;
  llvm::Error getInts(llvm::StringRef attr, std::vector<int64_t> &out) const;
  llvm::Error getFloats(llvm::StringRef attr, std::vector<double> &out) const;
  /// Null when absent.
  llvm::Expected<const ::onnx::TensorProto *>
  getTensor(llvm::StringRef attr) const;

  /// "node 'name' (OpType): " + msg, as one error.
  llvm::Error error(const llvm::Twine &msg) const;

  const ::onnx::NodeProto &proto() const { return proto_; }

private:
  const ::onnx::AttributeProto *find(llvm::StringRef attr) const;

  const ::onnx::NodeProto &proto_;
  std::string name_;
  int64_t opset_;
};

} // namespace hybridc::onnx
