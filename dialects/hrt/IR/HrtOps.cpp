// hrt ops: builders and verifiers. The executable's verifier holds the
// rules that make a command list safe to run: symbols known, ports and
// names unique, and no command writing memory the executable may only read.
#include "dialects/hrt/IR/HrtOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

#include <tuple>

using namespace mlir;
using hybrid::SymExpr;

#include "dialects/hrt/IR/HrtInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/hrt/IR/HrtOps.cpp.inc"

namespace hybridc::hrt {

namespace {

Type elementTypeOf(Value v) {
  return cast<BufferType>(v.getType()).getElementType();
}

bool isFloat(Type t) { return isa<FloatType>(t); }
bool isInteger(Type t) {
  return t.isSignlessInteger(64) || t.isSignlessInteger(32);
}
bool isBool(Type t) { return t.isSignlessInteger(1); }

/// The symbols of the executable `op` is in (empty outside one).
std::vector<std::string> symbolsAround(Operation *op) {
  if (auto exe = op->getParentOfType<ExecutableOp>())
    return exe.getSymbolNames();
  return {};
}

LogicalResult checkSameElementType(Operation *op, Value a, StringRef aName,
                                   Value b, StringRef bName) {
  if (elementTypeOf(a) != elementTypeOf(b))
    return op->emitOpError()
           << aName << " and " << bName << " element types differ ("
           << elementTypeOf(a) << " vs " << elementTypeOf(b) << ")";
  return success();
}

LogicalResult checkStream(Operation *op, int32_t stream) {
  if (stream < 0)
    return op->emitOpError() << "stream must be >= 0, got " << stream;
  return success();
}

LogicalResult checkOffset(Operation *op, std::optional<Attribute> offset) {
  if (!offset)
    return success();
  std::string why;
  std::optional<SymExpr> e = parseSizeAttr(*offset, symbolsAround(op), &why);
  if (!e)
    return op->emitOpError() << "offset: " << why;
  if (std::optional<int64_t> c = e->constant(); c && *c < 0)
    return op->emitOpError() << "offset " << *c << " is negative";
  return success();
}

/// A float command whose listed operands and result share one float type.
LogicalResult checkFloatOperands(Operation *op, Value out,
                                 ArrayRef<std::pair<Value, StringRef>> ins) {
  if (!isFloat(elementTypeOf(out)))
    return op->emitOpError()
           << "result must have float elements, got " << elementTypeOf(out);
  for (auto [v, name] : ins)
    if (v && failed(checkSameElementType(op, v, name, out, "result")))
      return failure();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// hrt.executable
//===----------------------------------------------------------------------===//

void ExecutableOp::build(OpBuilder &builder, OperationState &state,
                         StringRef name, ArrayRef<StringRef> symbols,
                         Access paramAccess) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getSymbolsAttrName(state.name),
                     builder.getStrArrayAttr(symbols));
  state.addAttribute(getParamAccessAttrName(state.name),
                     AccessAttr::get(builder.getContext(), paramAccess));
  state.addRegion()->emplaceBlock();
}

std::vector<std::string> ExecutableOp::getSymbolNames() {
  std::vector<std::string> names;
  for (Attribute a : getSymbols())
    names.push_back(cast<StringAttr>(a).str());
  return names;
}

namespace {

/// What kind of memory a root buffer is, for the access rules.
struct RootInfo {
  const char *kind;
  std::string name;
  bool writable;
};

RootInfo describeRoot(Value root, Access paramAccess) {
  Operation *def = root.getDefiningOp();
  if (auto p = dyn_cast_or_null<ParamOp>(def))
    return {"parameter", p.getName().str(), paramAccess == Access::ReadWrite};
  if (auto s = dyn_cast_or_null<StateOp>(def))
    return {"state", s.getName().str(), s.getAccess() == Access::ReadWrite};
  if (auto i = dyn_cast_or_null<InputOp>(def))
    return {"input", i.getName().str(), false};
  if (isa_and_nonnull<ConstantOp>(def))
    return {"constant", "", false};
  if (auto o = dyn_cast_or_null<OutputOp>(def))
    return {"output", o.getName().str(), true};
  return {"workspace buffer", "", true};
}

} // namespace

LogicalResult ExecutableOp::verifyRegions() {
  std::vector<std::string> symbols = getSymbolNames();
  llvm::StringSet<> seen;
  for (const std::string &s : symbols) {
    if (s.empty() || !(llvm::isAlpha(s[0]) || s[0] == '_') ||
        !llvm::all_of(s, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return emitOpError() << "symbol '" << s << "' is not an identifier";
    if (!seen.insert(s).second)
      return emitOpError() << "symbol '" << s << "' is listed twice";
  }
  if (symbols.size() > SymExpr::kMaxSymbols)
    return emitOpError() << "has more than " << SymExpr::kMaxSymbols
                         << " symbols";
  if (std::optional<ArrayRef<int64_t>> max = getSymbolMax()) {
    if (max->size() != symbols.size())
      return emitOpError() << "symbol_max has " << max->size()
                           << " entries for " << symbols.size() << " symbols";
    for (int64_t m : *max)
      if (m < 0)
        return emitOpError() << "symbol_max entries must be >= 0, got " << m;
  }
  bool planned = getWorkspace().has_value();
  if (planned != getAlignment().has_value())
    return emitOpError("a planned executable has both `workspace` and "
                       "`alignment`");
  if (std::optional<uint64_t> a = getAlignment();
      a && (*a == 0 || (*a & (*a - 1)) || *a > (1u << 20)))
    return emitOpError() << "alignment " << *a
                         << " is not a power of two up to 2^20";
  if (planned) {
    std::string why;
    if (!parseSizeAttr(*getWorkspace(), symbols, &why))
      return emitOpError() << "workspace: " << why;
  }

  llvm::StringSet<> inputs, outputs, params, states;
  for (Operation &op : getBlock()) {
    for (Value r : op.getResults()) {
      auto type = dyn_cast<BufferType>(r.getType());
      if (!type)
        continue;
      std::string why;
      if (!getSymShape(type, symbols, &why))
        return op.emitOpError() << "result type " << type << ": " << why;
    }
    auto unique = [&](llvm::StringSet<> &set, StringRef name,
                      const char *what) -> LogicalResult {
      if (name.empty())
        return op.emitOpError() << what << " name must not be empty";
      if (!set.insert(name).second)
        return op.emitOpError() << what << " '" << name
                                << "' appears twice in @" << getSymName();
      return success();
    };
    LogicalResult ok =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](InputOp o) -> LogicalResult {
              if (planned && !o.getOffset())
                return o.emitOpError("has no offset in a planned executable");
              return unique(inputs, o.getName(), "input");
            })
            .Case([&](OutputOp o) -> LogicalResult {
              if (planned && !o.getOffset())
                return o.emitOpError("has no offset in a planned executable");
              return unique(outputs, o.getName(), "output");
            })
            .Case([&](AllocOp o) -> LogicalResult {
              if (planned && !o.getOffset())
                return o.emitOpError("has no offset in a planned executable");
              return success();
            })
            .Case([&](ParamOp o) {
              return unique(params, o.getName(), "parameter");
            })
            .Case(
                [&](StateOp o) { return unique(states, o.getName(), "state"); })
            .Case<ConstantOp, ViewOp, CommunicatorOp>(
                [](Operation *) { return success(); })
            .Case([&](CommandOp c) -> LogicalResult {
              for (Value out : c.getCommandResults()) {
                RootInfo root =
                    describeRoot(getRootBuffer(out), getParamAccess());
                if (!root.writable)
                  return op.emitOpError()
                         << "writes the " << root.kind
                         << (root.name.empty() ? "" : " '" + root.name + "'")
                         << ", which @" << getSymName() << " may only read";
              }
              return success();
            })
            .Default([&](Operation *o) {
              return o->emitOpError()
                     << "is not an hrt buffer source or command";
            });
    if (failed(ok))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Buffer sources
//===----------------------------------------------------------------------===//

/// A sharded buffer is one rank's piece: 1-D, of the shard's piece size.
static LogicalResult checkShard(Operation *op, StringRef what, StringRef name,
                                std::optional<ShardAttr> shard,
                                BufferType type) {
  if (!shard)
    return success();
  ArrayRef<Attribute> shape = type.getShape().getValue();
  auto size = shape.size() == 1 ? dyn_cast<IntegerAttr>(shape[0]) : nullptr;
  if (!size || size.getInt() != shard->getShardElements())
    return op->emitOpError() << what << " '" << name << "' is sharded as "
                             << *shard << ": its buffer must be ["
                             << shard->getShardElements() << "], got " << type;
  return success();
}

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  for (Attribute d : getResult().getType().getShape())
    if (!isa<IntegerAttr>(d))
      return emitOpError() << "parameter '" << getName()
                           << "' must have a static shape";
  return checkShard(*this, "parameter", getName(), getShard(),
                    getResult().getType());
}

LogicalResult StateOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return checkShard(*this, "state", getName(), getShard(),
                    getResult().getType());
}

LogicalResult ConstantOp::verify() {
  auto type = cast<ShapedType>(getValue().getType());
  BufferType buffer = getResult().getType();
  if (type.getElementType() != buffer.getElementType())
    return emitOpError() << "value element type " << type.getElementType()
                         << " differs from the buffer's "
                         << buffer.getElementType();
  if (static_cast<int64_t>(buffer.getShape().size()) != type.getRank())
    return emitOpError() << "value rank " << type.getRank()
                         << " differs from the buffer's "
                         << buffer.getShape().size();
  for (auto [d, attr] : llvm::enumerate(buffer.getShape())) {
    auto size = dyn_cast<IntegerAttr>(attr);
    if (!size || size.getInt() != type.getDimSize(d))
      return emitOpError() << "value shape " << type
                           << " differs from the buffer's";
  }
  return success();
}

LogicalResult InputOp::verify() { return checkOffset(*this, getOffset()); }
LogicalResult OutputOp::verify() { return checkOffset(*this, getOffset()); }
LogicalResult AllocOp::verify() { return checkOffset(*this, getOffset()); }

LogicalResult ViewOp::verify() {
  BufferType from = getSource().getType(), to = getResult().getType();
  if (from.getElementType() != to.getElementType())
    return emitOpError() << "changes the element type (" << from << " to " << to
                         << ")";
  std::vector<std::string> symbols = symbolsAround(*this);
  std::optional<hybrid::SymShape> a = getSymShape(from, symbols),
                                  b = getSymShape(to, symbols);
  if (!a || !b)
    return success(); // the executable reports malformed shapes
  SymExpr na(1), nb(1);
  for (const SymExpr &d : *a)
    na = na * d;
  for (const SymExpr &d : *b)
    nb = nb * d;
  if (na != nb)
    return emitOpError() << "views " << na.str(symbols) << " elements as "
                         << nb.str(symbols);
  return success();
}

//===----------------------------------------------------------------------===//
// Commands
//===----------------------------------------------------------------------===//

LogicalResult verifyCommand(Operation *op, int32_t stream) {
  return checkStream(op, stream);
}

LogicalResult BinaryOp::verify() {
  if (failed(checkStream(*this, getStream())) ||
      failed(checkSameElementType(*this, getLhs(), "lhs", getRhs(), "rhs")))
    return failure();
  Type in = elementTypeOf(getLhs()), out = elementTypeOf(getOut());
  switch (getKind()) {
  case BinaryKind::Equal:
  case BinaryKind::Less:
  case BinaryKind::LessEqual:
  case BinaryKind::Greater:
  case BinaryKind::GreaterEqual:
    if (!isBool(out))
      return emitOpError() << "comparison result must be i1, got " << out;
    return success();
  case BinaryKind::And:
  case BinaryKind::Or:
  case BinaryKind::Xor:
    if (!isBool(in) || !isBool(out))
      return emitOpError("logical operands and result must be i1");
    return success();
  default:
    if (in != out)
      return emitOpError() << "result element type " << out
                           << " differs from the operands' " << in;
    return success();
  }
}

LogicalResult UnaryOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  Type in = elementTypeOf(getInput()), out = elementTypeOf(getOut());
  switch (getKind()) {
  case UnaryKind::IsNan:
  case UnaryKind::IsInf:
    if (!isFloat(in) || !isBool(out))
      return emitOpError("is_nan / is_inf take floats and give i1");
    return success();
  case UnaryKind::Not:
    if (!isBool(in) || !isBool(out))
      return emitOpError("not takes and gives i1");
    return success();
  default:
    if (in != out)
      return emitOpError() << "result element type " << out
                           << " differs from the input's " << in;
    return success();
  }
}

