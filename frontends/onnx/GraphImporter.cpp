// GraphImporter: the value table, tensor decoding and the shared emission
// helpers of the ONNX conversions.
#include "frontends/onnx/GraphImporter.h"

#include "dialects/hg/IR/HgOps.h"

#include "hybrid/OnnxElementTypes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/MathExtras.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>

namespace hybridc::onnx {

using hybrid::SymExpr;
using hybrid::SymShape;
using ::onnx::TensorProto;

static llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

//===----------------------------------------------------------------------===//
// Tensor decoding
//===----------------------------------------------------------------------===//

std::optional<ElemKind> elemKindOfOnnxType(int32_t dataType) {
  switch (hybrid::onnxValueClass(dataType)) {
  case hybrid::OnnxValueClass::Float:
    return ElemKind::Float;
  case hybrid::OnnxValueClass::Integer:
    return ElemKind::Int;
  case hybrid::OnnxValueClass::Bool:
    return ElemKind::Bool;
  case hybrid::OnnxValueClass::Unsupported:
    break;
  }
  return std::nullopt;
}

std::string onnxTypeName(int32_t dataType) {
  return llvm::StringRef(hybrid::onnxElementTypeName(dataType)).lower();
}

namespace {

/// Reads `n` little-endian elements of `T` from raw bytes.
template <typename T, typename Out>
bool readRaw(const std::string &raw, int64_t n, std::vector<Out> &out) {
  if (raw.size() != static_cast<size_t>(n) * sizeof(T))
    return false;
  out.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<Out>(v);
  }
  return true;
}

template <typename Field, typename Out>
bool readField(const Field &field, int64_t n, std::vector<Out> &out) {
  if (field.size() != n)
    return false;
  out.assign(field.begin(), field.end());
  return true;
}

/// Reads `t`'s `n` elements: from raw_data as little-endian `T` when it has
/// raw data, else from `field`, the typed field ONNX keeps `T` values in.
template <typename T, typename Field, typename Out>
bool readElements(const TensorProto &t, const Field &field, int64_t n,
                  std::vector<Out> &out) {
  return t.has_raw_data() ? readRaw<T>(t.raw_data(), n, out)
                          : readField(field, n, out);
}

/// 16-bit floats (FLOAT16, BFLOAT16; bits in raw_data or int32_data) as
/// doubles.
bool readHalves(const TensorProto &t, const llvm::fltSemantics &semantics,
                int64_t n, std::vector<double> &out) {
  std::vector<int64_t> bits;
  if (!readElements<uint16_t>(t, t.int32_data(), n, bits))
    return false;
  out.clear();
  for (int64_t b : bits) {
    llvm::APFloat f(semantics, llvm::APInt(16, static_cast<uint64_t>(b)));
    bool losesInfo;
    f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &losesInfo);
    out.push_back(f.convertToDouble());
  }
  return true;
}

/// Reads `t`'s `n` elements into `d` (as read, before any rounding); false
/// when the tensor holds a different number.
bool readTensorData(const TensorProto &t, int64_t n, DecodedTensor &d) {
  switch (t.data_type()) {
  case TensorProto::FLOAT:
    return readElements<float>(t, t.float_data(), n, d.floats);
  case TensorProto::FLOAT16:
    return readHalves(t, llvm::APFloat::IEEEhalf(), n, d.floats);
  case TensorProto::BFLOAT16:
    return readHalves(t, llvm::APFloat::BFloat(), n, d.floats);
  case TensorProto::DOUBLE:
    return readElements<double>(t, t.double_data(), n, d.floats);
  case TensorProto::INT64:
    return readElements<int64_t>(t, t.int64_data(), n, d.ints);
  case TensorProto::INT32:
    return readElements<int32_t>(t, t.int32_data(), n, d.ints);
  case TensorProto::INT16:
    return readElements<int16_t>(t, t.int32_data(), n, d.ints);
  case TensorProto::INT8:
    return readElements<int8_t>(t, t.int32_data(), n, d.ints);
  case TensorProto::UINT8:
  case TensorProto::BOOL:
    return readElements<uint8_t>(t, t.int32_data(), n, d.ints);
  case TensorProto::UINT16:
    return readElements<uint16_t>(t, t.int32_data(), n, d.ints);
  case TensorProto::UINT32:
    return readElements<uint32_t>(t, t.uint64_data(), n, d.ints);
  case TensorProto::UINT64:
    return readElements<uint64_t>(t, t.uint64_data(), n, d.ints);
  default:
    return false;
  }
}

} // namespace

