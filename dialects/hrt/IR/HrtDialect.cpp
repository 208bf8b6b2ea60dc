// The hrt dialect: registration, the buffer type's and the shard
// attribute's syntax and checks, and the symbolic-size helpers.
#include "dialects/hrt/IR/HrtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using hybrid::SymExpr;

#include "dialects/hrt/IR/HrtDialect.cpp.inc"
#include "dialects/hrt/IR/HrtEnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/hrt/IR/HrtTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/hrt/IR/HrtAttrs.cpp.inc"

namespace hybridc::hrt {

void HrtDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/hrt/IR/HrtTypes.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/hrt/IR/HrtAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/hrt/IR/HrtOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// !hrt.buffer<f32, [batch, "2*seq", 64]>
//===----------------------------------------------------------------------===//

namespace {

bool isIdentifier(StringRef s) {
  if (s.empty() || !(llvm::isAlpha(s[0]) || s[0] == '_'))
    return false;
  return llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

bool isSupportedElementType(Type t) {
  return t.isF32() || t.isBF16() || t.isF16() || t.isSignlessInteger(64) ||
         t.isSignlessInteger(32) || t.isSignlessInteger(1);
}

} // namespace

Type BufferType::parse(AsmParser &parser) {
  Type elementType;
  SmallVector<Attribute> dims;
  if (parser.parseLess() || parser.parseType(elementType) ||
      parser.parseComma())
    return {};
  auto parseDim = [&]() -> ParseResult {
    int64_t size;
    OptionalParseResult integer = parser.parseOptionalInteger(size);
    if (integer.has_value()) {
      if (failed(*integer))
        return failure();
      dims.push_back(parser.getBuilder().getI64IntegerAttr(size));
      return success();
    }
    std::string text;
    if (succeeded(parser.parseOptionalString(&text))) {
      dims.push_back(parser.getBuilder().getStringAttr(text));
      return success();
    }
    StringRef name;
    if (failed(parser.parseKeyword(&name)))
      return failure();
    dims.push_back(parser.getBuilder().getStringAttr(name));
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<BufferType>(parser.getContext(), elementType,
                                       parser.getBuilder().getArrayAttr(dims));
}

void BufferType::print(AsmPrinter &printer) const {
  printer << "<" << getElementType() << ", [";
  llvm::interleaveComma(getShape(), printer, [&](Attribute dim) {
    if (auto i = llvm::dyn_cast<IntegerAttr>(dim))
      printer << i.getInt();
    else if (StringRef s = llvm::cast<StringAttr>(dim).getValue();
             isIdentifier(s))
      printer << s;
    else
      printer << "\"" << s << "\"";
  });
  printer << "]>";
}

LogicalResult BufferType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 Type elementType, ArrayAttr shape) {
  if (!isSupportedElementType(elementType))
    return emitError() << "buffer element type must be f32, bf16, f16, i64, "
                          "i32 or i1, got "
                       << elementType;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (auto size = llvm::dyn_cast<IntegerAttr>(dim)) {
      if (size.getInt() < 0)
        return emitError() << "buffer dim #" << i << " is negative ("
                           << size.getInt() << ")";
      continue;
    }
    auto text = llvm::dyn_cast<StringAttr>(dim);
    if (!text)
      return emitError() << "buffer dim #" << i
                         << " must be an integer or a symbolic size";
    std::vector<std::string> names;
    std::string why;
    if (!SymExpr::parseAddingNames(text.str(), names, &why))
      return emitError() << "buffer dim #" << i << ": " << why;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// #hrt.shard<4 x [768, 768]>
//===----------------------------------------------------------------------===//

Attribute ShardAttr::parse(AsmParser &parser, Type) {
  int64_t worldSize;
  SmallVector<int64_t> shape;
  auto parseDim = [&]() -> ParseResult {
    return parser.parseInteger(shape.emplace_back());
  };
  if (parser.parseLess() || parser.parseInteger(worldSize) ||
      parser.parseKeyword("x") ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<ShardAttr>(parser.getContext(), worldSize, shape);
}

void ShardAttr::print(AsmPrinter &printer) const {
  printer << "<" << getWorldSize() << " x [";
  llvm::interleaveComma(getShape(), printer);
  printer << "]>";
}

LogicalResult ShardAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                int64_t worldSize, ArrayRef<int64_t> shape) {
  if (worldSize < 1)
    return emitError() << "shard world size must be >= 1, got " << worldSize;
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return emitError() << "shard shape has a negative dim (" << d << ")";
    if (llvm::MulOverflow(numel, d, numel))
      return emitError() << "shard shape has more than 2^63 elements";
  }
  return success();
}

int64_t ShardAttr::getNumElements() const {
  int64_t numel = 1;
  for (int64_t d : getShape())
    numel *= d;
  return numel;
}

int64_t ShardAttr::getShardElements() const {
  return llvm::divideCeil(getNumElements(), getWorldSize());
}

//===----------------------------------------------------------------------===//
// Symbolic sizes
//===----------------------------------------------------------------------===//

Attribute getSizeAttr(MLIRContext *context, const SymExpr &size,
                      const std::vector<std::string> &symbols) {
  Builder b(context);
  if (std::optional<int64_t> c = size.constant())
    return b.getI64IntegerAttr(*c);
  return b.getStringAttr(size.str(symbols));
}

std::optional<SymExpr> parseSizeAttr(Attribute attr,
                                     const std::vector<std::string> &symbols,
                                     std::string *why) {
  if (auto i = dyn_cast_or_null<IntegerAttr>(attr))
    return SymExpr(i.getInt());
  if (auto s = dyn_cast_or_null<StringAttr>(attr))
    return SymExpr::parse(s.str(), symbols, why);
  if (why)
    *why = "a size must be an integer or a symbolic size string";
  return std::nullopt;
}

BufferType getBufferType(MLIRContext *context, Type elementType,
                         const hybrid::SymShape &shape,
                         const std::vector<std::string> &symbols) {
  SmallVector<Attribute> dims;
  for (const SymExpr &d : shape)
    dims.push_back(getSizeAttr(context, d, symbols));
  return BufferType::get(context, elementType, ArrayAttr::get(context, dims));
}

std::optional<hybrid::SymShape>
getSymShape(BufferType type, const std::vector<std::string> &symbols,
            std::string *why) {
  hybrid::SymShape shape;
  for (Attribute dim : type.getShape()) {
    std::optional<SymExpr> e = parseSizeAttr(dim, symbols, why);
    if (!e)
      return std::nullopt;
    shape.push_back(std::move(*e));
  }
  return shape;
}

unsigned elementBytes(Type elementType) {
  if (elementType.isF32() || elementType.isSignlessInteger(32))
    return 4;
  if (elementType.isBF16() || elementType.isF16())
    return 2;
  if (elementType.isSignlessInteger(64))
    return 8;
  if (elementType.isSignlessInteger(1))
    return 1;
  return 0;
}

Value getRootBuffer(Value buffer) {
  while (auto view = buffer.getDefiningOp<ViewOp>())
    buffer = view.getSource();
  return buffer;
}

} // namespace hybridc::hrt