#define HRT_SAME_TYPE_VERIFIER(OP)                                             \
  LogicalResult OP::verify() {                                                 \
    if (failed(checkStream(*this, getStream())))                               \
      return failure();                                                        \
    return checkSameElementType(*this, getInput(), "input", getOut(),          \
                                "result");                                     \
  }
HRT_SAME_TYPE_VERIFIER(ClipOp)
HRT_SAME_TYPE_VERIFIER(CopyOp)
HRT_SAME_TYPE_VERIFIER(BroadcastToOp)
HRT_SAME_TYPE_VERIFIER(SliceOp)
HRT_SAME_TYPE_VERIFIER(CumSumOp)
HRT_SAME_TYPE_VERIFIER(TriluOp)
HRT_SAME_TYPE_VERIFIER(SoftmaxOp)
HRT_SAME_TYPE_VERIFIER(ReduceOp)
HRT_SAME_TYPE_VERIFIER(CollectiveOp)
#undef HRT_SAME_TYPE_VERIFIER

LogicalResult CastOp::verify() { return checkStream(*this, getStream()); }
LogicalResult FillOp::verify() { return checkStream(*this, getStream()); }
LogicalResult IotaOp::verify() {
  if (getOut().getType().getRank() != 1)
    return emitOpError("result must be 1-D");
  return checkStream(*this, getStream());
}