llvm::Expected<DecodedTensor> decodeTensor(const TensorProto &t,
                                           const llvm::Twine &what) {
  std::optional<ElemKind> kind = elemKindOfOnnxType(t.data_type());
  if (!kind)
    return makeError(what + " has element type " + onnxTypeName(t.data_type()) +
                     ", which hg cannot represent");
  // The importer reads the external data of constants before converting
  // (ExternalDataReader); what is left external is a parameter.
  if (t.data_location() == TensorProto::EXTERNAL)
    return makeError(what + " keeps its data in an external file that was "
                            "not read; this is an importer bug");
  DecodedTensor d;
  d.kind = *kind;
  int64_t n = 1;
  for (int64_t dim : t.dims()) {
    if (dim < 0 || (dim && n > (int64_t(1) << 40) / dim))
      return makeError(what + " has an invalid shape");
    d.dims.push_back(dim);
    n *= dim;
  }
  if (!readTensorData(t, n, d))
    return makeError(what + " holds fewer or more elements than its shape (" +
                     std::to_string(n) + ") says; the file is corrupt");
  // UINT64 was read wrapping; a value above INT64_MAX came out negative.
  if (t.data_type() == TensorProto::UINT64)
    for (int64_t v : d.ints)
      if (v < 0)
        return makeError(what + " holds the UINT64 value " +
                         llvm::Twine(static_cast<uint64_t>(v)) +
                         ", which does not fit in i64");
  if (t.data_type() != TensorProto::FLOAT)
    for (double &f : d.floats)
      f = roundToF32(f);
  if (d.kind == ElemKind::Bool)
    for (int64_t &b : d.ints)
      b = b != 0;
  return d;
}

//===----------------------------------------------------------------------===//
// Value table
//===----------------------------------------------------------------------===//

GraphImporter::GraphImporter(mlir::OpBuilder &builder, mlir::Location fileLoc,
                             std::vector<std::string> &symbols,
                             const llvm::StringMap<unsigned> &useCounts)
    : builder_(builder), loc_(fileLoc), symbols_(symbols),
      useCounts_(useCounts) {}

void GraphImporter::define(llvm::StringRef name, TensorValue value) {
  values_[name] = std::move(value);
}

