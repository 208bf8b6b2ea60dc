// importOnnxModel: reads an ONNX ModelProto, walks its graph in topological
// order and converts each node through the versioned conversion table into
// `func.func @forward` in hg.
#include "frontends/onnx/OnnxImporter.h"

#include "dialects/hg/IR/HgOps.h"
#include "frontends/onnx/ConversionTable.h"
#include "frontends/onnx/ExportedParameters.h"
#include "frontends/onnx/GraphImporter.h"

#include "hybrid/OnnxElementTypes.h"
#include "hybrid/OnnxExternalData.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <queue>

namespace hybridc::onnx {
namespace {

using hybrid::SymExpr;
using hybrid::SymShape;

llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

/// A dim_param usable as a symbol name in shape strings (letters, digits and
/// '_', not starting with a digit).
std::string symbolName(llvm::StringRef param) {
  std::string s;
  for (char c : param)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    s = "d_" + s;
  return s;
}

/// Whether an initializer becomes a parameter (an argument of @forward that
/// the runtime binds) rather than a constant folded into the graph.
bool isParameterInitializer(const ::onnx::TensorProto &t,
                            const OnnxImportOptions &options) {
  if (elemKindOfOnnxType(t.data_type()) != ElemKind::Float)
    return false;
  int64_t n = 1;
  for (int64_t d : t.dims())
    if (d < 0 || llvm::MulOverflow(n, d, n))
      return false; // invalid: decoding it as a constant reports it
  return n > options.maxConstantElements;
}

/// Constants above this many bytes are not read from external data (the
/// bundle could not hold them either).
constexpr uint64_t kMaxExternalConstantBytes = uint64_t(256) << 20;

/// Reads the external data of `model`, saved at `path`: every reference is
/// checked (location inside the model's folder, an existing file, the byte
/// range inside it and of the tensor's size); constants (initializers that
/// are not parameters, tensor attributes) get their bytes as raw_data,
/// parameters stay external for the runtime to bind. `table`, when set,
/// says which initializers parameters read (else isParameterInitializer).
class ExternalDataReader {
public:
  ExternalDataReader(llvm::StringRef path, const OnnxImportOptions &options,
                     const std::optional<ExportedParameterTable> &table)
      : path_(path.str()), options_(options) {
    // An initializer that is also read as a constant needs its bytes here.
    if (table) {
      for (const ExportedParameter &p : table->params)
        leftExternal_.insert(p.source);
      for (const auto &alias : table->constantAliases)
        leftExternal_.erase(alias.second);
    }
    useTable_ = table.has_value();
    llvm::SmallString<256> folder(path);
    llvm::sys::path::remove_filename(folder);
    folder_ = folder.empty() ? "." : folder.str().str();
  }

  llvm::Error read(::onnx::ModelProto &model) {
    ::onnx::GraphProto &graph = *model.mutable_graph();
    for (::onnx::TensorProto &t : *graph.mutable_initializer())
      if (llvm::Error e =
              resolve(t, "initializer '" + t.name() + "'",
                      useTable_ ? leftExternal_.contains(t.name())
                                : isParameterInitializer(t, options_)))
        return e;
    for (::onnx::NodeProto &node : *graph.mutable_node())
      for (::onnx::AttributeProto &a : *node.mutable_attribute()) {
        std::string what =
            "attribute '" + a.name() + "' of node '" + node.name() + "'";
        if (a.has_t())
          if (llvm::Error e = resolve(*a.mutable_t(), what, false))
            return e;
        for (::onnx::TensorProto &t : *a.mutable_tensors())
          if (llvm::Error e = resolve(t, what, false))
            return e;
      }
    return llvm::Error::success();
  }

private:
  llvm::Error fail(const std::string &what, const llvm::Twine &problem) {
    return makeError(path_ + ": " + what + ": " + problem);
  }