LogicalResult TransposeOp::verify() {
  if (failed(checkStream(*this, getStream())) ||
      failed(
          checkSameElementType(*this, getInput(), "input", getOut(), "result")))
    return failure();
  if (static_cast<int64_t>(getPerm().size()) != getInput().getType().getRank())
    return emitOpError() << "perm has " << getPerm().size()
                         << " entries for rank "
                         << getInput().getType().getRank();
  return success();
}

LogicalResult SelectOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (!isBool(elementTypeOf(getCond())))
    return emitOpError("cond must be i1");
  if (failed(
          checkSameElementType(*this, getLhs(), "lhs", getOut(), "result")) ||
      failed(checkSameElementType(*this, getRhs(), "rhs", getOut(), "result")))
    return failure();
  return success();
}

LogicalResult ConcatOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  for (Value v : getInputs())
    if (failed(checkSameElementType(*this, v, "input", getOut(), "result")))
      return failure();
  return success();
}

static LogicalResult verifyIndexed(Operation *op, Value data, Value indices,
                                   Value out, int32_t stream) {
  if (failed(checkStream(op, stream)))
    return failure();
  if (!isInteger(elementTypeOf(indices)))
    return op->emitOpError()
           << "indices must be i32 or i64, got " << elementTypeOf(indices);
  return checkSameElementType(op, data, "data", out, "result");
}