const TensorValue *GraphImporter::lookup(llvm::StringRef name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

bool GraphImporter::isUsed(llvm::StringRef name) const {
  auto it = useCounts_.find(name);
  return it != useCounts_.end() && it->second > 0;
}

llvm::Expected<const TensorValue *>
GraphImporter::optionalInput(const GenericNode &node, size_t i) {
  if (!node.hasInput(i))
    return nullptr;
  const TensorValue *v = lookup(node.input(i));
  if (!v)
    return node.error("input '" + node.input(i) + "' is not defined");
  return v;
}

llvm::Expected<const TensorValue *>
GraphImporter::input(const GenericNode &node, size_t i) {
  if (!node.hasInput(i))
    return node.error("required input " + llvm::Twine(i) + " is missing");
  return optionalInput(node, i);
}

void GraphImporter::setOutput(const GenericNode &node, size_t i,
                              TensorValue value) {
  if (node.hasOutput(i))
    define(node.output(i), std::move(value));
}

llvm::Expected<std::vector<SymExpr>>
GraphImporter::knownInts(const GenericNode &node, size_t i,
                         llvm::StringRef what) {
  auto v = input(node, i);
  if (!v)
    return v.takeError();
  if ((*v)->isLive())
    return node.error(what + " '" + node.input(i) +
                      "' is computed at run time; data-dependent shapes and "
                      "parameters are not supported");
  if ((*v)->kind == ElemKind::Float)
    return node.error(what + " '" + node.input(i) +
                      "' must be an integer tensor");
  return (*v)->ints;
}

llvm::Expected<int64_t> GraphImporter::knownConstantInt(const GenericNode &node,
                                                        size_t i,
                                                        llvm::StringRef what) {
  auto ints = knownInts(node, i, what);
  if (!ints)
    return ints.takeError();
  if (ints->size() != 1)
    return node.error(what + " must hold one element");
  std::optional<int64_t> c = ints->front().constant();
  if (!c)
    return node.error(what + " is the symbolic size " + str(ints->front()) +
                      "; a constant is required");
  return *c;
}

llvm::Expected<double> GraphImporter::knownScalar(const GenericNode &node,
                                                  size_t i,
                                                  llvm::StringRef what) {
  auto v = input(node, i);
  if (!v)
    return v.takeError();
  if ((*v)->isLive())
    return node.error(what + " '" + node.input(i) +
                      "' is computed at run time; a constant is required");
  if ((*v)->numElements() != 1)
    return node.error(what + " must hold one element");
  std::optional<double> d = (*v)->elementAsDouble(0);
  if (!d)
    return node.error(what + " is the symbolic size " +
                      str((*v)->ints.front()) + "; a constant is required");
  return *d;
}

//===----------------------------------------------------------------------===//
// Symbolic sizes
//===----------------------------------------------------------------------===//

std::string GraphImporter::str(const SymShape &s) const {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + str(s[i]);
  return r + "]";
}

mlir::Attribute GraphImporter::dimAttr(const SymExpr &e) {
  if (std::optional<int64_t> c = e.constant())
    return builder_.getI64IntegerAttr(*c);
  return builder_.getStringAttr(str(e));
}

mlir::ArrayAttr GraphImporter::shapeAttr(const SymShape &shape) {
  llvm::SmallVector<mlir::Attribute> dims;
  for (const SymExpr &d : shape)
    dims.push_back(dimAttr(d));
  return builder_.getArrayAttr(dims);
}

llvm::Error GraphImporter::checkShape(const GenericNode &node,
                                      const SymShape &shape) {
  int64_t elements = 1;
  bool overflow = false;
  for (const SymExpr &d : shape) {
    std::optional<int64_t> c = d.constant();
    if (c && *c < 0)
      return node.error("shape " + str(shape) + " has a negative size");
    if (c)
      overflow |= llvm::MulOverflow(elements, *c, elements);
  }
  if (overflow)
    return node.error("shape " + str(shape) + " has more than 2^63 elements");
  return llvm::Error::success();
}

llvm::Expected<SymShape> GraphImporter::broadcast(const GenericNode &node,
                                                  const SymShape &a,
                                                  const SymShape &b) {
  size_t rank = std::max(a.size(), b.size());
  SymShape out(rank, SymExpr(1));
  for (size_t i = 0; i < rank; ++i) {
    SymExpr da = i < a.size() ? a[a.size() - 1 - i] : SymExpr(1);
    SymExpr db = i < b.size() ? b[b.size() - 1 - i] : SymExpr(1);
    SymExpr &o = out[rank - 1 - i];
    if (da == db || db == SymExpr(1))
      o = da;
    else if (da == SymExpr(1))
      o = db;
    else
      return node.error("cannot broadcast shapes " + str(a) + " and " + str(b) +
                        ": sizes " + str(da) + " and " + str(db) + " differ");
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Emission
//===----------------------------------------------------------------------===//

mlir::Type GraphImporter::elementType(ElemKind kind) {
  switch (kind) {
  case ElemKind::Float:
    return builder_.getF32Type();
  case ElemKind::Int:
    return builder_.getI64Type();
  case ElemKind::Bool:
    return builder_.getI1Type();
  }
  return {};
}

ElemKind GraphImporter::kindOf(mlir::Type elementType) {
  if (elementType.isF32())
    return ElemKind::Float;
  if (elementType.isInteger(1))
    return ElemKind::Bool;
  return ElemKind::Int;
}

mlir::RankedTensorType GraphImporter::tensorType(const SymShape &shape,
                                                 ElemKind kind) {
  llvm::SmallVector<int64_t> dims;
  for (const SymExpr &d : shape)
    dims.push_back(d.constant().value_or(mlir::ShapedType::kDynamic));
  return mlir::RankedTensorType::get(dims, elementType(kind));
}

TensorValue GraphImporter::live(mlir::Value value, SymShape shape) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  assert(type.getRank() == static_cast<int64_t>(shape.size()) &&
         "importer and hg disagree on a rank");
  return TensorValue::makeLive(value, std::move(shape),
                               kindOf(type.getElementType()));
}

mlir::Value GraphImporter::constant(const DecodedTensor &t) {
  auto type = mlir::RankedTensorType::get(t.dims, elementType(t.kind));
  mlir::DenseElementsAttr attr;
  switch (t.kind) {
  case ElemKind::Float: {
    std::vector<float> f(t.floats.begin(), t.floats.end());
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(f));
    break;
  }
  case ElemKind::Int:
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int64_t>(t.ints));
    break;
  case ElemKind::Bool: {
    llvm::SmallVector<bool> b(t.ints.begin(), t.ints.end());
    attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<bool>(b));
    break;
  }
  }
  return emit<hg::ConstantOp>(attr);
}

