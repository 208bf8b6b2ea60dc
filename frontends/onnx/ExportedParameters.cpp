// attributeExportedParameters: reads torch.onnx's graph signature, fx_node
// and folded_from metadata and gives each initializer use the parameter it
// reads (see ExportedParameters.h).
#include "frontends/onnx/ExportedParameters.h"

#include "hybrid/OnnxElementTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MathExtras.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/unknown_field_set.h>
#include <onnx/onnx_pb.h>

#include <map>

namespace hybridc::onnx {
namespace {

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// The field number of metadata_props in each message (ONNX 1.16 added it
/// to NodeProto, ValueInfoProto and GraphProto; older ONNX libraries keep
/// it as an unknown field).
constexpr int kNodeMetadata = 9;
constexpr int kValueInfoMetadata = 4;
constexpr int kGraphMetadata = 16;

/// The metadata_props entries of `m` (field `number`), whether this ONNX
/// library knows the field or not.
std::vector<std::pair<std::string, std::string>>
metadataProps(const google::protobuf::Message &m, int number) {
  std::vector<std::pair<std::string, std::string>> props;
  const google::protobuf::Reflection *reflection = m.GetReflection();
  const google::protobuf::FieldDescriptor *field =
      m.GetDescriptor()->FindFieldByNumber(number);
  if (field && field->is_repeated() &&
      field->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
    for (int i = 0, n = reflection->FieldSize(m, field); i < n; ++i) {
      ::onnx::StringStringEntryProto e;
      if (e.ParseFromString(
              reflection->GetRepeatedMessage(m, field, i).SerializeAsString()))
        props.emplace_back(e.key(), e.value());
    }
    return props;
  }
  const google::protobuf::UnknownFieldSet &unknown =
      reflection->GetUnknownFields(m);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &f = unknown.field(i);
    if (f.number() != number ||
        f.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    ::onnx::StringStringEntryProto e;
    if (e.ParseFromString(f.length_delimited()))
      props.emplace_back(e.key(), e.value());
  }
  return props;
}

std::optional<std::string> metadataValue(const google::protobuf::Message &m,
                                         int number, llvm::StringRef key) {
  for (auto &[k, v] : metadataProps(m, number))
    if (k == key)
      return v;
  return std::nullopt;
}

/// A placeholder of the exported program: its kind (PARAMETER, BUFFER,
/// CONSTANT_TENSOR, USER_INPUT, ...) and target (the module attribute).
struct Placeholder {
  std::string kind;
  std::string target;
};

/// Parses the "# inputs" lines of the graph signature:
/// "NAME: KIND target='TARGET' ..." (USER_INPUT has no target).
llvm::StringMap<Placeholder> parseSignature(llvm::StringRef text) {
  llvm::StringMap<Placeholder> placeholders;
  bool inputs = false;
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n');
  for (llvm::StringRef line : lines) {
    line = line.trim();
    if (line.starts_with("#")) {
      inputs = line == "# inputs";
      continue;
    }
    auto [name, rest] = line.split(": ");
    if (!inputs || name.empty() || rest.empty())
      continue;
    Placeholder p;
    p.kind = rest.take_until([](char c) { return c == ' '; }).str();
    size_t t = rest.find("target='");
    if (t != llvm::StringRef::npos) {
      llvm::StringRef target = rest.drop_front(t + 8);
      p.target = target.take_until([](char c) { return c == '\''; }).str();
    }
    placeholders[name] = std::move(p);
  }
  return placeholders;
}

/// The %names an FX node's text reads, in order, once each (the node's own
/// name, before " = ", left out).
std::vector<std::string> fxOperands(llvm::StringRef text) {
  size_t eq = text.find(" = ");
  if (eq != llvm::StringRef::npos)
    text = text.drop_front(eq + 3);
  std::vector<std::string> names;
  for (size_t i = text.find('%'); i != llvm::StringRef::npos;
       i = text.find('%', i + 1)) {
    llvm::StringRef name = text.drop_front(i + 1).take_while([](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
    if (!name.empty() && !llvm::is_contained(names, name))
      names.push_back(name.str());
  }
  return names;
}

/// The quoted names of a Python list's text: "['a', 'b']" -> a, b.
std::vector<std::string> pythonStrings(llvm::StringRef text) {
  std::vector<std::string> out;
  while (true) {
    size_t open = text.find('\'');
    if (open == llvm::StringRef::npos)
      return out;
    size_t close = text.find('\'', open + 1);
    if (close == llvm::StringRef::npos)
      return out;
    out.push_back(text.slice(open + 1, close).str());
    text = text.drop_front(close + 1);
  }
}

/// What one initializer use reads.
struct Binding {
  std::string name;       ///< parameter, or constant alias
  bool parameter = false; ///< else a constant
  std::string source;     ///< the initializer read
};

class Attribution {
public:
  Attribution(::onnx::ModelProto &model, int64_t maxConstantElements,
              const std::function<void(const std::string &)> &warn)
      : graph_(*model.mutable_graph()),
        maxConstantElements_(maxConstantElements), warn_(warn) {}

  llvm::Expected<std::optional<ExportedParameterTable>> run();

private:
  bool isWeight(const ::onnx::TensorProto &t) const;
  void findIdentities();
  llvm::Error bindGroup(const std::string &fxText,
                        llvm::ArrayRef<std::pair<int, int>> uses,
                        std::vector<std::string> &unbound);
  void restoreDroppedBias(const std::string &fxText,
                          llvm::ArrayRef<std::pair<int, int>> uses,
                          const std::string &placeholder);
  void bind(int node, int input, const std::string &placeholder, bool own);
  void bindWithoutMetadata(int node, int input);
  std::string nodeName(int node) const;

  ::onnx::GraphProto &graph_;
  int64_t maxConstantElements_;
  const std::function<void(const std::string &)> &warn_;

  llvm::StringMap<Placeholder> placeholders_;
  llvm::StringMap<const ::onnx::TensorProto *> weights_;
  /// The placeholder an initializer is the own tensor of (named by its
  /// target, or folded from that target alone).
  llvm::StringMap<std::string> identity_;
  /// Initializers folded from their placeholder (a transformed copy).
  llvm::StringSet<> derived_;
  /// Placeholders some initializer is the own tensor of.
  llvm::StringSet<> owned_;
  /// Placeholders some node's FX node reads.
  llvm::StringSet<> read_;
  std::map<std::pair<int, int>, Binding> bindings_;
  /// Gemm nodes that get their dropped bias back: node -> parameter.
  std::map<int, ExportedParameter> restored_;
};

bool Attribution::isWeight(const ::onnx::TensorProto &t) const {
  if (hybrid::onnxValueClass(t.data_type()) != hybrid::OnnxValueClass::Float)
    return false;
  int64_t n = 1;
  for (int64_t d : t.dims())
    if (d < 0 || llvm::MulOverflow(n, d, n))
      return false;
  return n > maxConstantElements_;
}

std::string Attribution::nodeName(int node) const {
  const ::onnx::NodeProto &n = graph_.node(node);
  return "node '" +
         (n.name().empty() ? n.op_type() + "_" + std::to_string(node)
                           : n.name()) +
         "' (" + n.op_type() + ")";
}

void Attribution::findIdentities() {
  llvm::StringMap<std::string> byTarget;
  for (auto &entry : placeholders_)
    if (!entry.second.target.empty())
      byTarget[entry.second.target] = entry.getKey().str();
  llvm::StringMap<std::vector<std::string>> foldedFrom;
  for (const ::onnx::ValueInfoProto &v : graph_.value_info())
    if (auto text = metadataValue(v, kValueInfoMetadata,
                                  "pkg.onnxscript.optimizer.folded_from"))
      foldedFrom[v.name()] = pythonStrings(*text);
  // Every initializer counts for owned_ (a placeholder with a tensor of its
  // own pairs with no merged use), only weights get an identity.
  for (const ::onnx::TensorProto &t : graph_.initializer()) {
    const std::string &name = t.name();
    bool weight = weights_.count(name);
    auto own = byTarget.find(name);
    if (own != byTarget.end()) {
      owned_.insert(own->second);
      if (weight)
        identity_[name] = own->second;
      continue;
    }
    auto from = foldedFrom.find(name);
    if (from == foldedFrom.end())
      continue;
    // Folded from one placeholder alone: that placeholder transformed. From
    // several values: a computed constant, even when one is a parameter
    // (then it is no parameter's own tensor; bindGroup says so if a
    // parameter use is left without one).
    if (from->second.size() == 1) {
      auto source = byTarget.find(from->second.front());
      if (source != byTarget.end()) {
        owned_.insert(source->second);
        if (weight) {
          identity_[name] = source->second;
          derived_.insert(name);
        }
      }
    }
  }
}

void Attribution::bind(int node, int input, const std::string &placeholder,
                       bool own) {
  const std::string &source = graph_.node(node).input(input);
  const Placeholder &p = placeholders_[placeholder];
  Binding b;
  b.source = source;
  b.parameter = p.kind == "PARAMETER";
  if (b.parameter)
    b.name = own && derived_.count(source) ? source : p.target;
  bindings_[{node, input}] = std::move(b);
}

void Attribution::bindWithoutMetadata(int node, int input) {
  const std::string &source = graph_.node(node).input(input);
  auto id = identity_.find(source);
  if (id == identity_.end() || placeholders_[id->second].kind != "PARAMETER") {
    bindings_[{node, input}] = Binding{"", false, source};
    return;
  }
  warn_(nodeName(node) +
        " has no pkg.torch.onnx.fx_node metadata; its use "
        "of initializer '" +
        source + "' reads that initializer's own parameter");
  bind(node, input, id->second, /*own=*/true);
}

llvm::Error Attribution::bindGroup(const std::string &fxText,
                                   llvm::ArrayRef<std::pair<int, int>> uses,
                                   std::vector<std::string> &unbound) {
  std::vector<std::string> args;
  for (std::string &name : fxOperands(fxText)) {
    auto it = placeholders_.find(name);
    if (it != placeholders_.end() && it->second.kind != "USER_INPUT")
      args.push_back(std::move(name));
  }
  llvm::StringSet<> matched;
  std::vector<std::pair<int, int>> open;
  for (auto [node, input] : uses) {
    auto id = identity_.find(graph_.node(node).input(input));
    if (id != identity_.end() && llvm::is_contained(args, id->second)) {
      matched.insert(id->second);
      bind(node, input, id->second, /*own=*/true);
    } else {
      open.emplace_back(node, input);
    }
  }
  // The initializers left are values the exporter merged: they pair with
  // the placeholders that have no initializer of their own, in order.
  std::vector<std::string> free;
  for (const std::string &a : args)
    if (!matched.count(a) && !owned_.count(a))
      free.push_back(a);
  if (open.empty()) {
    unbound = std::move(free);
    return llvm::Error::success();
  }
  // An FX node that reads no placeholder without a tensor reads computed
  // values: initializers the exporter folded from no placeholder are
  // constants (the rotary tables an FX node computed, say).
  if (free.empty() && llvm::none_of(open, [&](std::pair<int, int> use) {
        return identity_.count(graph_.node(use.first).input(use.second));
      })) {
    for (auto [node, input] : open)
      bindings_[{node, input}] =
          Binding{"", false, graph_.node(node).input(input)};
    return llvm::Error::success();
  }
  if (free.size() != open.size()) {
    std::string names;
    for (const std::string &a : free)
      names += (names.empty() ? "" : ", ") + a;
    auto [node, input] = open.front();
    return makeError(
        nodeName(node) + " reads initializer '" +
        graph_.node(node).input(input) +
        "', which is not the own tensor of a " +
        "placeholder its FX node reads, and the " + llvm::Twine(open.size()) +
        " such initializer use(s) of that FX node do not pair with the " +
        llvm::Twine(free.size()) +
        " placeholder(s) without a tensor of their "
        "own (" +
        (names.empty() ? std::string("none") : names) +
        "); FX node: " + fxText);
  }
  for (size_t i = 0; i < open.size(); ++i)
    bind(open[i].first, open[i].second, free[i], /*own=*/false);
  return llvm::Error::success();
}

void Attribution::restoreDroppedBias(const std::string &fxText,
                                     llvm::ArrayRef<std::pair<int, int>> uses,
                                     const std::string &placeholder) {
  const Placeholder &p = placeholders_[placeholder];
  if (p.kind != "PARAMETER" ||
      (fxText.find("target=torch.ops.aten.addmm.default]") ==
           std::string::npos &&
       fxText.find("target=torch.ops.aten.linear.default]") ==
           std::string::npos))
    return;
  std::optional<int> gemm;
  for (auto [node, input] : uses) {
    const ::onnx::NodeProto &n = graph_.node(node);
    if (n.op_type() != "Gemm" ||
        !(n.domain().empty() || n.domain() == "ai.onnx"))
      continue;
    if (gemm && *gemm != node)
      return; // two Gemms: which one dropped it is not known
    gemm = node;
  }
  if (!gemm)
    return;
  const ::onnx::NodeProto &n = graph_.node(*gemm);
  if (n.input_size() > 2 && !n.input(2).empty())
    return;
  auto b = weights_.find(n.input_size() > 1 ? n.input(1) : "");
  if (b == weights_.end() || b->second->dims_size() != 2)
    return;
  int64_t transB = 0;
  for (const ::onnx::AttributeProto &a : n.attribute())
    if (a.name() == "transB")
      transB = a.i();
  int64_t columns = b->second->dims(transB ? 0 : 1);
  restored_[*gemm] = ExportedParameter{p.target, "", {columns}};
}

llvm::Expected<std::optional<ExportedParameterTable>> Attribution::run() {
  std::optional<std::string> signature =
      metadataValue(graph_, kGraphMetadata,
                    "pkg.torch.export.ExportedProgram.graph_signature");
  if (!signature)
    return std::nullopt;
  placeholders_ = parseSignature(*signature);
  for (const ::onnx::TensorProto &t : graph_.initializer())
    if (isWeight(t))
      weights_[t.name()] = &t;
  findIdentities();

  // Group the initializer uses by the FX node each ONNX node came from;
  // note every placeholder some FX node reads.
  std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>> groups;
  llvm::StringMap<size_t> groupOf;
  for (int n = 0; n < graph_.node_size(); ++n) {
    const ::onnx::NodeProto &node = graph_.node(n);
    std::optional<std::string> fx =
        metadataValue(node, kNodeMetadata, "pkg.torch.onnx.fx_node");
    if (fx)
      for (const std::string &name : fxOperands(*fx))
        read_.insert(name);
    for (int i = 0; i < node.input_size(); ++i) {
      if (!weights_.count(node.input(i)))
        continue;
      if (fx) {
        auto [it, added] = groupOf.try_emplace(*fx, groups.size());
        if (added)
          groups.emplace_back(*fx, std::vector<std::pair<int, int>>());
        groups[it->second].second.emplace_back(n, i);
      } else {
        bindWithoutMetadata(n, i);
      }
    }
  }
  for (auto &[fx, uses] : groups) {
    std::vector<std::string> unbound;
    if (llvm::Error e = bindGroup(fx, uses, unbound))
      return std::move(e);
    if (unbound.size() == 1)
      restoreDroppedBias(fx, uses, unbound.front());
  }

  // One parameter per name, from one initializer.
  ExportedParameterTable table;
  llvm::StringMap<std::string> sourceOf;
  llvm::StringMap<std::vector<std::string>> derivedOf;
  for (auto &[use, b] : bindings_) {
    if (!b.parameter)
      continue;
    auto [it, inserted] = sourceOf.try_emplace(b.name, b.source);
    if (!inserted && it->second != b.source)
      return makeError("parameter '" + b.name + "' is read from initializer '" +
                       it->second + "' by one node and from '" + b.source +
                       "' by " + nodeName(use.first));
  }
  // In order of first use.
  llvm::StringSet<> listed;
  for (int n = 0; n < graph_.node_size(); ++n) {
    for (int i = 0; i < graph_.node(n).input_size(); ++i) {
      auto it = bindings_.find({n, i});
      if (it == bindings_.end() || !it->second.parameter ||
          !listed.insert(it->second.name).second)
        continue;
      table.params.push_back({it->second.name, it->second.source, {}});
      if (derived_.count(it->second.name))
        derivedOf[placeholders_[identity_[it->second.name]].target].push_back(
            it->second.name);
    }
    // A restored bias that another node reads from an initializer is that
    // parameter (the Gemm's C reads it by name).
    auto bias = restored_.find(n);
    if (bias != restored_.end() && !sourceOf.count(bias->second.name) &&
        listed.insert(bias->second.name).second)
      table.params.push_back(bias->second);
  }
  for (auto &[target, names] : derivedOf)
    if (sourceOf.count(target) || names.size() > 1) {
      std::string list;
      for (const std::string &n : names)
        list += ", '" + n + "'";
      warn_("parameter '" + target.str() + "' is read " +
            (sourceOf.count(target) ? "as itself and " : "") + "folded into" +
            list.substr(1) + ": they train as separate tensors");
    }
  for (auto &entry : placeholders_)
    if (entry.second.kind == "PARAMETER" && read_.count(entry.getKey()) &&
        !owned_.count(entry.getKey()) && !listed.count(entry.second.target))
      table.foldedAway.push_back(entry.second.target);
  llvm::sort(table.foldedAway);

  // The new names must not stand for another value already.
  llvm::StringSet<> taken;
  for (const ::onnx::ValueInfoProto &in : graph_.input())
    taken.insert(in.name());
  for (const ::onnx::NodeProto &node : graph_.node())
    for (const std::string &out : node.output())
      taken.insert(out);
  for (const ::onnx::TensorProto &t : graph_.initializer())
    taken.insert(t.name());
  for (const ExportedParameter &p : table.params)
    if (p.name != p.source && taken.count(p.name))
      return makeError("parameter '" + p.name + "' (read from initializer '" +
                       p.source +
                       "') has the name of another value of the "
                       "graph");

  // Rename the uses (after every check: an error changes nothing). A
  // constant use of an initializer that is also a parameter under its own
  // name reads an alias of its data.
  std::vector<std::pair<std::pair<int, int>, std::string>> renames;
  for (auto &[use, b] : bindings_) {
    std::string name = b.parameter ? b.name : b.source;
    if (!b.parameter && sourceOf.count(b.source)) {
      name = b.source + ".constant";
      if (taken.count(name))
        return makeError("initializer '" + b.source +
                         "' is read as a parameter and as a constant, and "
                         "the constant's name '" +
                         name + "' is taken");
      table.constantAliases[name] = b.source;
    }
    renames.emplace_back(use, std::move(name));
  }
  for (auto &[use, name] : renames)
    graph_.mutable_node(use.first)->set_input(use.second, name);
  for (auto &[node, bias] : restored_) {
    ::onnx::NodeProto &gemm = *graph_.mutable_node(node);
    if (gemm.input_size() > 2)
      gemm.set_input(2, bias.name);
    else
      gemm.add_input(bias.name);
  }
  return table;
}

} // namespace

llvm::Expected<std::optional<ExportedParameterTable>>
attributeExportedParameters(
    ::onnx::ModelProto &model, int64_t maxConstantElements,
    const std::function<void(const std::string &)> &warn) {
  return Attribution(model, maxConstantElements, warn).run();
}

} // namespace hybridc::onnx