LogicalResult GatherOp::verify() {
  return verifyIndexed(*this, getData(), getIndices(), getOut(), getStream());
}
LogicalResult GatherNdOp::verify() {
  return verifyIndexed(*this, getData(), getIndices(), getOut(), getStream());
}
LogicalResult EmbeddingOp::verify() {
  if (failed(verifyIndexed(*this, getTable(), getIds(), getOut(), getStream())))
    return failure();
  return checkFloatOperands(*this, getOut(), {{getTable(), "table"}});
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (!isInteger(elementTypeOf(getIds())))
    return emitOpError() << "ids must be i32 or i64, got "
                         << elementTypeOf(getIds());
  return checkFloatOperands(*this, getOut(), {{getGradOut(), "grad_out"}});
}

/// The checks both label_log_probs commands share: float logits and
/// integer labels.
static LogicalResult verifyLabelOperands(Operation *op, Value logits,
                                         Value labels, int32_t stream) {
  if (failed(checkStream(op, stream)))
    return failure();
  if (!isFloat(elementTypeOf(logits)))
    return op->emitOpError()
           << "logits must have float elements, got " << elementTypeOf(logits);
  if (!isInteger(elementTypeOf(labels)))
    return op->emitOpError()
           << "labels must be i32 or i64, got " << elementTypeOf(labels);
  return success();
}