  llvm::Error resolve(::onnx::TensorProto &t, const std::string &what,
                      bool keepExternal) {
    if (t.data_location() != ::onnx::TensorProto::EXTERNAL)
      return llvm::Error::success();
    std::vector<std::pair<std::string, std::string>> entries;
    for (const ::onnx::StringStringEntryProto &e : t.external_data())
      entries.emplace_back(e.key(), e.value());
    hybrid::OnnxExternalRef ref;
    std::string problem = hybrid::parseOnnxExternalRef(entries, ref);
    if (!problem.empty())
      return fail(what, problem);
    // An element type without a fixed size is reported where it is used.
    int64_t bytes =
        static_cast<int64_t>(hybrid::onnxElementSize(t.data_type()));
    if (!bytes)
      return llvm::Error::success();
    for (int64_t d : t.dims())
      if (d < 0 || llvm::MulOverflow(bytes, d, bytes))
        return fail(what, "has an invalid shape");
    uint64_t want = static_cast<uint64_t>(bytes);
    std::string file = folder_ + "/" + ref.location;
    uint64_t size;
    if (std::error_code ec = llvm::sys::fs::file_size(file, size))
      return fail(what,
                  "external data: " + file + ": cannot open: " + ec.message());
    uint64_t length;
    problem = hybrid::checkOnnxExternalRange(ref, size, want, length);
    if (!problem.empty())
      return fail(what, problem);
    if (!llvm::is_contained(files_, file)) {
      files_.push_back(file);
      if (options_.externalDataFiles)
        options_.externalDataFiles->push_back(file);
    }
    if (keepExternal)
      return llvm::Error::success();
    if (length > kMaxExternalConstantBytes)
      return fail(what, "a constant of " + llvm::Twine(length) +
                            " bytes in external data is more than the 256 "
                            "MiB a constant may hold");
    auto buffer = llvm::MemoryBuffer::getFileSlice(file, length, ref.offset,
                                                   /*IsVolatile=*/false);
    if (!buffer)
      return fail(what, "external data: " + file +
                            ": cannot read: " + buffer.getError().message());
    t.set_raw_data((*buffer)->getBufferStart(), length);
    t.clear_external_data();
    t.set_data_location(::onnx::TensorProto::DEFAULT);
    return llvm::Error::success();
  }

  std::string path_, folder_;
  const OnnxImportOptions &options_;
  bool useTable_ = false;
  llvm::StringSet<> leftExternal_; ///< with a table: what parameters read
  std::vector<std::string> files_;
};

/// Builds @forward from one ModelProto.
class ModelImporter {
public:
  ModelImporter(mlir::MLIRContext &context, llvm::StringRef path,
                const ::onnx::ModelProto &model,
                const OnnxImportOptions &options,
                const std::optional<ExportedParameterTable> &table)
      : context_(context), path_(path.str()), model_(model),
        graph_(model.graph()), options_(options), table_(table),
        fileLoc_(mlir::FileLineColLoc::get(&context, path, 0, 0)) {}

  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> run();

private:
  llvm::Error readOpsets();
  llvm::Expected<unsigned>
  symbolFor(const ::onnx::TensorShapeProto_Dimension &d);
  llvm::Error declareInputs(llvm::SmallVectorImpl<mlir::Type> &types,
                            llvm::SmallVectorImpl<SymShape> &shapes);
  llvm::Error declareParams(llvm::SmallVectorImpl<mlir::Type> &types);
  llvm::Error defineConstants(GraphImporter &imp);
  llvm::Error defineConstant(GraphImporter &imp, llvm::StringRef name,
                             const ::onnx::TensorProto &t);
  llvm::Expected<std::vector<int>> topologicalOrder();
  llvm::Error convertNode(GraphImporter &imp, const ::onnx::NodeProto &node,
                          int index);

  mlir::MLIRContext &context_;
  std::string path_;
  const ::onnx::ModelProto &model_;
  const ::onnx::GraphProto &graph_;
  const OnnxImportOptions &options_;
  const std::optional<ExportedParameterTable> &table_;
  mlir::Location fileLoc_;

