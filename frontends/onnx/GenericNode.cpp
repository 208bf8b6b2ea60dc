// GenericNode: typed access to an ONNX node's attributes.
#include "frontends/onnx/GenericNode.h"

#include <onnx/onnx_pb.h>

namespace hybridc::onnx {

using ::onnx::AttributeProto;

GenericNode::GenericNode(const ::onnx::NodeProto &proto, std::string name,
                         int64_t opset)
    : proto_(proto), name_(std::move(name)), opset_(opset) {}

llvm::StringRef GenericNode::opType() const { return proto_.op_type(); }
llvm::StringRef GenericNode::domain() const { return proto_.domain(); }
size_t GenericNode::numInputs() const { return proto_.input_size(); }
llvm::StringRef GenericNode::input(size_t i) const { return proto_.input(i); }
size_t GenericNode::numOutputs() const { return proto_.output_size(); }
llvm::StringRef GenericNode::output(size_t i) const { return proto_.output(i); }

const AttributeProto *GenericNode::find(llvm::StringRef attr) const {
  for (const AttributeProto &a : proto_.attribute())
    if (a.name() == attr)
      return &a;
  return nullptr;
}

llvm::Error GenericNode::error(const llvm::Twine &msg) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "node '" + name_ + "' (" + opType() +
                                     "): " + msg);
}

static const char *attrTypeName(int type) {
  switch (type) {
  case AttributeProto::FLOAT:
    return "float";
  case AttributeProto::INT:
    return "int";
  case AttributeProto::STRING:
    return "string";
  case AttributeProto::TENSOR:
    return "tensor";
  case AttributeProto::FLOATS:
    return "floats";
  case AttributeProto::INTS:
    return "ints";
  case AttributeProto::GRAPH:
    return "graph";
  default:
    return "other";
  }
}

/// An attribute's declared type, or one inferred from its filled field for
/// old models that leave `type` unset.
static int attrType(const AttributeProto &a) {
  if (a.type() != AttributeProto::UNDEFINED)
    return a.type();
  if (a.has_f())
    return AttributeProto::FLOAT;
  if (a.has_i())
    return AttributeProto::INT;
  if (a.has_s())
    return AttributeProto::STRING;
  if (a.has_t())
    return AttributeProto::TENSOR;
  if (a.floats_size())
    return AttributeProto::FLOATS;
  if (a.ints_size())
    return AttributeProto::INTS;
  return AttributeProto::UNDEFINED;
}

template <typename Fn>
static llvm::Error readAttr(const GenericNode &node, const AttributeProto *a,
                            int expected, Fn &&read) {
  if (!a)
    return llvm::Error::success();
  int type = attrType(*a);
  if (type != expected)
    return node.error("attribute '" + a->name() + "' is " + attrTypeName(type) +
                      ", expected " + attrTypeName(expected));
  read(*a);
  return llvm::Error::success();
}

llvm::Error GenericNode::getInt(llvm::StringRef attr, int64_t dflt,
                                int64_t &out) const {
  out = dflt;
  return readAttr(*this, find(attr), AttributeProto::INT,
                  [&](const AttributeProto &a) { out = a.i(); });
}

llvm::Error GenericNode::getFloat(llvm::StringRef attr, double dflt,
                                  double &out) const {
  out = dflt;
  return readAttr(*this, find(attr), AttributeProto::FLOAT,
                  [&](const AttributeProto &a) { out = a.f(); });
}

llvm::Error GenericNode::getString(llvm::StringRef attr, llvm::StringRef dflt,
                                   std::string &out) const {
  out = dflt.str();
  return readAttr(*this, find(attr), AttributeProto::STRING,
                  [&](const AttributeProto &a) { out = a.s(); });
}

llvm::Error GenericNode::getInts(llvm::StringRef attr,
                                 std::vector<int64_t> &out) const {
  out.clear();
  const AttributeProto *a = find(attr);
  // An empty list has no filled field to infer its type from.
  if (a && a->type() == AttributeProto::UNDEFINED && !a->ints_size())
    return llvm::Error::success();
  return readAttr(*this, a, AttributeProto::INTS, [&](const AttributeProto &a) {
    out.assign(a.ints().begin(), a.ints().end());
  });
}

llvm::Error GenericNode::getFloats(llvm::StringRef attr,
                                   std::vector<double> &out) const {
  out.clear();
  const AttributeProto *a = find(attr);
  if (a && a->type() == AttributeProto::UNDEFINED && !a->floats_size())
    return llvm::Error::success();
  return readAttr(*this, a, AttributeProto::FLOATS,
                  [&](const AttributeProto &a) {
                    out.assign(a.floats().begin(), a.floats().end());
                  });
}

llvm::Expected<const ::onnx::TensorProto *>
GenericNode::getTensor(llvm::StringRef attr) const {
  const ::onnx::TensorProto *out = nullptr;
  if (llvm::Error e = readAttr(*this, find(attr), AttributeProto::TENSOR,
                               [&](const AttributeProto &a) { out = &a.t(); }))
    return std::move(e);
  return out;
}

} // namespace hybridc::onnx