mlir::Value GraphImporter::scalarConstant(double value, ElemKind kind) {
  DecodedTensor t;
  t.kind = kind;
  if (kind == ElemKind::Float)
    t.floats = {value};
  else
    t.ints = {static_cast<int64_t>(value)};
  return constant(t);
}

mlir::Value GraphImporter::symbolSize(unsigned symbol) {
  auto it = symbolSizes_.find(symbol);
  if (it != symbolSizes_.end())
    return it->second;
  // There is no op that reads a dimension's size, so count it: the sum of
  // `size` ones. Only exotic graphs use a symbolic size as tensor data.
  mlir::Value one = scalarConstant(1, ElemKind::Int);
  mlir::Value ones =
      emit<hg::BroadcastToOp>(one, shapeAttr({SymExpr::symbol(symbol)}));
  mlir::Value size = emit<hg::ReduceSumOp>(
      ones, builder_.getDenseI64ArrayAttr({0}), builder_.getBoolAttr(false));
  symbolSizes_[symbol] = size;
  return size;
}

mlir::Value GraphImporter::symbolicScalar(const SymExpr &e) {
  mlir::Value sum;
  for (const auto &[monomial, coeff] : e.terms()) {
    mlir::Value term;
    for (uint8_t s : monomial)
      term = term ? emit<hg::MulOp>(term, symbolSize(s)) : symbolSize(s);
    if (!term || coeff != 1) {
      mlir::Value c = scalarConstant(static_cast<double>(coeff), ElemKind::Int);
      term = term ? emit<hg::MulOp>(c, term) : c;
    }
    sum = sum ? emit<hg::AddOp>(sum, term) : term;
  }
  return sum ? sum : scalarConstant(0, ElemKind::Int);
}

mlir::Value GraphImporter::materialize(const TensorValue &value) {
  if (value.isLive())
    return value.live;
  DecodedTensor t;
  t.kind = value.kind;
  t.dims = *value.staticDims();
  if (value.kind == ElemKind::Float) {
    t.floats = value.floats;
    return constant(t);
  }
  if (value.isConstantInts()) {
    for (const SymExpr &e : value.ints)
      t.ints.push_back(*e.constant());
    return constant(t);
  }
  // Symbolic integers: compute each element, then assemble.
  llvm::SmallVector<mlir::Value> elems;
  for (const SymExpr &e : value.ints) {
    mlir::Value s = symbolicScalar(e);
    if (!t.dims.empty())
      s = emit<hg::ReshapeOp>(s, shapeAttr({SymExpr(1)}));
    elems.push_back(s);
  }
  if (t.dims.empty())
    return elems.front();
  mlir::Value flat =
      elems.size() == 1
          ? elems.front()
          : emit<hg::ConcatOp>(elems, builder_.getI64IntegerAttr(0));
  if (t.dims.size() == 1)
    return flat;
  return emit<hg::ReshapeOp>(flat, shapeAttr(value.shape));
}