  int64_t opset_ = 0;
  std::vector<std::string> symbols_;
  llvm::StringMap<unsigned> symbolOfParam_;
  unsigned unnamedDims_ = 0;
  llvm::StringMap<const ::onnx::TensorProto *> initializers_;
  llvm::StringMap<unsigned> useCounts_;
  /// Graph inputs (not initializers) and parameters, in argument order.
  struct Param {
    std::string name;
    /// What the runtime binds it from; null for a bias the exporter
    /// dropped (zeros of `dims`).
    const ::onnx::TensorProto *tensor;
    llvm::SmallVector<int64_t> dims;
  };
  std::vector<const ::onnx::ValueInfoProto *> inputs_;
  std::vector<Param> params_;
};

llvm::Error ModelImporter::readOpsets() {
  bool found = false;
  for (const ::onnx::OperatorSetIdProto &o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset_ = o.version();
      found = true;
    }
  if (!found) {
    if (model_.ir_version() >= 3)
      return makeError(path_ + ": the model imports no opset of the default "
                               "ONNX domain");
    opset_ = 1; // IR version < 3 has no opset_import; opset 1 is implied.
  }
  return llvm::Error::success();
}

llvm::Expected<unsigned>
ModelImporter::symbolFor(const ::onnx::TensorShapeProto_Dimension &d) {
  std::string name;
  if (d.has_dim_param() && !d.dim_param().empty()) {
    auto it = symbolOfParam_.find(d.dim_param());
    if (it != symbolOfParam_.end())
      return it->second;
    name = symbolName(d.dim_param());
  } else {
    name = "d" + std::to_string(unnamedDims_++);
  }
  // Keep names unique (two dim_params may sanitise to the same text).
  while (llvm::is_contained(symbols_, name))
    name += "_";
  if (symbols_.size() >= 255)
    return makeError(path_ + ": too many symbolic dimensions");
  symbols_.push_back(name);
  unsigned index = static_cast<unsigned>(symbols_.size() - 1);
  if (d.has_dim_param() && !d.dim_param().empty())
    symbolOfParam_[d.dim_param()] = index;
  return index;
}

llvm::Error
ModelImporter::declareInputs(llvm::SmallVectorImpl<mlir::Type> &types,
                             llvm::SmallVectorImpl<SymShape> &shapes) {
  mlir::Builder b(&context_);
  for (const ::onnx::ValueInfoProto &in : graph_.input()) {
    if (initializers_.count(in.name()))
      continue; // IR < 4 lists initializers as inputs too
    const ::onnx::TypeProto &type = in.type();
    if (!type.has_tensor_type())
      return makeError("graph input '" + in.name() + "' is not a tensor");
    int32_t elem = type.tensor_type().elem_type();
    std::optional<ElemKind> kind;
    switch (elem) {
    case ::onnx::TensorProto::FLOAT:
      kind = ElemKind::Float;
      break;
    case ::onnx::TensorProto::INT64:
    case ::onnx::TensorProto::INT32:
      kind = ElemKind::Int;
      break;
    case ::onnx::TensorProto::BOOL:
      kind = ElemKind::Bool;
      break;
    default:
      return makeError("graph input '" + in.name() + "' has element type " +
                       onnxTypeName(elem) +
                       "; hg takes float32, int64/int32 and bool inputs");
    }
    if (!type.tensor_type().has_shape())
      return makeError("graph input '" + in.name() +
                       "' has no shape; hg needs the rank of every input");
    SymShape shape;
    for (const auto &d : type.tensor_type().shape().dim()) {
      if (d.has_dim_value() && d.dim_value() >= 0) {
        shape.push_back(SymExpr(d.dim_value()));
        continue;
      }
      auto sym = symbolFor(d);
      if (!sym)
        return sym.takeError();
      shape.push_back(SymExpr::symbol(*sym));
    }
    llvm::SmallVector<int64_t> dims;
    for (const SymExpr &e : shape)
      dims.push_back(e.constant().value_or(mlir::ShapedType::kDynamic));
    mlir::Type et = b.getI1Type();
    if (*kind == ElemKind::Float)
      et = b.getF32Type();
    else if (*kind == ElemKind::Int)
      et = b.getI64Type();
    types.push_back(mlir::RankedTensorType::get(dims, et));
    shapes.push_back(std::move(shape));
    inputs_.push_back(&in);
  }
  return llvm::Error::success();
}

llvm::Error
ModelImporter::declareParams(llvm::SmallVectorImpl<mlir::Type> &types) {
  mlir::Builder b(&context_);
  if (table_) {
    for (const ExportedParameter &p : table_->params) {
      const ::onnx::TensorProto *t =
          p.source.empty() ? nullptr : initializers_.lookup(p.source);
      params_.push_back(
          {p.name, t,
           t ? llvm::SmallVector<int64_t>(t->dims().begin(), t->dims().end())
             : llvm::SmallVector<int64_t>(p.shape.begin(), p.shape.end())});
    }
  } else {
    for (const ::onnx::TensorProto &t : graph_.initializer())
      if (useCounts_.lookup(t.name()) && isParameterInitializer(t, options_))
        params_.push_back(
            {t.name(), &t,
             llvm::SmallVector<int64_t>(t.dims().begin(), t.dims().end())});
  }
  // FLOAT16, BFLOAT16 and DOUBLE weights are f32 parameters too: the
  // runtime converts them when it binds the .onnx file, from the model or
  // its external data.
  for (const Param &p : params_)
    types.push_back(mlir::RankedTensorType::get(p.dims, b.getF32Type()));
  return llvm::Error::success();
}

llvm::Error ModelImporter::defineConstant(GraphImporter &imp,
                                          llvm::StringRef name,
                                          const ::onnx::TensorProto &t) {
  auto decoded = decodeTensor(t, "initializer '" + t.name() + "'");
  if (!decoded)
    return decoded.takeError();
  int64_t n = 1;
  for (int64_t d : decoded->dims)
    n *= d;
  if (n > kMaxFoldedElements) {
    imp.define(name,
               imp.live(imp.constant(*decoded), toSymShape(decoded->dims)));
  } else if (decoded->kind == ElemKind::Float) {
    imp.define(name, TensorValue::makeFloats(decoded->dims, decoded->floats));
  } else {
    imp.define(name,
               TensorValue::makeInts(decoded->dims,
                                     std::vector<SymExpr>(decoded->ints.begin(),
                                                          decoded->ints.end()),
                                     decoded->kind));
  }
  return llvm::Error::success();
}

llvm::Error ModelImporter::defineConstants(GraphImporter &imp) {
  llvm::StringSet<> paramNames;
  for (const Param &p : params_)
    paramNames.insert(p.name);
  for (const ::onnx::TensorProto &t : graph_.initializer()) {
    if (paramNames.count(t.name()) || !useCounts_.count(t.name()))
      continue;
    if (llvm::Error e = defineConstant(imp, t.name(), t))
      return e;
  }
  if (table_)
    for (const auto &alias : table_->constantAliases)
      if (llvm::Error e = defineConstant(imp, alias.getKey(),
                                         *initializers_.lookup(alias.second)))
        return e;
  return llvm::Error::success();
}

/// Node indices in an order where every value is defined before use,
/// keeping the file's order where it already is one.
llvm::Expected<std::vector<int>> ModelImporter::topologicalOrder() {
  int n = graph_.node_size();
  llvm::StringMap<int> producer;
  for (int i = 0; i < n; ++i)
    for (const std::string &out : graph_.node(i).output())
      if (!out.empty())
        producer[out] = i;
  llvm::StringSet<> available;
  for (const ::onnx::ValueInfoProto *in : inputs_)
    available.insert(in->name());
  for (const auto &entry : initializers_)
    available.insert(entry.getKey());
  for (const Param &p : params_)
    available.insert(p.name);
  if (table_)
    for (const auto &alias : table_->constantAliases)
      available.insert(alias.getKey());

  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    const ::onnx::NodeProto &node = graph_.node(i);
    for (const std::string &in : node.input()) {
      if (in.empty() || available.count(in))
        continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return makeError("node '" + node.name() + "' (" + node.op_type() +
                         ") reads '" + in +
                         "', which no node, graph input or initializer "
                         "defines");
      ++pending[i];
      consumers[it->second].push_back(i);
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < n; ++i)
    if (!pending[i])
      ready.push(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0)
        ready.push(c);
  }
  if (static_cast<int>(order.size()) != n)
    return makeError(path_ + ": the graph has a cycle");
  return order;
}

llvm::Error ModelImporter::convertNode(GraphImporter &imp,
                                       const ::onnx::NodeProto &proto,
                                       int index) {
  std::string name = proto.name().empty()
                         ? proto.op_type() + "_" + std::to_string(index)
                         : proto.name();
  if (!proto.domain().empty() && proto.domain() != "ai.onnx")
    return makeError("unsupported ONNX op domain '" + proto.domain() +
                     "' (op '" + proto.op_type() + "', node '" + name + "')");
  GenericNode node(proto, name, opset_);
  ConversionFn fn = ConversionTable::get().lookup(node.opType(), opset_);
  if (!fn)
    return makeError("unsupported ONNX op '" + node.opType() + "' (node '" +
                     name + "', opset " + llvm::Twine(opset_) + ")");
  imp.setCurrentNode(
      mlir::NameLoc::get(mlir::StringAttr::get(&context_, name), fileLoc_));
  return fn(imp, node);
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> ModelImporter::run() {
  if (llvm::Error e = readOpsets())
    return std::move(e);
  for (const ::onnx::TensorProto &t : graph_.initializer())
    initializers_[t.name()] = &t;
  for (const ::onnx::SparseTensorProto &s : graph_.sparse_initializer())
    if (s.values().name().size())
      return makeError("sparse initializer '" + s.values().name() +
                       "' is not supported");
  for (const ::onnx::NodeProto &node : graph_.node())
    for (const std::string &in : node.input())
      if (!in.empty())
        ++useCounts_[in];
  for (const ::onnx::ValueInfoProto &out : graph_.output())
    ++useCounts_[out.name()];

  llvm::SmallVector<mlir::Type> argTypes;
  llvm::SmallVector<SymShape> inputShapes;
  if (llvm::Error e = declareInputs(argTypes, inputShapes))
    return std::move(e);
  if (llvm::Error e = declareParams(argTypes))
    return std::move(e);

  mlir::OpBuilder builder(&context_);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(fileLoc_);
  std::string modelName =
      graph_.name().empty() ? model_.producer_name() : graph_.name();
  (*module)->setAttr("hg.model", builder.getStringAttr(modelName));
  (*module)->setAttr("hg.source", builder.getStringAttr(path_));
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<mlir::func::FuncOp>(
      fileLoc_, "forward", builder.getFunctionType(argTypes, {}));
  mlir::Block *body = func.addEntryBlock();
  builder.setInsertionPointToStart(body);

  GraphImporter imp(builder, fileLoc_, symbols_, useCounts_);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    llvm::SmallVector<mlir::Attribute> dims;
    for (const SymExpr &d : inputShapes[i])
      dims.push_back(imp.dimAttr(d));
    func.setArgAttr(i, "hg.name", builder.getStringAttr(inputs_[i]->name()));
    func.setArgAttr(i, "hg.dims", builder.getArrayAttr(dims));
    imp.define(inputs_[i]->name(),
               imp.live(body->getArgument(i), inputShapes[i]));
  }
  llvm::SmallVector<mlir::NamedAttribute> sources;
  for (size_t p = 0; p < params_.size(); ++p) {
    unsigned i = inputs_.size() + p;
    const Param &param = params_[p];
    func.setArgAttr(i, "hg.param", builder.getStringAttr(param.name));
    imp.define(param.name,
               imp.live(body->getArgument(i),
                        SymShape(param.dims.begin(), param.dims.end())));
    std::string source = param.tensor ? param.tensor->name() : "";
    if (source != param.name)
      sources.push_back(
          builder.getNamedAttr(param.name, builder.getStringAttr(source)));
  }
  // Where the runtime reads a parameter the exporter merged with others
  // ("": a dropped bias, zeros).
  if (!sources.empty())
    (*module)->setAttr("hg.param_sources", builder.getDictionaryAttr(sources));
  if (llvm::Error e = defineConstants(imp))
    return std::move(e);

  auto order = topologicalOrder();
  if (!order)
    return order.takeError();
  for (int i : *order)
    if (llvm::Error e = convertNode(imp, graph_.node(i), i))
      return std::move(e);

  imp.setCurrentNode(fileLoc_);
  llvm::SmallVector<mlir::Value> results;
  for (const ::onnx::ValueInfoProto &out : graph_.output()) {
    const TensorValue *v = imp.lookup(out.name());
    if (!v)
      return makeError("graph output '" + out.name() + "' is not computed");
    results.push_back(imp.materialize(*v));
  }
  builder.create<mlir::func::ReturnOp>(fileLoc_, results);
  func.setFunctionType(
      builder.getFunctionType(argTypes, mlir::ValueRange(results).getTypes()));
  for (int i = 0; i < graph_.output_size(); ++i)
    func.setResultAttr(i, "hg.name",
                       builder.getStringAttr(graph_.output(i).name()));

  // The conversions check what they rely on, so a failure here is an
  // importer bug; report it instead of returning invalid IR.
  std::string diag;
  {
    mlir::ScopedDiagnosticHandler handler(&context_, [&](mlir::Diagnostic &d) {
      if (diag.empty()) {
        llvm::raw_string_ostream os(diag);
        d.getLocation().print(os);
        os << ": " << d.str();
      }
      return mlir::success();
    });
    if (mlir::failed(mlir::verify(*module)))
      return makeError(path_ + ": the imported module is invalid (" + diag +
                       "); this is an importer bug");
  }
  return module;
}

} // namespace

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
importOnnxModel(mlir::MLIRContext &context, llvm::StringRef path,
                const OnnxImportOptions &options) {
  context.getOrLoadDialect<hg::HgDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  std::ifstream in(path.str(), std::ios::binary);
  if (!in)
    return makeError("cannot open '" + path + "': " + std::strerror(errno));
  ::onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    return makeError("'" + path +
                     "' is not a valid ONNX model: its protobuf data is "
                     "truncated or corrupt");
  if (!model.has_graph())
    return makeError("'" + path + "' is not an ONNX model: it holds no graph");
  mlir::Location fileLoc = mlir::FileLineColLoc::get(&context, path, 0, 0);
  auto warn = [&](const std::string &message) {
    if (options.training)
      mlir::emitWarning(fileLoc) << message;
  };
  std::optional<ExportedParameterTable> table;
  auto attributed =
      attributeExportedParameters(model, options.maxConstantElements, warn);
  if (attributed) {
    table = std::move(*attributed);
  } else {
    warn("the exporter's parameter metadata cannot be followed (" +
         llvm::toString(attributed.takeError()) +
         "); every initializer is one parameter as stored, so a parameter "
         "the exporter merged with others trains as one with them");
  }
  if (table && !table->foldedAway.empty()) {
    std::string names;
    for (const std::string &n : table->foldedAway)
      names += (names.empty() ? "" : ", ") + n;
    warn(std::to_string(table->foldedAway.size()) +
         " parameter(s) that the graph's nodes read are in no initializer "
         "(the exporter folded them away, e.g. all-zero biases): they are "
         "not trained: " +
         names);
  }
  if (llvm::Error e = ExternalDataReader(path, options, table).read(model))
    return std::move(e);
  ModelImporter importer(context, path, model, options, table);
  return importer.run();
}

std::vector<std::string> supportedOnnxOps() {
  return ConversionTable::get().opTypes();
}

} // namespace hybridc::onnx