LogicalResult LabelLogProbsOp::verify() {
  if (failed(verifyLabelOperands(*this, getLogits(), getLabels(), getStream())))
    return failure();
  if (!elementTypeOf(getOut()).isF32())
    return emitOpError() << "result must be f32, got "
                         << elementTypeOf(getOut());
  return success();
}

LogicalResult LabelLogProbsGradOp::verify() {
  if (failed(verifyLabelOperands(*this, getLogits(), getLabels(), getStream())))
    return failure();
  if (!elementTypeOf(getGrad()).isF32())
    return emitOpError() << "grad must be f32, got "
                         << elementTypeOf(getGrad());
  return checkSameElementType(*this, getLogits(), "logits", getOut(), "result");
}

LogicalResult MatMulOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  return checkFloatOperands(*this, getOut(),
                            {{getLhs(), "lhs"}, {getRhs(), "rhs"}});
}

LogicalResult LinearOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (Value residual = getResidual();
      residual && residual.getType() != getOut().getType())
    return emitOpError() << "residual " << residual.getType()
                         << " must be the result's " << getOut().getType();
  if (getNorm() == NormKind::None && (getNormWeight() || getNormBias()))
    return emitOpError() << "norm_weight and norm_bias need a norm";
  if (getNorm() == NormKind::RmsNorm && getNormBias())
    return emitOpError() << "rms_norm takes no norm_bias";
  return checkFloatOperands(*this, getOut(),
                            {{getInput(), "input"},
                             {getWeight(), "weight"},
                             {getBias(), "bias"},
                             {getResidual(), "residual"},
                             {getNormWeight(), "norm_weight"},
                             {getNormBias(), "norm_bias"}});
}

SmallVector<Value> LinearGroupOp::getCommandInputs() {
  SmallVector<Value> inputs{getInput()};
  for (size_t i = 0; i < getNumMembers(); ++i) {
    inputs.push_back(getWeights()[i]);
    inputs.push_back(getBiases().empty() ? Value() : getBiases()[i]);
  }
  return inputs;
}