/// Element conversion of a known value, or std::nullopt when it must happen
/// at run time (symbolic sizes as floats, non-finite floats to integers).
static std::optional<TensorValue> foldConvert(const TensorValue &value,
                                              ElemKind kind) {
  std::vector<int64_t> dims = *value.staticDims();
  int64_t n = value.numElements();
  if (kind == ElemKind::Float) {
    std::vector<double> f;
    for (int64_t i = 0; i < n; ++i) {
      std::optional<double> d = value.elementAsDouble(i);
      if (!d)
        return std::nullopt;
      f.push_back(roundToF32(*d));
    }
    return TensorValue::makeFloats(dims, std::move(f));
  }
  std::vector<SymExpr> ints;
  for (int64_t i = 0; i < n; ++i) {
    if (value.kind == ElemKind::Float) {
      double f = value.floats[i];
      if (!std::isfinite(f))
        return std::nullopt;
      ints.push_back(kind == ElemKind::Bool
                         ? SymExpr(f != 0)
                         : SymExpr(static_cast<int64_t>(std::trunc(f))));
      continue;
    }
    const SymExpr &e = value.ints[i];
    if (kind == ElemKind::Int)
      ints.push_back(e);
    else if (e == SymExpr(0))
      ints.push_back(SymExpr(0));
    else if (SymExpr::knownGE(e, 1) || SymExpr::knownGE(SymExpr(-1), e))
      ints.push_back(SymExpr(1)); // sizes are >= 1, which often decides it
    else
      return std::nullopt;
  }
  return TensorValue::makeInts(dims, std::move(ints), kind);
}

TensorValue GraphImporter::convert(const TensorValue &value, ElemKind kind) {
  if (value.kind == kind)
    return value;
  if (value.isKnown())
    if (std::optional<TensorValue> folded = foldConvert(value, kind))
      return *folded;
  mlir::Value in = materialize(value);
  return live(emit<hg::CastOp>(tensorType(value.shape, kind), in), value.shape);
}

TensorValue GraphImporter::reshape(const TensorValue &value,
                                   const SymShape &shape) {
  if (value.shape == shape)
    return value;
  if (value.isKnown()) {
    TensorValue r = value;
    r.shape = shape;
    if (r.staticDims())
      return r;
  }
  return live(emit<hg::ReshapeOp>(materialize(value), shapeAttr(shape)), shape);
}

TensorValue GraphImporter::broadcastTo(const TensorValue &value,
                                       const SymShape &shape) {
  if (value.shape == shape)
    return value;
  if (value.isKnown()) {
    TensorValue target;
    target.shape = shape;
    std::optional<std::vector<int64_t>> dims = target.staticDims();
    if (dims && target.numElements() <= kMaxFoldedElements) {
      // Broadcast dims (added or of size 1) read their one element again.
      std::vector<int64_t> inDims = *value.staticDims();
      std::vector<int64_t> inStrides = stridesOf(inDims);
      size_t off = dims->size() - inDims.size();
      std::vector<int64_t> strides(dims->size(), 0);
      for (size_t d = off; d < dims->size(); ++d)
        if (inDims[d - off] != 1)
          strides[d] = inStrides[d - off];
      return stridedCopy(value, shape, 0, strides);
    }
  }
  return live(emit<hg::BroadcastToOp>(materialize(value), shapeAttr(shape)),
              shape);
}

} // namespace hybridc::onnx