LogicalResult LinearGroupOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  const size_t members = getNumMembers();
  if (members == 0)
    return emitOpError("needs at least one member");
  if (getOuts().size() != members)
    return emitOpError() << "has " << getOuts().size() << " results for "
                         << members << " weights";
  if (!getBiases().empty() && getBiases().size() != members)
    return emitOpError() << "has " << getBiases().size() << " biases for "
                         << members << " weights (one each, or none)";
  if (getFeatureBegins().size() != members ||
      getFeatureEnds().size() != members)
    return emitOpError() << "needs one feature range per member, got "
                         << getFeatureBegins().size() << " begins and "
                         << getFeatureEnds().size() << " ends for " << members;
  ArrayRef<Attribute> in = getInput().getType().getShape().getValue();
  if (in.empty())
    return emitOpError("input must have rank >= 1");
  llvm::SmallPtrSet<Value, 4> outs;
  for (size_t i = 0; i < members; ++i) {
    Value out = getOuts()[i], weight = getWeights()[i];
    Value bias = getBiases().empty() ? Value() : getBiases()[i];
    if (failed(checkFloatOperands(
            *this, out,
            {{getInput(), "input"}, {weight, "weight"}, {bias, "bias"}})))
      return failure();
    if (!outs.insert(getRootBuffer(out)).second)
      return emitOpError() << "member " << i
                           << " writes the buffer of an earlier member";
    ArrayRef<Attribute> w =
        cast<BufferType>(weight.getType()).getShape().getValue();
    auto dim = [](Attribute a) -> std::optional<int64_t> {
      if (auto i = dyn_cast<IntegerAttr>(a))
        return i.getInt();
      return std::nullopt;
    };
    if (w.size() != 2 || !dim(w[0]) || !dim(w[1]))
      return emitOpError() << "member " << i << "'s weight " << weight.getType()
                           << " must be static and 2-D";
    const bool transW = getTransposeWeight();
    const int64_t n = *dim(w[transW ? 0 : 1]);
    if (w[transW ? 1 : 0] != in.back()) {
      InFlightDiagnostic diag =
          emitOpError() << "member " << i << "'s weight " << weight.getType()
                        << (transW ? " ([N, K])" : " ([K, N])")
                        << " does not take the input's ";
      if (auto k = dim(in.back()))
        diag << *k;
      else
        diag << in.back();
      return diag << " features";
    }
    const int64_t begin = getFeatureBegins()[i], end = getFeatureEnds()[i];
    if (begin < 0 || begin >= end || end > n)
      return emitOpError() << "member " << i << "'s features [" << begin << ", "
                           << end << ") are not a range of its "
                           << "weight's " << n;
    if (bias) {
      ArrayRef<Attribute> b =
          cast<BufferType>(bias.getType()).getShape().getValue();
      if (b.size() != 1 || dim(b[0]) != n)
        return emitOpError() << "member " << i << "'s bias " << bias.getType()
                             << " must be [" << n << "], as its weight";
    }
    ArrayRef<Attribute> o =
        cast<BufferType>(out.getType()).getShape().getValue();
    if (o.size() != in.size() || o.drop_back() != in.drop_back() ||
        dim(o.back()) != end - begin)
      return emitOpError() << "member " << i << "'s result " << out.getType()
                           << " must be the input's shape with " << end - begin
                           << " features";
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  return checkFloatOperands(
      *this, getOut(),
      {{getInput(), "input"}, {getWeight(), "weight"}, {getBias(), "bias"}});
}

LogicalResult LayerNormGradOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  return checkFloatOperands(*this, getGradInput(),
                            {{getGradWeight(), "grad_weight"},
                             {getGradBias(), "grad_bias"},
                             {getInput(), "input"},
                             {getWeight(), "weight"},
                             {getGradOut(), "grad_out"}});
}

LogicalResult ActivationGradOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (getActivation() == Activation::None)
    return emitOpError("needs an activation, got none");
  if (failed(checkFloatOperands(
          *this, getGradIn(),
          {{getInput(), "input"}, {getGradOut(), "grad_out"}})))
    return failure();
  // Compared as polynomials, so that "2*seq" and "seq*2" agree.
  std::vector<std::string> symbols = symbolsAround(*this);
  std::optional<hybrid::SymShape> shape =
      getSymShape(getGradIn().getType(), symbols);
  for (auto [v, name] :
       {std::pair(getInput(), "input"), std::pair(getGradOut(), "grad_out")}) {
    std::optional<hybrid::SymShape> other =
        getSymShape(cast<BufferType>(v.getType()), symbols);
    if (shape && other && *shape != *other)
      return emitOpError() << name << " " << v.getType()
                           << " must have the result's shape, "
                           << getGradIn().getType();
  }
  return success();
}

LogicalResult RmsNormOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  return checkFloatOperands(*this, getOut(),
                            {{getInput(), "input"}, {getWeight(), "weight"}});
}

LogicalResult RotaryOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  return checkFloatOperands(
      *this, getOut(),
      {{getInput(), "input"}, {getCos(), "cos"}, {getSin(), "sin"}});
}

/// The appended keys and values: all three operands or none; each update
/// is its cache's dtype and shape but for axis 2.
static LogicalResult verifyAppend(AttentionOp op) {
  Value key = op.getAppendKey(), value = op.getAppendValue(),
        at = op.getAppendAt();
  if (!key && !value && !at)
    return success();
  if (!key || !value || !at)
    return op.emitOpError(
        "append_key, append_value and append_at come together");
  if (!elementTypeOf(at).isSignlessInteger(64))
    return op.emitOpError("append_at must be i64");
  for (auto [update, cache, what] :
       {std::tuple(key, op.getKey(), "append_key"),
        std::tuple(value, op.getValue(), "append_value")}) {
    auto u = cast<BufferType>(update.getType());
    auto c = cast<BufferType>(cache.getType());
    if (u.getElementType() != c.getElementType())
      return op.emitOpError() << what << " must have its cache's element type";
    if (u.getRank() != 4 || c.getRank() != 4)
      return op.emitOpError() << what << " and its cache must be rank 4";
    for (int64_t d : {0, 1, 3})
      if (u.getShape()[d] != c.getShape()[d])
        return op.emitOpError()
               << what << " must match its cache in every dim but 2";
  }
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (Value length = getKeyLength();
      length && !elementTypeOf(length).isSignlessInteger(64))
    return emitOpError("key_length must be i64");
  if (Value keyMask = getKeyMask();
      keyMask && !isInteger(elementTypeOf(keyMask)))
    return emitOpError("key_mask must be i32 or i64");
  if (failed(verifyAppend(*this)))
    return failure();
  return checkFloatOperands(*this, getOut(),
                            {{getQuery(), "query"},
                             {getKey(), "key"},
                             {getValue(), "value"},
                             {getMask(), "mask"},
                             {getAlibiSlopes(), "alibi_slopes"}});
}

LogicalResult AttentionGradOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (Value keyMask = getKeyMask();
      keyMask && !isInteger(elementTypeOf(keyMask)))
    return emitOpError("key_mask must be i32 or i64");
  if (static_cast<int64_t>(getSlidingWindow()) < 0)
    return emitOpError("sliding_window must be >= 0");
  return checkFloatOperands(*this, getGradQuery(),
                            {{getGradKey(), "grad_key"},
                             {getGradValue(), "grad_value"},
                             {getQuery(), "query"},
                             {getKey(), "key"},
                             {getValue(), "value"},
                             {getGradOut(), "grad_out"},
                             {getMask(), "mask"},
                             {getAlibiSlopes(), "alibi_slopes"}});
}

LogicalResult CacheWriteOp::verify() {
  if (failed(checkStream(*this, getStream())) ||
      failed(checkSameElementType(*this, getUpdate(), "update", getOut(),
                                  "result")))
    return failure();
  if (!elementTypeOf(getOffset()).isSignlessInteger(64))
    return emitOpError("offset must be i64");
  int64_t axis = static_cast<int64_t>(getAxis());
  if (axis < 0 || axis >= getOut().getType().getRank())
    return emitOpError() << "axis " << axis << " is out of range";
  return success();
}

LogicalResult SampleOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  if (!isFloat(elementTypeOf(getLogits())) ||
      !elementTypeOf(getSampling()).isF32() ||
      !elementTypeOf(getRng()).isSignlessInteger(64) ||
      !elementTypeOf(getOut()).isSignlessInteger(64))
    return emitOpError("takes float logits, f32 sampling, i64 rng and gives "
                       "i64 tokens");
  return success();
}

LogicalResult SampleStepOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  auto i64 = [](Value v) { return elementTypeOf(v).isSignlessInteger(64); };
  auto i1 = [](Value v) { return elementTypeOf(v).isSignlessInteger(1); };
  if (!isFloat(elementTypeOf(getLogits())) || !i64(getConfig()) ||
      !elementTypeOf(getSampling()).isF32() || !i64(getInRng()) ||
      !i64(getInCount()) || !i1(getInFinished()) || !i64(getInLengths()))
    return emitOpError("takes float logits, i64 config, f32 sampling, i64 "
                       "rng and count, i1 finished and i64 lengths");
  if (!i64(getToken()) || !i64(getTokens()) ||
      !elementTypeOf(getLogprobs()).isF32() || !i64(getLengths()) ||
      !i1(getFinished()) || !i64(getCount()) || !i64(getRng()))
    return emitOpError("gives i64 token and tokens, f32 logprobs, i64 "
                       "lengths, i1 finished and i64 count and rng");
  return success();
}

LogicalResult AdamWUpdateOp::verify() {
  if (failed(checkStream(*this, getStream())))
    return failure();
  Type tensor = getParam().getType();
  if (!elementTypeOf(getParam()).isF32())
    return emitOpError() << "param must be f32, got " << tensor;
  const std::pair<Value, StringRef> tensors[] = {
      {getExpAvg(), "exp_avg"},
      {getExpAvgSq(), "exp_avg_sq"},
      {getInParam(), "in_param"},
      {getInExpAvg(), "in_exp_avg"},
      {getInExpAvgSq(), "in_exp_avg_sq"}};
  for (auto [v, name] : tensors)
    if (v.getType() != tensor)
      return emitOpError() << name << " " << v.getType()
                           << " must be the param's " << tensor;
  // The gradient and the working parameter: the param's shape, their own
  // float types (read as f32; rounded from it).
  auto type = cast<BufferType>(tensor);
  auto sameShape = [&](Value v) {
    return cast<BufferType>(v.getType()).getShape() == type.getShape();
  };
  Type grad = elementTypeOf(getGrad());
  if (!sameShape(getGrad()) || !(grad.isF32() || grad.isBF16() || grad.isF16()))
    return emitOpError() << "grad must be f32, bf16 or f16 of the param's "
                            "shape, got "
                         << getGrad().getType();
  if (Value working = getWorkingParam();
      working && (!sameShape(working) || !(elementTypeOf(working).isBF16() ||
                                           elementTypeOf(working).isF16())))
    return emitOpError() << "working_param must be bf16 or f16 of the "
                            "param's shape, got "
                         << working.getType();
  const std::pair<Value, StringRef> scalars[] = {
      {getBeta1(), "beta1"},
      {getBeta2(), "beta2"},
      {getEps(), "eps"},
      {getStepSize(), "step_size"},
      {getBiasCorrection2Sqrt(), "bias_correction2_sqrt"},
      {getDecayFactor(), "decay_factor"}};
  for (auto [v, name] : scalars) {
    auto type = cast<BufferType>(v.getType());
    auto size = type.getRank() == 1 ? dyn_cast<IntegerAttr>(type.getShape()[0])
                                    : IntegerAttr();
    if (!type.getElementType().isF32() || !size || size.getInt() != 1)
      return emitOpError() << name << " must be f32 [1], got " << type;
  }
  return success();
}

LogicalResult RecordEventOp::verify() {
  if (getEvent() < 0)
    return emitOpError() << "event must be >= 0, got " << getEvent();
  return checkStream(*this, getStream());
}

LogicalResult WaitEventOp::verify() {
  if (getEvent() < 0)
    return emitOpError() << "event must be >= 0, got " << getEvent();
  return checkStream(*this, getStream());
}

bool readsRoot(CommandOp cmd, Value root) {
  return llvm::any_of(cmd.getCommandInputs(), [&](Value in) {
    return in && getRootBuffer(in) == root;
  });
}

bool writesRoot(CommandOp cmd, Value root) {
  return llvm::any_of(cmd.getCommandResults(),
                      [&](Value out) { return getRootBuffer(out) == root; });
}

} // namespace hybridc::hrt
